#!/usr/bin/env bash
# Issue 16's slowed-rank benchmark: 3D heat (fp64, SSP-RK2) with one rank slowed by a factor
# (debug.slowdown: its compute repeated) for the whole run, on NP ranks (GPUs or CPU ranks).
# Two runs in one job: `off` (no rebalancer) and `on`. From `on`'s report.json:
#   ideal      the step time if the cells were shared in proportion to the ranks' speeds as
#              measured before the first migration: total cells / sum over ranks of
#              (cells / compute seconds per step), the ranks' speeds taken from `off`'s boxes
#   rounds     for each migration, the slowest rank's compute per step over the window after it,
#              and its ratio to the ideal (the goal: within 5% of it within 3 rounds)
#   migration  each migration's wall time against the ideal step time (the goal: < 3 steps)
# Usage, from the repository root after a build:
#   NP=2 CELLS=512 BACKEND=cuda bench/rebalance_slowed.sh [OUTDIR]   (default $OUT or /tmp/...)
# Environment: TESSERA (build/tessera), MPIEXEC (mpiexec), NP (2), CELLS (per rank along z:
# the grid is CELLS^2 x NP*CELLS, 512), BACKEND (host), FACTOR (2), STEPS (1000), EVERY (100),
# WINDOW (50), THRESHOLD (0.05), RESERVE (rebalance.reserve: 0.5), PYTHON (python3).
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-${OUT:-/tmp/rebalance_slowed}}
tess=${TESSERA:-$root/build/tessera}
mpi=${MPIEXEC:-mpiexec}
py=${PYTHON:-python3}
np=${NP:-2}
n=${CELLS:-512}
steps=${STEPS:-1000}
mkdir -p "$out"
case=$out/slowed.yaml
cat >"$case" <<YAML
model: heat
grid: {cells: [$n, $n, $((np * n))]}
params: {kappa: 1.0}
initial: {u: "sin(pi*x)*sin(pi*y)*sin(pi*z)"}
boundary: {default: {type: dirichlet, value: 0}}
time: {scheme: ssp_rk2, steps: $steps}
backend: ${BACKEND:-host}
rebalance: {every: ${EVERY:-100}, window: ${WINDOW:-50}, threshold: ${THRESHOLD:-0.05}, reserve: ${RESERVE:-0.5}}
debug: {slowdown: {rank: $((np - 1)), factor: ${FACTOR:-2}, steps: [1, $steps]}}
output: {progress: none, monitor_every: $steps}
YAML
fail=0
for run in off on; do
  extra=()
  [ $run = off ] && extra=(--set rebalance.enabled=false)
  rm -rf "${out:?}/$run"
  "$mpi" -n "$np" "$tess" run "$case" --out "$out/$run" "${extra[@]}" >"$out/$run.log" 2>&1 ||
    { echo "the $run run failed: $out/$run.log"; tail -5 "$out/$run.log"; fail=1; }
done
[ $fail = 0 ] || exit 1

"$py" - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
off, on = (json.load(open(f"{out}/{k}/report.json")) for k in ("off", "on"))
rb = on["rebalance"]
ev = rb["events"]
cells0 = [b["cells"] for b in off["boxes"]]
s = {"backend": on["backend"], "ranks": on["ranks"], "cells": on["cells"],
     "steps": on["steps"], "wall_off_s": off["wall_time"], "wall_on_s": on["wall_time"],
     "speedup": off["wall_time"] / on["wall_time"], "migrations": rb["migrations"],
     "field_reserve_bytes": rb.get("field_reserve_bytes")}
if not ev:
    print("no migration: the rebalancer saw no imbalance worth moving cells for")
    json.dump(s, open(f"{out}/summary.json", "w"), indent=1)
    sys.exit(1)
t0 = ev[0]["compute_per_step_before"]
rate = [c / t for c, t in zip(cells0, t0)]
ideal = sum(cells0) / sum(rate)
s["ideal_step_s"] = ideal
s["step_before_s"] = max(t0)
s["rounds"] = []
print(f"heat {'x'.join(map(str, on['cells']))} fp64 on {on['ranks']} {on['backend']} ranks, "
      f"rank {on['ranks'] - 1} slowed: ideal compute per step {1e3 * ideal:.3f} ms, "
      f"before rebalancing {1e3 * max(t0):.3f} ms ({max(t0) / ideal:.3f} x ideal)")
within = None
for k, e in enumerate(ev, 1):
    after = e["compute_per_step_after"]
    worst = max(after) if all(isinstance(a, (int, float)) for a in after) else None
    r = {"step": e["step"], "cells": [ (b[3]-b[0])*(b[4]-b[1])*(b[5]-b[2]) for b in e["boxes"]],
         "migration_s": e["migration_seconds"], "migration_steps": e["migration_seconds"] / ideal,
         "step_after_s": worst, "after_over_ideal": worst / ideal if worst else None,
         "migration_phases_s": e.get("migration_phases_seconds")}
    s["rounds"].append(r)
    if worst and within is None and worst <= 1.05 * ideal:
        within = k
    ratio = f"{worst / ideal:.3f} x ideal" if worst else "(no window after it)"
    ph = e.get("migration_phases_seconds") or {}
    parts = ", ".join(f"{k} {1e3 * v:.2f}" for k, v in ph.items())
    print(f"round {k} at step {e['step']}: cells {r['cells']}, migration "
          f"{1e3 * e['migration_seconds']:.2f} ms = {r['migration_steps']:.2f} ideal steps; "
          f"then {1e3 * worst if worst else float('nan'):.3f} ms per step, {ratio}")
    if parts: print(f"  the migration's parts (ms, slowest rank): {parts}")
s["rounds_to_within_5pct"] = within
if rb.get("field_reserve_bytes") is not None:
    print(f"fields' reserve (rebalance.reserve): {rb['field_reserve_bytes'] / 2**30:.2f} GiB on rank 0")
print(f"within 5% of the ideal after round {within}" if within else "not within 5% of the ideal")
print(f"wall: off {off['wall_time']:.3f} s, on {on['wall_time']:.3f} s "
      f"({s['speedup']:.3f}x; the whole run, migrations and measuring included)")
json.dump(s, open(f"{out}/summary.json", "w"), indent=1)
EOF

#!/usr/bin/env bash
# The moving-cost case of issue 16: cases/ignition2d.yaml's reaction front crossing the square,
# where a cell in the front costs 12-25 times a cold or burnt one and the costly band moves.
# Three runs of the same case on the same ranks, in one job:
#   off       rebalance.enabled: false (the time to solution without the rebalancer)
#   measured  the rebalancer measures and decides, but a threshold no imbalance reaches keeps
#             every cell where it is (the imbalance the front causes, decision by decision)
#   on        the rebalancer as the case sets it (it migrates)
# Reports the wall times, the speedup of `on` over `off`, the migrations and the imbalance at
# every decision of `measured` and `on`, and draws them (rebalance_front.png).
# Usage, from the repository root after a build:
#   NP=4 CELLS=512 bench/rebalance_front.sh [OUTDIR]      (default $OUT or /tmp/rebalance_front)
# The 4-rank CPU figures of bench/README.md (the front's cost dominating, as in
# tests/scripts/rebalance.sh):
#   NP=4 CELLS=128 EVERY=20 WINDOW=20 THRESHOLD=0.3 \
#     SET="params.delta=1e-4 params.nmax=100000 rebalance.clock=cpu" bench/rebalance_front.sh
# Environment: TESSERA (the binary; build/tessera), MPIEXEC (mpiexec), NP (ranks, 2), CASE
# (ignition2d or ignition3d, from cases/), CELLS (the grid's side, 512), END (time.end: the
# case's, the whole crossing), BACKEND (host or cuda: host),
# EVERY/WINDOW/THRESHOLD (the rebalance section: 20, 20, 0.1), SET (more key=value settings,
# space-separated, for every run), SKIP (decisions left out of the "after" figures: 3),
# PYTHON (python3, with matplotlib for the PNG).
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-${OUT:-/tmp/rebalance_front}}
tess=${TESSERA:-$root/build/tessera}
mpi=${MPIEXEC:-mpiexec}
py=${PYTHON:-python3}
np=${NP:-2}
n=${CELLS:-512}
mkdir -p "$out"
case=$out/front.yaml
sed -e '/snapshot_every/d' "$root/cases/${CASE:-ignition2d}.yaml" >"$case"
cells="[$n,$n]"
grep -q 'cells: \[[0-9]*, [0-9]*, [0-9]*\]' "$case" && cells="[$n,$n,$n]"
common=(--set "grid.cells=$cells" --set "backend=${BACKEND:-host}"
        ${END:+--set "time.end=$END"}
        --set output.progress=none --set "rebalance.every=${EVERY:-20}"
        --set "rebalance.window=${WINDOW:-20}")
for kv in ${SET:-}; do common+=(--set "$kv"); done
fail=0
for run in off measured on; do
  case $run in
    off) extra=(--set rebalance.enabled=false) ;;
    measured) extra=(--set rebalance.threshold=100) ;;
    on) extra=(--set "rebalance.threshold=${THRESHOLD:-0.1}") ;;
  esac
  rm -rf "${out:?}/$run"
  "$mpi" -n "$np" "$tess" run "$case" --out "$out/$run" "${common[@]}" "${extra[@]}" \
    >"$out/$run.log" 2>&1 || { echo "the $run run failed: $out/$run.log"; tail -5 "$out/$run.log"; fail=1; }
done
[ $fail = 0 ] || exit 1

"$py" - "$out" "$np" "${SKIP:-3}" <<'EOF'
import json, sys
out, np, skip = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rep = {k: json.load(open(f"{out}/{k}/report.json")) for k in ("off", "measured", "on")}
def hist(k):
    rb = rep[k].get("rebalance") or {}
    cols = rb.get("history_columns", [])
    return [dict(zip(cols, h)) for h in rb.get("history", [])]
def mean(v): return sum(v) / len(v) if v else float("nan")
cells = rep["on"]["cells"][:rep["on"]["dim"]]
shape = "x".join(map(str, cells))
summary = {"ranks": np, "cells": cells, "backend": rep["on"]["backend"],
           "steps": rep["on"]["steps"]}
threshold = float(rep["on"]["rebalance"]["threshold"])
for k in ("off", "measured", "on"):
    h = hist(k)
    imb = [x["imbalance"] for x in h if x["imbalance"] is not None]
    late = imb[skip:]
    summary[k] = {"wall_s": rep[k]["wall_time"], "decisions": len(h),
                  "migrations": (rep[k].get("rebalance") or {}).get("migrations", 0),
                  "mean_imbalance": mean(imb), "max_imbalance": max(imb) if imb else None,
                  "after": {"skipped": skip, "mean_imbalance": mean(late),
                            "max_imbalance": max(late) if late else None,
                            "above_threshold": sum(v > threshold for v in late)}}
summary["speedup_on_vs_off"] = rep["off"]["wall_time"] / rep["on"]["wall_time"]
summary["measuring_overhead"] = rep["measured"]["wall_time"] / rep["off"]["wall_time"] - 1
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print(f"ignition front, {shape}, {np} ranks, {summary['backend']}, {summary['steps']} steps")
print(f"{'run':10s} {'wall s':>9s} {'decisions':>10s} {'migrations':>11s} {'mean imb':>9s} "
      f"{'max imb':>8s} | after {skip} decisions: {'mean':>6s} {'max':>6s} {'> threshold':>11s}")
for k in ("off", "measured", "on"):
    s = summary[k]
    mi = "" if s["max_imbalance"] is None else f"{s['max_imbalance']:8.3f}"
    a = s["after"]
    am = "" if a["max_imbalance"] is None else f"{a['max_imbalance']:6.3f}"
    print(f"{k:10s} {s['wall_s']:9.3f} {s['decisions']:10d} {s['migrations']:11d} "
          f"{s['mean_imbalance']:9.3f} {mi} | {'':17s}{a['mean_imbalance']:6.3f} {am} "
          f"{a['above_threshold']:11d}")
print(f"speedup with rebalancing: {summary['speedup_on_vs_off']:.3f}x; measuring costs "
      f"{100 * summary['measuring_overhead']:.1f}%")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("no matplotlib: summary.json only")
    sys.exit(0)
fig, ax = plt.subplots(figsize=(8, 4))
for k, style in (("measured", "-"), ("on", "-o")):
    h = hist(k)
    ax.plot([x["step"] for x in h], [x["imbalance"] for x in h], style, ms=3,
            label={"measured": "not rebalanced (measured only)", "on": "rebalanced"}[k])
    if k == "on":
        m = [x for x in h if x["migrated"]]
        ax.plot([x["step"] for x in m], [x["imbalance"] for x in m], "rv", ms=5,
                label="a migration")
ax.axhline(float(rep["on"]["rebalance"]["threshold"]), color="gray", ls="--", label="threshold")
ax.set_xlabel("step")
ax.set_ylabel("imbalance (max/mean - 1 of compute time)")
ax.set_title(f"ignition front {shape} on {np} {summary['backend']} ranks: "
             f"{summary['speedup_on_vs_off']:.2f}x with rebalancing")
ax.legend()
fig.tight_layout()
fig.savefig(f"{out}/rebalance_front.png", dpi=120)
print(f"wrote {out}/rebalance_front.png")
EOF

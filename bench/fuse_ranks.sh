#!/usr/bin/env bash
# Issue 21's deep halos (time.fuse) measured: one heat case (forward Euler or SCHEME, fp64,
# periodic, so every face of every box is exchanged) run in one job
#   on 1 rank            (the strong-scaling baseline, fuse 1; and each of ONE_FUSES)
#   on NP ranks          with time.fuse = each of FUSES (1 = an exchange every step)
# Reports cells x steps / s, the strong-scaling efficiency against 1 rank (ideal: NP x its
# rate) and each fuse's speedup over fuse 1 on NP ranks, and checks that every run has the
# 1-rank run's final fields bit for bit.
# Usage, from the repository root after a build:
#   NP=2 BACKEND=cuda DIM=3 N=256 bench/fuse_ranks.sh [OUTDIR]   (default $OUT or /tmp/fuse_ranks)
# Environment: TESSERA (build/tessera), MPIEXEC (mpiexec), NP (2), BACKEND (host), DIM (3), N
# (cells a side: 256 in 3D, 20480 in 2D), STEPS (200), FUSES ("1 2 4 8"), SCHEME (euler;
# ssp_rk2, ssp_rk3, rk4: one-step passes, so FUSES="1 2"), ONE_FUSES (none: the fuses, besides
# 1, that the 1-rank run is also timed with, as the best one GPU does), GRAPHS (on: CUDA
# graphs on several GPUs too, as a latency-bound case wants), PYTHON (python3, with h5py).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-${OUT:-/tmp/fuse_ranks}}
tess=${TESSERA:-$root/build/tessera}
mpi=${MPIEXEC:-mpiexec}
py=${PYTHON:-python3}
np=${NP:-2}
dim=${DIM:-3}
n=${N:-$([ "$dim" = 3 ] && echo 256 || echo 20480)}
mkdir -p "$out"
case=$out/fuse.yaml
if [ "$dim" = 3 ]; then cells="[$n, $n, $n]" per="[true, true, true]" u="sin(2*pi*x)*sin(2*pi*y)*sin(2*pi*z)"
else cells="[$n, $n]" per="[true, true]" u="sin(2*pi*x)*sin(2*pi*y)"; fi
cat >"$case" <<YAML
model: heat
grid: {cells: $cells, periodic: $per}
params: {kappa: 1.0}
initial: {u: "$u"}
time: {scheme: ${SCHEME:-euler}, dt: auto, steps: ${STEPS:-200}}
backend: ${BACKEND:-host}
gpu: {graphs: ${GRAPHS:-on}}
output: {progress: none}
YAML
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
fail=0
go() { # NAME NP ARGS...
  local name=$1 k=$2
  shift 2
  if ! "$mpi" -n "$k" "$tess" run "$case" --out "$out/$name" "$@" >"$out/$name.log" 2>&1; then
    echo "$name: tessera failed (see $out/$name.log)"; tail -3 "$out/$name.log"; fail=1
  fi
}
go np1 1
for f in ${ONE_FUSES:-}; do go "np1_f$f" 1 --set time.fuse=$f; done
for f in ${FUSES:-1 2 4 8}; do go "np${np}_f$f" "$np" --set time.fuse=$f; done
ONE_FUSES="${ONE_FUSES:-}" "$py" - "$out" "$np" ${FUSES:-1 2 4 8} <<'PY'
import json, os, sys, h5py, numpy as np
out, npr, fuses = sys.argv[1], int(sys.argv[2]), [int(f) for f in sys.argv[3:]]
def rep(name):
    try: return json.load(open(f"{out}/{name}/report.json"))
    except OSError: return None
def same(name):
    a = h5py.File(f"{out}/np1/final.h5", "r")["fields"]
    b = h5py.File(f"{out}/{name}/final.h5", "r")["fields"]
    return all(a[k][...].tobytes() == b[k][...].tobytes() for k in a)
one = rep("np1")
base = None
rows = []
for f in fuses:
    r = rep(f"np{npr}_f{f}")
    if not r or not one: continue
    cps = r["cells_per_second"]
    base = base or (cps if f == 1 else None)
    rows.append({"fuse": f, "ghost_width": r.get("ghost_width"), "cells_steps_per_s": cps,
                 "efficiency": cps / (npr * one["cells_per_second"]),
                 "speedup_over_fuse1": cps / base if base else None,
                 "bitwise_equal_1rank": same(f"np{npr}_f{f}")})
print(f"1 rank: {one['cells_per_second'] / 1e9:.3f} Gcells/s ({one['backend']}, {one.get('scheme', '')})")
ones = []
for f in [int(f) for f in os.environ["ONE_FUSES"].split()]:
    r = rep(f"np1_f{f}")
    if not r: continue
    ones.append({"fuse": f, "cells_steps_per_s": r["cells_per_second"],
                 "speedup_over_fuse1": r["cells_per_second"] / one["cells_per_second"],
                 "bitwise_equal_1rank": same(f"np1_f{f}")})
    print(f"1 rank, fuse {f}: {r['cells_per_second'] / 1e9:.3f} Gcells/s "
          f"({ones[-1]['speedup_over_fuse1']:.3f}x), {'same' if ones[-1]['bitwise_equal_1rank'] else 'DIFFER'}")
print(f"{'fuse':>5} {'ghost':>6} {'Gcells/s':>9} {'efficiency':>11} {'vs fuse 1':>10}  bits")
for w in rows:
    sp = f"{w['speedup_over_fuse1']:.3f}x" if w["speedup_over_fuse1"] else "-"
    print(f"{w['fuse']:>5} {w['ghost_width']:>6} {w['cells_steps_per_s'] / 1e9:>9.3f} "
          f"{w['efficiency']:>10.1%} {sp:>10}  {'same' if w['bitwise_equal_1rank'] else 'DIFFER'}")
json.dump({"ranks": npr, "one_rank_cells_steps_per_s": one["cells_per_second"],
           "one_rank_fuses": ones, "runs": rows}, open(f"{out}/summary.json", "w"), indent=1)
sys.exit(0 if all(w["bitwise_equal_1rank"] for w in rows + ones) else 1)
PY
[ $? = 0 ] && [ $fail = 0 ]

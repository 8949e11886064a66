#!/usr/bin/env bash
# Issue 20's comparison on NP ranks (GPUs, or CPU ranks): one small case run
#   serial      on 1 rank,
#   space       on NP ranks (the usual decomposition),
#   time        on NP rank groups of 1 rank (parareal, SLICES slices: SLICES / NP per rank),
#   space-time  on NP / 2 groups of 2 ranks (parareal, the same slices),
# in the same job, with the wall time, speedup over serial, parareal's iterations and its
# difference from the serial result (relative max norm).
# Usage, from the repository root after a build:
#   NP=2 BACKEND=host bench/parareal_ranks.sh [OUTDIR]     (default $OUT or /tmp/parareal_ranks)
# Environment: TESSERA (build/tessera), MPIEXEC (mpiexec), NP (2), BACKEND (host), N (128: an
# N^2 heat case), STEPS (20480), SLICES (NP * 4), COARSEN (4), COARSE (the coarse scheme:
# ssp_rk3), TOL (1e-6), LINKS (1: the time layout again with TESSERA_PARAREAL_LINK=mpi, as
# "time_mpi", to compare the NCCL link with MPI through host memory on GPUs), RUN_TIMEOUT
# (seconds a run may take: 3600), LAYOUTS (which of "space time spacetime" to run besides
# serial: all three), PYTHON (python3).
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-${OUT:-/tmp/parareal_ranks}}
tess=${TESSERA:-$root/build/tessera}
mpi=${MPIEXEC:-mpiexec}
py=${PYTHON:-python3}
np=${NP:-2}
n=${N:-128}
slices=${SLICES:-$((np * 4))}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mkdir -p "$out"
case=$out/heat.yaml
cat >"$case" <<YAML
model: heat
grid: {cells: [$n, $n]}
params: {kappa: 1.0}
initial: {u: "0"}
source: {u: "2*pi*pi*sin(pi*x)*sin(pi*y)"}
exact: {u: "(1 - exp(-2*pi*pi*t))*sin(pi*x)*sin(pi*y)"}
boundary: {default: {type: dirichlet, value: 0}}
time: {scheme: ssp_rk3, dt: auto, steps: ${STEPS:-20480}}
backend: ${BACKEND:-host}
output: {progress: none}
YAML
P="--set decomposition.time_slices=$slices --set parareal.coarsen=${COARSEN:-4} --set parareal.tol=${TOL:-1e-6}"
P="$P --set parareal.coarse_scheme=${COARSE:-ssp_rk3}"
fail=0
go() { # NAME NP ARGS...
  local name=$1 k=$2
  shift 2
  timeout "${RUN_TIMEOUT:-3600}" "$mpi" -n "$k" "$tess" run "$case" --out "$out/$name" "$@" >"$out/$name.log" 2>&1 ||
    { echo "$name failed:"; tail -3 "$out/$name.log"; fail=1; }
}
go serial 1
want() { case " ${LAYOUTS:-space time spacetime} " in *" $1 "*) return 0 ;; esac; return 1; }
want space && go space "$np"
want time && go time "$np" $P --set parareal.slices_per_rank=$((slices / np))
if want time && [ "${LINKS:-0}" = 1 ]; then
  TESSERA_PARAREAL_LINK=mpi go time_mpi "$np" $P --set parareal.slices_per_rank=$((slices / np))
fi
if want spacetime && { [ "$np" -ge 4 ] || [ "$np" = 2 ]; }; then
  # space-time: NP / 2 groups of 2 ranks (with NP = 2: one group of 2 ranks, all slices)
  go spacetime "$np" $P --set parareal.slices_per_rank=$((slices * 2 / np))
fi
"$py" - "$out" "$np" <<'PY'
import json, os, sys, h5py
out, np_ = sys.argv[1], sys.argv[2]
def load(d):
    return json.load(open(f"{out}/{d}/report.json")), h5py.File(f"{out}/{d}/final.h5")["fields/u"][()]
rs, us = load("serial")
print(f"heat {rs['cells']}, {rs['steps']} steps, backend {rs['backend']}; serial {rs['wall_time']:.3f} s")
print(f"{'layout':11} {'ranks':>5} {'wall s':>8} {'speedup':>8} {'iter':>5} {'vs serial':>10}")
res = {}
for d in ["serial", "space", "time", "time_mpi", "spacetime"]:
    if not os.path.exists(f"{out}/{d}/report.json"):
        continue
    r, u = load(d)
    p = r.get("parareal", {})
    diff = float(abs(u - us).max() / abs(us).max())
    print(f"{d:11} {r['ranks'] * p.get('rank_groups', 1):5d} {r['wall_time']:8.3f} "
          f"{rs['wall_time'] / r['wall_time']:8.2f} {p.get('iterations', ''):>5} {diff:10.2e}")
    res[d] = {"wall": r["wall_time"], "speedup": rs["wall_time"] / r["wall_time"],
              "iterations": p.get("iterations"), "diff_vs_serial": diff,
              "link": p.get("link"), "comm_seconds": p.get("comm_seconds")}
    if p:
        per = ", ".join(f"{h['comm_seconds']:.4f}" for h in p.get("history", []))
        print(f"{'':11} link {p.get('link')}, communication {p.get('comm_seconds'):.4f} s "
              f"(per iteration: {per})")
json.dump(res, open(f"{out}/parareal_ranks.json", "w"), indent=1)
PY
exit $fail

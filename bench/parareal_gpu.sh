#!/usr/bin/env bash
# Issue 20's one-GPU benchmark: a long run of a small grid, where the GPU is bound by kernel
# launches, not bandwidth. Serial stepping (CUDA graphs) against parareal with all its slices
# on the same GPU (slices_per_rank = time_slices: the slices' fine steps in batched launches,
# one launch per stage for all of them, captured in CUDA graphs; solver/parareal/batch.h),
# in the same job on the same device; one run with the batches off (each slice on its own
# streams and graphs, as before) for comparison. For each run: wall time, parareal
# iterations, the difference from the serial result (relative max norm), and the error of
# both against the exact solution, so the comparison is at the same final accuracy; the
# parareal model's predicted speedup (report.json) beside the measured one.
# Usage, from the repository root after a build:
#   bench/parareal_gpu.sh [OUTDIR]       (default $OUT or /tmp/parareal_gpu)
# Environment: TESSERA (build/tessera), DIM (2; 3 for the 3D case), N (256 in 2D, 64 in 3D),
# STEPS (102400: a multiple of every slice count below, so the slices are equal and the
# coarse steps replay CUDA graphs too), SLICES ("16 32"), COARSEN ("2 4"), COARSE (the
# coarse schemes: "ssp_rk3 euler"; euler's coarse steps are one stage each), UNBATCHED (the
# slices and coarsening of the run with the batches off, TESSERA_PARAREAL_BATCH=off: "16 4";
# empty: none), BATCH_GROUPS (launch groups to try, each a run
# with TESSERA_PARAREAL_BATCH=g and the first of SLICES, COARSEN and COARSE: e.g. "1 2 4 8";
# empty, the default: none; the other runs take the default, auto), BLOCK_OFF (non-empty: one
# run more, the first of SLICES, COARSEN and COARSE with the coarse steps launched as kernels
# in CUDA graphs, TESSERA_PARAREAL_COARSE_BLOCK=off, against the default's one block a slice;
# solver/parareal/coarse.h), FINE_BLOCK_OFF (non-empty: one run more, the same with the fine
# solves as batched launches in CUDA graphs, TESSERA_PARAREAL_FINE_BLOCK=off, against the
# default's one launch of block steps for all slices; solver/parareal/batch.h), TOL (1e-6), BACKEND
# (cuda), PRECISION (double), PYTHON (python3).
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-${OUT:-/tmp/parareal_gpu}}
tess=${TESSERA:-$root/build/tessera}
py=${PYTHON:-python3}
dim=${DIM:-2}
if [ "$dim" = 3 ]; then n=${N:-64}; else n=${N:-256}; fi
steps=${STEPS:-102400}
tol=${TOL:-1e-6}
backend=${BACKEND:-cuda}
mkdir -p "$out"
case=$out/heat${dim}d.yaml
# heated towards a steady mode from zero, so the field stays of order one over any length of
# run: u = (1 - exp(-dim pi^2 t)) S with S the first mode, source dim pi^2 S
if [ "$dim" = 3 ]; then
  cells="[$n, $n, $n]" mode="sin(pi*x)*sin(pi*y)*sin(pi*z)"
else
  cells="[$n, $n]" mode="sin(pi*x)*sin(pi*y)"
fi
cat >"$case" <<YAML
model: heat
grid: {cells: $cells}
params: {kappa: 1.0}
initial: {u: "0"}
source: {u: "$dim*pi*pi*$mode"}
exact: {u: "(1 - exp(-$dim*pi*pi*t))*$mode"}
boundary: {default: {type: dirichlet, value: 0}}
time: {scheme: ssp_rk3, dt: auto, steps: $steps}
backend: $backend
precision: ${PRECISION:-double}
output: {progress: none}
YAML
fail=0
"$tess" run "$case" --out "$out/serial" >"$out/serial.log" 2>&1 || { cat "$out/serial.log"; exit 1; }
rows=()
# one parareal run: NAME SLICES COARSEN COARSE_SCHEME [env ...]
one() {
  local name=$1 p=$2 r=$3 cs=$4
  shift 4
  if ! env "$@" "$tess" run "$case" --out "$out/$name" --set decomposition.time_slices=$p \
      --set parareal.slices_per_rank=$p --set parareal.coarsen=$r --set parareal.tol=$tol \
      --set parareal.coarse_scheme=$cs >"$out/$name.log" 2>&1; then
    tail -3 "$out/$name.log"
    fail=1
    return
  fi
  rows+=("$name")
}
for p in ${SLICES:-16 32}; do
  for r in ${COARSEN:-2 4}; do
    for cs in ${COARSE:-ssp_rk3 euler}; do one "p${p}_c${r}_$cs" "$p" "$r" "$cs"; done
  done
done
unb=${UNBATCHED-16 4}
if [ -n "$unb" ]; then
  set -- $unb
  one "p$1_c$2_unbatched" "$1" "$2" ssp_rk3 TESSERA_PARAREAL_BATCH=off
fi
set -- ${SLICES:-16 32}
p1=$1
set -- ${COARSEN:-2 4}
r1=$1
set -- ${COARSE:-ssp_rk3 euler}
c1=$1
for g in ${BATCH_GROUPS:-}; do
  one "p${p1}_c${r1}_${c1}_g$g" "$p1" "$r1" "$c1" TESSERA_PARAREAL_BATCH=$g
done
if [ -n "${BLOCK_OFF:-}" ]; then
  one "p${p1}_c${r1}_${c1}_launches" "$p1" "$r1" "$c1" TESSERA_PARAREAL_COARSE_BLOCK=off
fi
if [ -n "${FINE_BLOCK_OFF:-}" ]; then
  one "p${p1}_c${r1}_${c1}_fine_launches" "$p1" "$r1" "$c1" TESSERA_PARAREAL_FINE_BLOCK=off
fi
"$py" - "$out" "${rows[@]}" <<'PY'
import json, sys, h5py, numpy as np
out, names = sys.argv[1], sys.argv[2:]
def load(d):
    return json.load(open(f"{out}/{d}/report.json")), h5py.File(f"{out}/{d}/final.h5")["fields/u"][()]
rs, us = load("serial")
ts = rs["wall_time"]
print(f"serial: {rs['steps']} steps of {rs['cells']}, {ts:.3f} s, error L2 {rs['fields']['u']['error_l2']:.3e}"
      f" (graphs {rs['gpu_graphs']})")
print(f"{'run':34} {'iter':>4} {'conv':>5} {'group':>5} {'fblk':>5} {'block':>5} {'wall s':>8} {'speedup':>8} {'predicted':>9} "
      f"{'fine s':>7} {'coarse s':>8} {'vs serial':>10} {'error L2':>10}")
res = {"serial": {"wall": ts, "steps": rs["steps"], "error_l2": rs["fields"]["u"]["error_l2"]}}
for d in names:
    r, u = load(d)
    p = r["parareal"]
    diff = float(abs(u - us).max() / abs(us).max())
    grp = p.get("batch_group", 0) if p.get("fine_batched") else "off"
    print(f"{d:34} {p['iterations']:4d} {str(p['converged']):>5} {grp:>5} {str(p.get('fine_block')):>5} "
          f"{str(p.get('coarse_block')):>5} {r['wall_time']:8.3f} "
          f"{ts / r['wall_time']:8.2f} {p['predicted_speedup']:9.2f} {p['fine_seconds']:7.3f} "
          f"{p['coarse_seconds']:8.3f} {diff:10.2e} {r['fields']['u']['error_l2']:10.3e}")
    res[d] = {"wall": r["wall_time"], "speedup": ts / r["wall_time"], "iterations": p["iterations"],
              "predicted": p["predicted_speedup"], "diff_vs_serial": diff,
              "fine_batched": p.get("fine_batched"), "batch_group": p.get("batch_group"),
              "coarse_block": p.get("coarse_block"), "fine_block": p.get("fine_block"),
              "fine_block_cluster": p.get("fine_block_cluster"),
              "fine_block_resident": p.get("fine_block_resident"),
              "error_l2": r["fields"]["u"]["error_l2"], "fine_s": p["fine_seconds"],
              "coarse_s": p["coarse_seconds"], "comm_s": p["comm_seconds"]}
json.dump(res, open(f"{out}/parareal_gpu.json", "w"), indent=1)
PY
exit $fail

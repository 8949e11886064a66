#!/usr/bin/env bash
# Issue 18's accuracy goals for the decomposed PINN (fp32 on GPUs), in one job:
#   poisson     Poisson 2D, 4 boxes in space (2 x 2)                   goal <= 1e-3
#   heat        heat 2D + t, 2 boxes in space x 2 time slabs (all)     goal <= 1e-3
#   burgers     Burgers 1D + t, 4 subdomains (BURGERS_LAYOUT below)    goal <= 5e-3
#   allen_cahn  Allen-Cahn 1D + t, causal time slabs                   goal <= 1e-2
# each trained with Adam and then L-BFGS (on several ranks each rank its own: README, PINN
# method, On several ranks), the error relative L2 against exact (poisson, heat: report.json's,
# over the grid's cell centres and time levels) or against the reference solution (burgers,
# allen_cahn: every snapshot at t = 0, 0.05, ..., 1 against tests/data/*_ref.csv by
# tests/scripts/pinn_compare.py).
#
# Run from the repository root, with the tessera binary at TESSERA_BIN:
#   TESSERA_BIN=build-gpu/tessera OUT=/tmp/acc bash bench/pinn_accuracy_gpu.sh
# On a 2-GPU machine each case's ranks share the GPUs (more ranks than GPUs: README, On several
# ranks); with PINN_ACC_LAYOUT=pairs (the default) two cases run at a time, each on a GPU of its
# own (CUDA_VISIBLE_DEVICES), so four 4-rank cases take two rounds; sequential: one case at a
# time over every GPU.
#
# Environment: TESSERA_BIN (required), OUT (output folder, default /tmp/pinn_accuracy), BACKEND
# (cuda, the default, or host: CPU ranks), MPIEXEC (default mpiexec), MPIEXEC_FLAGS, PYTHON,
# PINN_ACC_CASES (a comma list of the case names above; default all four), PINN_ACC_SCALE (every
# iteration count times this, default 1: 0.02 checks the script end to end in a minute or two on
# CPU), PINN_ACC_SIZE (full, the default with cuda, or small: grids, networks and points cut to
# run on CPU cores; the default with host), PINN_ACC_LAYOUT (pairs or sequential),
# PINN_ACC_LIMIT (seconds a case may run before it is stopped and counted as not met; default
# 210), BURGERS_LAYOUT (slabs: 4 time slabs trained at once, the default; causal: 4 causal time
# slabs; space: 4 boxes in x), PINN_ACC_ADAM and PINN_ACC_LBFGS (iterations of every case
# run, in place of its own), PINN_ACC_SET (more `--set key=value` options for every case run,
# recorded as extra_keys: variants of one case).
#
# OUT gets one directory and log per case, pinn_accuracy.jsonl and pinn_accuracy.csv (one line
# per case: case, decomposition, ranks, iterations, training seconds, relative L2 error, goal,
# met, and more) and prints the table. Exits 1 when a run fails or gives no finite error, 0
# otherwise (a goal not met is a figure, not a failure: the table says which).
set -u
[ -f cases/pinn_poisson2d.yaml ] && [ -f tests/scripts/pinn_compare.py ] || {
  echo "pinn_accuracy_gpu: run from the repository root (cases/ and tests/ there)" >&2; exit 2; }
tess=${TESSERA_BIN:-}
[ -n "$tess" ] && [ -x "$tess" ] || {
  echo "pinn_accuracy_gpu: set TESSERA_BIN to the tessera binary (got '${tess}')" >&2; exit 2; }
out=${OUT:-/tmp/pinn_accuracy}
backend=${BACKEND:-cuda}
case $backend in
  cuda) size=${PINN_ACC_SIZE:-full} ;;
  host) size=${PINN_ACC_SIZE:-small}
        export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} ;;
  *) echo "pinn_accuracy_gpu: BACKEND must be cuda or host, not '$backend'" >&2; exit 2 ;;
esac
case $size in full|small) ;; *) echo "pinn_accuracy_gpu: PINN_ACC_SIZE must be full or small" >&2; exit 2 ;; esac
scale=${PINN_ACC_SCALE:-1}
layout=${PINN_ACC_LAYOUT:-pairs}
limit=${PINN_ACC_LIMIT:-210}
cases=${PINN_ACC_CASES:-poisson,heat,burgers,allen_cahn}
blayout=${BURGERS_LAYOUT:-slabs}
mpiexec=${MPIEXEC:-mpiexec}
py=${PYTHON:-python3}
for p in /usr/bin/python3 "$py"; do "$p" -c "import h5py, numpy" 2>/dev/null && { py=$p; break; }; done
mkdir -p "$out"
rm -f "$out/pinn_accuracy.jsonl" "$out/pinn_accuracy.csv" "$out"/*.json.part
# waiting ranks of a causal run sleep between polls (solver/pinn/train.c); MPI's own waits too
export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}

# n N: N iterations scaled by PINN_ACC_SCALE (at least 1; 0 stays 0)
n() { awk -v n="$1" -v s="$scale" 'BEGIN { m = int(n * s + 0.5); if (n > 0 && m < 1) m = 1; print m }'; }

# The settings of each case: ranks, decomposition keys, training keys (GPU sizes; small: CPU).
# Chosen from the CPU figures in bench/README.md (PINN: decomposed accuracy) and the
# single-network GPU runs there: the same networks and points as cases/, Adam then L-BFGS.
setup_case() {
  local name=$1
  snap="--set output.snapshot_every.time=0.05"
  case $name in
    poisson)
      file=cases/pinn_poisson2d.yaml ranks=4 goal=1e-3 ref=
      decomp="4 boxes (2 x 2)"
      keys="--set decomposition.ranks=[2,2] --set pinn.weights.boundary=10
            --set pinn.weights.interface_value=10 --set pinn.weights.interface_flux=1
            --set pinn.weights.interface_residual=0.1 --set pinn.adam.lr=2e-3
            --set pinn.adam.decay_every=1500"
      adam=12000 lbfgs=4000
      [ "$size" = small ] && keys="$keys --set grid.cells=[32,32] --set pinn.network.width=24
            --set pinn.network.depth=3 --set pinn.points.boundary=64"
      ;;
    heat)
      file=cases/pinn_heat2d.yaml ranks=4 goal=1e-3 ref=
      decomp="2 boxes x 2 time slabs (all at once)"
      keys="--set decomposition.time_slices=2 --set pinn.slabs=all
            --set pinn.weights.interface_value=100 --set pinn.weights.interface_flux=1
            --set pinn.weights.interface_residual=0.1 --set pinn.adam.decay_every=1500"
      adam=12000 lbfgs=4000
      [ "$size" = small ] && keys="$keys --set grid.cells=[16,16] --set pinn.points.times=8
            --set pinn.network.width=24 --set pinn.network.depth=3 --set pinn.points.boundary=128
            --set pinn.points.initial=256"
      ;;
    burgers)
      file=cases/pinn_burgers1d.yaml ranks=4 goal=5e-3 ref=tests/data/burgers_ref.csv
      case $blayout in
        slabs) decomp="4 time slabs (all at once)"
               keys="--set decomposition.time_slices=4 --set pinn.slabs=all" ;;
        causal) decomp="4 causal time slabs"
                keys="--set decomposition.time_slices=4 --set pinn.slabs=causal" ;;
        space) decomp="4 boxes in x"
               keys="--set pinn.weights.interface_value=10 --set pinn.weights.interface_flux=1
                     --set pinn.weights.interface_residual=0.1" ;;
        *) echo "pinn_accuracy_gpu: BURGERS_LAYOUT must be slabs, causal or space" >&2; exit 2 ;;
      esac
      # 20,000 points and 8,000 L-BFGS iterations: 4.4e-4 on 2 H200s, where 10,000 and 4,000
      # gave 7.4e-3 (bench/README.md)
      keys="$keys --set pinn.adam.decay_every=2000 --set pinn.points.resample_every=1000 $snap
            --set pinn.points.interior=20000"
      adam=20000 lbfgs=8000
      [ "$blayout" = causal ] && adam=6000 lbfgs=2000
      [ "$size" = small ] && keys="$keys --set pinn.network.width=20 --set pinn.network.depth=4
            --set pinn.points.interior=4000 --set pinn.points.resample_every=500"
      ;;
    allen_cahn)
      file=cases/pinn_allen_cahn1d.yaml ranks=8 goal=1e-2 ref=tests/data/allen_cahn_ref.csv
      decomp="8 causal time slabs"
      # the CPU-measured settings at both sizes (5.7e-3 there): 32 x 3, 8,000 points (1,000 a
      # slab); a larger network or more points did not help there
      keys="--set decomposition.time_slices=8 --set pinn.slabs=causal
            --set pinn.network.width=32 --set pinn.network.depth=3 --set pinn.points.interior=8000
            --set pinn.points.resample_every=500 --set pinn.adam.decay_every=1000 $snap"
      adam=4000 lbfgs=6000
      ;;
    *) echo "pinn_accuracy_gpu: unknown case '$name' in PINN_ACC_CASES" >&2; exit 2 ;;
  esac
  adam=$(n $adam) lbfgs=$(n $lbfgs)
  logev=$(( (adam + lbfgs) / 20 )); [ $logev -lt 1 ] && logev=1
}

# run_case NAME [GPU]: trains NAME (on GPU alone where given) and writes its record
run_case() {
  local name=$1 gpu=${2:-} dir=$out/$1 t0 t1 rc
  setup_case "$name"
  # variants of one case: iteration counts and keys of your own, recorded with the result
  adam=${PINN_ACC_ADAM:-$adam} lbfgs=${PINN_ACC_LBFGS:-$lbfgs}
  keys="$keys ${PINN_ACC_SET:-}"
  rm -rf "$dir"
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  ( [ -n "$gpu" ] && export CUDA_VISIBLE_DEVICES=$gpu
    exec timeout -s TERM -k 30 "$limit" $mpiexec ${MPIEXEC_FLAGS:-} -n "$ranks" "$tess" run \
      "$file" --out "$dir" --backend "$backend" --set precision=single \
      --set output.progress=lines --set pinn.adam.iterations=$adam \
      --set pinn.lbfgs.iterations=$lbfgs --set pinn.log_every=$logev $keys ) >"$dir.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  local err="" src=report
  if [ $rc = 0 ] && [ -n "$ref" ]; then
    src=$(basename "$ref")
    err=$("$py" tests/scripts/pinn_compare.py "$dir" "$ref" 2>&1 | tail -1)
  elif [ $rc = 0 ]; then
    err=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['rel_l2_error'])" \
          "$dir/report.json" 2>&1)
  fi
  "$py" - "$dir" "$name" "$decomp" "$ranks" "$adam" "$lbfgs" "$goal" "$err" "$src" "$rc" \
    "$t0" "$t1" "$backend" "$gpu" "$limit" "${PINN_ACC_SET:-}" >"$dir.json.part" <<'PY'
import json, math, sys
d, name, decomp, ranks, adam, lbfgs, goal, err, src, rc, t0, t1, backend, gpu, limit = sys.argv[1:16]
try:
    e = float(err)
except ValueError:
    e = float("nan")
r = {}
try:
    r = json.load(open(d + "/report.json"))
except (OSError, ValueError):
    pass
rec = {"case": name, "decomposition": decomp, "ranks": int(ranks), "backend": backend,
       "precision": "single", "adam_iterations": int(adam), "lbfgs_iterations": int(lbfgs),
       "iterations": r.get("iterations"), "train_seconds": r.get("train_seconds"),
       "wall_seconds": round(float(t1) - float(t0), 2), "rel_l2_error": e,
       "error_against": src, "goal": float(goal),
       "met": bool(math.isfinite(e) and e <= float(goal)),
       "ranks_per_gpu": r.get("ranks_per_gpu"), "gpu_graphs": r.get("gpu_graphs"),
       "gpus_visible": gpu or "all", "exit_code": int(rc), "extra_keys": sys.argv[16],
       "timed_out": int(rc) in (124, 137) or (int(rc) == 4 and float(t1) - float(t0) >= float(limit))}
print(json.dumps(rec))
PY
  printf '%-11s %-40s rc %s, error %s (goal %s), %s\n' "$name" "$decomp" "$rc" "${err:-?}" \
    "$goal" "$(grep '^done:' "$dir.log" | tail -1 | cut -c1-80)"
}

IFS=, read -r -a todo <<<"$cases"
ngpu=1
if [ "$backend" = cuda ] && [ "$layout" = pairs ]; then
  ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
  [ "$ngpu" -ge 1 ] || ngpu=1
fi
start=$(date +%s)
if [ "$layout" = pairs ] && [ "$ngpu" -ge 2 ]; then
  # two at a time, each case on a GPU of its own; the records keep the case order
  for ((i = 0; i < ${#todo[@]}; i += 2)); do
    run_case "${todo[i]}" 0 &
    [ $((i + 1)) -lt ${#todo[@]} ] && run_case "${todo[i + 1]}" 1 &
    wait
  done
else
  for c in "${todo[@]}"; do run_case "$c"; done
fi
for c in "${todo[@]}"; do cat "$out/$c.json.part"; done >"$out/pinn_accuracy.jsonl"
rm -f "$out"/*.json.part
"$py" - "$out" "$(( $(date +%s) - start ))" <<'PY'
import csv, json, math, sys
out, wall = sys.argv[1], sys.argv[2]
recs = [json.loads(l) for l in open(out + "/pinn_accuracy.jsonl")]
cols = ["case", "decomposition", "ranks", "iterations", "adam_iterations", "lbfgs_iterations",
        "train_seconds", "wall_seconds", "rel_l2_error", "goal", "met", "error_against",
        "ranks_per_gpu", "gpu_graphs", "backend", "exit_code", "timed_out"]
with open(out + "/pinn_accuracy.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
    w.writeheader()
    w.writerows(recs)
print("\n| case | decomposition | ranks | iterations (Adam + L-BFGS) | training s | error | goal | met |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for r in recs:
    ts = r["train_seconds"]
    print("| %s | %s | %d | %s (%d + %d%s) | %s | %.3g | %g | %s |" % (
        r["case"], r["decomposition"], r["ranks"], r["iterations"], r["adam_iterations"],
        r["lbfgs_iterations"], " a slab" if "causal" in r["decomposition"] else "",
        "%.1f" % ts if ts is not None else "-", r["rel_l2_error"],
        r["goal"], "yes" if r["met"] else ("timed out" if r["timed_out"] else "no")))
print("\n%d of %d goals met; %s s in all; %s/pinn_accuracy.jsonl, .csv" % (
    sum(r["met"] for r in recs), len(recs), wall, out))
sys.exit(0 if all(r["exit_code"] == 0 and math.isfinite(r["rel_l2_error"]) for r in recs) else 1)
PY

#!/usr/bin/env bash
# Whole runs with and without time tiles (issue 21): `tessera run` of a heat case (constant
# Dirichlet faces, no source, so passes apply) with time.fuse 1 and each of FUSES, on one GPU or
# CPU ranks; prints cells x steps / s of each (report.json's cells_per_second: the step loop,
# start-up and the final write left out), the passes it took, and whether its final fields hold
# the bits of fuse 1.
#
#   SCHEME=ssp_rk3 DIM=2 N=20480 STEPS=300 PREC=double FUSES="2" bench/tiles_run.sh BUILD OUTDIR
#
# Environment: SCHEME (ssp_rk3; euler, ssp_rk2, rk4), DIM (2), N (cells a side: 20480 in 2D,
# 512 in 3D), STEPS (300), PREC (double or single), FUSES (2: with ssp_rk3 on one GPU every
# step a pass; 3 for forward Euler's passes of 3), BACKEND (cuda), NP (1). Writes
# OUTDIR/tiles_run_<scheme>_<dim>d_<prec>.json.
set -euo pipefail
build=${1:?usage: tiles_run.sh BUILD OUTDIR}
out=${2:?usage: tiles_run.sh BUILD OUTDIR}
scheme=${SCHEME:-ssp_rk3} dim=${DIM:-2} steps=${STEPS:-300} prec=${PREC:-double}
fuses=${FUSES:-2} backend=${BACKEND:-cuda} np=${NP:-1}
n=${N:-$([ "$dim" = 3 ] && echo 512 || echo 20480)}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tests/gpu/fields.bash"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cells="[$n, $n]" init="sin(pi*x)*sin(pi*y)"
[ "$dim" = 3 ] && cells="[$n, $n, $n]" init="sin(pi*x)*sin(pi*y)*sin(pi*z)"
cat >"$work/case.yaml" <<YAML
name: tiles_run
model: heat
grid: {cells: $cells}
params: {kappa: 1.0}
initial: {u: "$init"}
boundary: {default: {type: dirichlet, value: 0}}
time: {scheme: $scheme, dt: auto, steps: $steps}
precision: $prec
backend: $backend
output: {progress: none, monitor_every: $steps}
YAML
json="$out/tiles_run_${scheme}_${dim}d_${prec}.json"
printf '{"bench": "tiles_run", "scheme": "%s", "dim": %s, "n": %s, "steps": %s, ' \
  "$scheme" "$dim" "$n" "$steps" >"$json"
printf '"precision": "%s", "backend": "%s", "ranks": %s, "runs": [\n' "$prec" "$backend" "$np" >>"$json"
first=1
for f in 1 $fuses; do
  mpirun --bind-to none -np "$np" "$build/tessera" run "$work/case.yaml" --out "$work/f$f" \
    --set time.fuse="$f" >"$work/f$f.log" 2>&1 || { tail -5 "$work/f$f.log"; exit 1; }
  same=true
  [ "$f" = 1 ] || same_fields "$work/f1/final.h5" "$work/f$f/final.h5" 0 >/dev/null || same=false
  line=$(python3 - "$work/f$f/report.json" "$f" "$same" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["time_tiles"]
print(f'{{"fuse": {sys.argv[2]}, "gcells_per_s": {r["cells_per_second"] / 1e9:.4g}, '
      f'"passes": {t["passes"]}, "tiled_steps": {t["tiled_steps"]}, "bitwise_fuse1": {sys.argv[3]}}}')
PY
)
  echo "  $scheme ${dim}D $n $prec fuse $f: $line"
  [ $first = 1 ] || echo "," >>"$json"
  echo -n "$line" >>"$json"
  first=0
  [ "$f" = 1 ] || rm -rf "$work/f$f"
done
echo "]}" >>"$json"

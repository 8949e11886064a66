#!/usr/bin/env bash
# precision: single on the host backend: the fields and files are float32, the solution stays
# within single-precision rounding of the double one (same error against the exact solution),
# a single-precision checkpoint restarts bitwise, and a bad value is refused.
set -u
. "$(dirname "$0")/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/heat.yaml" <<'YAML'
model: heat
grid: {cells: [48, 40]}
params: {kappa: 1.0}
initial: {u: "sin(pi*x)*sin(pi*y)"}
exact: {u: "exp(-2*pi*pi*kappa*t)*sin(pi*x)*sin(pi*y)"}
time: {scheme: ssp_rk3, dt: auto, end: 0.02}
output: {checkpoint_every: 40, keep: 5}
YAML
run_ok "double" 2 "$work/heat.yaml" --out "$work/d" &&
  run_ok "single" 2 "$work/heat.yaml" --out "$work/s" --set precision=single || { finish; exit; }
grep -q '"precision": "single"' "$work/s/report.json" && pass "report.json says single" ||
  failure "report.json does not say single"
h5dump -H -d /fields/u "$work/s/final.h5" | grep -q H5T_IEEE_F32LE && pass "final.h5: /fields/u is float32" ||
  failure "final.h5 of a single run is not float32"
h5dump -H -d /fields/u "$work/s/checkpoint_00000040.h5" | grep -q H5T_IEEE_F32LE &&
  pass "checkpoint: /fields/u is float32" || failure "checkpoint of a single run is not float32"
grep -q 'Precision="4"' "$work/s/final.xmf" && pass "final.xmf: Precision=4" || failure "final.xmf precision"
# within rounding of the double run: |single - double| <= 1e-5 of the field's scale
if h5diff -q -d 1e-5 "$work/d/final.h5" "$work/s/final.h5" /fields /fields >/dev/null 2>&1; then
  pass "single within 1e-5 of double"
else h5diff -d 1e-5 "$work/d/final.h5" "$work/s/final.h5" /fields /fields | tail -3; failure "single far from double"; fi
# same discretisation error (the rounding is far below it)
err() { sed -n 's/.*"error_l2": *\([^,]*\),*/\1/p' "$1" | head -1; }
ed=$(err "$work/d/report.json") es=$(err "$work/s/report.json")
if awk -v d="$ed" -v s="$es" 'BEGIN { exit !(d > 0 && s > 0 && s < 1.5 * d && s > 0.5 * d) }'; then
  pass "error against exact: single $es, double $ed"
else failure "error against exact: single '$es', double '$ed'"; fi
# restart of a single run from a checkpoint on 3 ranks: bitwise equal to the uninterrupted run
rm "$work/s/final.h5"
if run_ok "single restart" 3 "$work/heat.yaml" --out "$work/s" --set precision=single --restart "$work/s/checkpoint_00000040.h5"; then
  run_ok "single ref" 1 "$work/heat.yaml" --out "$work/sref" --set precision=single &&
    if h5diff -q "$work/sref/final.h5" "$work/s/final.h5" /fields /fields >/dev/null 2>&1; then
      pass "single restart on 3 ranks bitwise equal to uninterrupted"
    else failure "single restart differs from uninterrupted"; fi
fi
# a double checkpoint does not restart a single run unless forced (the key is named)
log=$("$MPIEXEC" -n 1 "$TESSERA_BIN" run "$work/heat.yaml" --out "$work/x" --set precision=single --restart "$work/d/checkpoint_00000040.h5" 2>&1); rc=$?
[ $rc = 2 ] && echo "$log" | grep -q "precision: checkpoint double, this case single" && pass "double checkpoint refused for a single run, naming precision" ||
  { echo "$log" | tail -3; failure "double checkpoint into single run: rc $rc"; }
if run_ok "forced" 1 "$work/heat.yaml" --out "$work/x" --set precision=single --restart "$work/d/checkpoint_00000040.h5" --restart-force &&
  h5dump -H -d /fields/u "$work/x/final.h5" | grep -q H5T_IEEE_F32LE; then
  pass "--restart-force: a double checkpoint continues as a single run"
else failure "--restart-force from double into single"; fi
# bad value
log=$("$MPIEXEC" -n 1 "$TESSERA_BIN" run "$work/heat.yaml" --out "$work/bad" --set precision=half 2>&1); rc=$?
if [ $rc = 2 ] && echo "$log" | grep -q "precision" && echo "$log" | grep -q "single" && [ ! -e "$work/bad" ]; then
  pass "precision: half refused (exit 2, names the choices, no output)"
else echo "$log" | tail -3; failure "precision: half: rc $rc"; fi
finish

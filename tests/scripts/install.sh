#!/usr/bin/env bash
# cmake --install of this build tree into a temporary prefix (no configure, no build: CI has
# built it), then, from another directory, what a user of the install tree does: an installed
# example case run with the installed binary (its outputs checked), `tessera check`, and the
# installed scaling driver, which must find the installed tessera on its own.
set -u
. "$(dirname "$0")/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build=$(dirname "$TESSERA_BIN")
prefix=$work/prefix

if ! log=$(cmake --install "$build" --prefix "$prefix" 2>&1); then
  echo "$log" | tail -20
  failure "cmake --install $build --prefix $prefix"
  finish
  exit
fi
share=$prefix/share/tessera
bin=$prefix/bin/tessera
ncases=$(ls "$TESSERA_SOURCE"/cases/*.yaml | wc -l)
if [ -x "$bin" ] && [ "$(ls "$share"/cases/*.yaml 2>/dev/null | wc -l)" -eq "$ncases" ] &&
   [ -f "$share/README.md" ] && [ -x "$share/bench/scaling.py" ]; then
  pass "installed bin/tessera, $ncases cases, README.md and bench/scaling.py"
else
  failure "install tree incomplete:"; find "$prefix" | sed 's/^/  /'
fi

# from another directory, with nothing of the checkout or the build on the way
mkdir -p "$work/elsewhere"
cd "$work/elsewhere" || exit 1
export PATH=/usr/bin:/bin
if "$bin" --version | grep -q "tessera"; then pass "installed tessera --version"; else
  failure "installed tessera --version"; fi
if log=$("$MPIEXEC" -n 2 "$bin" run "$share/cases/heat2d.yaml" --set grid.cells=[16,16] \
         --set time.end=0.001 2>&1); then
  # no --out: the case's output.dir (out/heat2d) under the current directory
  out=$work/elsewhere/out/heat2d
  if [ -s "$out/final.h5" ] && [ -s "$out/final.xmf" ] && python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1] + "/report.json"))
assert r["steps"] > 0 and abs(r["final_time"] - 0.001) < 1e-12, r
assert r["fields"]["u"]["error_l2"] < 1e-3, r["fields"]["u"]
PY
  then
    h5dump -H -d /fields/u "$out/final.h5" | grep -q "( 16, 16 )" ||
      failure "installed heat2d.yaml: final.h5 has no 16 x 16 /fields/u"
    pass "installed heat2d.yaml on 2 ranks from another directory: final.h5, final.xmf, report.json"
  else
    failure "installed heat2d.yaml: outputs missing or wrong in $out"; ls -l "$out"
  fi
else
  echo "$log" | tail -10
  failure "installed heat2d.yaml did not run"
fi
if "$bin" check "$share/cases/wave3d.yaml" --ranks 4 >/dev/null 2>&1; then
  pass "installed tessera check wave3d.yaml --ranks 4"; else failure "installed tessera check"; fi

scaling=$share/bench/scaling.py
if COLUMNS=500 "$scaling" --help | grep -qF -- "(default: $bin)"; then
  pass "installed scaling.py --help names the installed tessera"
else
  failure "installed scaling.py --help"; "$scaling" --help | grep -A1 -- "--tessera"
fi
# a smoke run (8x8 cells, 2 steps, host backend) through the driver's default binary (there
# is no build/tessera here)
if log=$("$scaling" --gpus 1 --study strong2d --scale 4096 --steps 2 --set backend=host \
         --launcher "$MPIEXEC -n {n}" --out "$work/scaling" 2>&1) &&
   [ -s "$work/scaling/strong2d.csv" ]; then
  pass "installed scaling.py ran the installed tessera"
else
  echo "$log" | tail -10
  failure "installed scaling.py --gpus 1 --scale 4096"
fi
finish

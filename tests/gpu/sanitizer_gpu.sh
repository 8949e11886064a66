#!/usr/bin/env bash
# compute-sanitizer (memcheck and racecheck) on a small case of each model with the CUDA
# backend, 2D and 3D (label gpu). Clean means: exit 0 and "ERROR SUMMARY: 0 errors".
set -u
. "$TESSERA_SOURCE/tests/scripts/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$cs" ] || { failure "compute-sanitizer not found"; finish; exit 1; }
for case in "$TESSERA_SOURCE"/tests/cases/bw_*.yaml; do
  name=$(basename "$case" .yaml)
  for tool in memcheck racecheck; do
    log="$work/$name-$tool.txt"
    if "$cs" --tool "$tool" --error-exitcode 9 "$TESSERA_BIN" run "$case" --backend cuda \
         --out "$work/$name-$tool" >"$log" 2>&1 && grep -q "ERROR SUMMARY: 0 errors" "$log"; then
      pass "$name: $tool clean"
    else
      tail -20 "$log"
      failure "$name: $tool"
    fi
  done
done
finish

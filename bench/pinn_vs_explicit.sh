#!/usr/bin/env bash
# One case file solved by both methods and compared side by side (issue 18): the case runs with
# --set method=explicit and with --set method=pinn (each method checks the other's keys and
# leaves them unused: the pinn: section, time.scheme/dt/cfl), then bench/pinn_vs_explicit.py
# reads both final.h5 and prints the relative L2 difference of the fields and, where the case
# has exact:, each method's error; it draws explicit, PINN, difference and errors as a PNG.
#   bench/pinn_vs_explicit.sh CASE.yaml [OUTDIR] [--set KEY=VALUE]...
# OUTDIR (default $OUT or /tmp/pinn_vs_explicit) gets explicit/, pinn/, pinn_vs_explicit.png and
# compare.json. The --set options go to both runs (pinn.* ones only matter to the PINN run).
# Environment: TESSERA (default build-host/tessera, else build-gpu/tessera), RANKS (default 1:
# N runs both methods under $MPIEXEC -n N, the PINN one network per rank's box), PYTHON.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 1 ] || { sed -n 2,11p "${BASH_SOURCE[0]}"; exit 2; }
case=$1
shift
out=${OUT:-/tmp/pinn_vs_explicit}
if [ $# -ge 1 ] && [ "${1#--}" = "$1" ]; then out=$1; shift; fi
tess=${TESSERA:-}
if [ -z "$tess" ]; then
  tess=$root/build-host/tessera
  [ -x "$tess" ] || tess=$root/build-gpu/tessera
fi
[ -x "$tess" ] || { echo "pinn_vs_explicit: no tessera binary at $tess: build it or set TESSERA" >&2; exit 2; }
py=${PYTHON:-python3}
ranks=${RANKS:-1}
launch=()
[ "$ranks" -gt 1 ] && launch=(${MPIEXEC:-mpiexec} -n "$ranks")
mkdir -p "$out"
for m in explicit pinn; do
  start=$(date +%s.%N)
  if ! "${launch[@]}" "$tess" run "$case" --out "$out/$m" --set method=$m "$@" \
       --set output.progress=lines >"$out/$m.log" 2>&1; then
    tail -20 "$out/$m.log"
    echo "pinn_vs_explicit: the $m run failed (log: $out/$m.log)" >&2
    exit 1
  fi
  printf '%s: %s s (log %s)\n' "$m" "$(echo "$(date +%s.%N) - $start" | bc)" "$out/$m.log"
  tail -1 "$out/$m.log"
done
"$py" "$root/bench/pinn_vs_explicit.py" "$out/explicit" "$out/pinn" \
  --out "$out/pinn_vs_explicit.png" --json "$out/compare.json"

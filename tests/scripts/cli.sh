#!/usr/bin/env bash
# The command line: help, version, usage errors, progress lines, the report and the XDMF.
set -u
. "$(dirname "$0")/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if "$TESSERA_BIN" --help | grep -q "usage: tessera run"; then pass "--help prints usage"; else failure "--help"; fi
if "$TESSERA_BIN" --version | grep -qE "^tessera [0-9]+\.[0-9]+\.[0-9]+$"; then pass "--version"; else failure "--version"; fi
if "$TESSERA_BIN" >/dev/null 2>&1; then failure "no arguments exits 0"; else pass "no arguments: usage, non-zero exit"; fi
# info: no case file; the versions, MPI, HDF5 and a GPUs line, and exit 0 where there is no GPU
version=$("$TESSERA_BIN" --version)
if info=$("$MPIEXEC" -n 2 "$TESSERA_BIN" info 2>&1); then pass "info exits 0"; else echo "$info"; failure "info exits non-zero"; fi
for re in "^$version\$" '^build: +CUDA (on|off)' '^MPI: +.+ 2 ranks on [0-9]+ nodes?$' \
          '^HDF5: +[0-9]+\.[0-9]+\.[0-9]+, (parallel|serial)' '^libyaml: +[0-9]' '^OpenMP: +[0-9]+ threads?' \
          '^GPUs: +(none found \(.+\)|[0-9]+ on node )'; do
  if grep -qE "$re" <<<"$info"; then pass "info prints /$re/"; else echo "$info"; failure "info lacks /$re/"; fi
done
if [ "$(grep -c "^$version\$" <<<"$info")" -eq 1 ]; then pass "info prints on rank 0 only"; else failure "info printed more than once"; fi
# no GPU here (no device node): the GPUs line says so, with the runtime's reason
if [ ! -e /dev/nvidia0 ] && [ ! -e /dev/nvidiactl ]; then
  if grep -qE '^GPUs: +none found \(.+\)$' <<<"$info"; then pass "info: GPUs none found, with a reason"; else echo "$info"; failure "info GPUs line on a machine without GPUs"; fi
fi
# OpenMP threads: ranks launched unbound share their node's CPUs out (4 ranks of all the CPUs
# each spin 7x slower on 2 cores); OMP_NUM_THREADS, where set, rules
cpus=$(nproc) want=$(( $(nproc) / 4 )); [ $want -ge 1 ] || want=1
[ $want = 1 ] && s="" || s=s
[ $cpus = 1 ] && cs="CPU" || cs="CPUs"
info=$("$MPIEXEC" -n 4 --bind-to none "$TESSERA_BIN" info 2>&1)
grep -qF "OpenMP:   $want thread$s per rank ($cpus $cs shared by 4 ranks on the node; OMP_NUM_THREADS unset)" <<<"$info" &&
  pass "info: 4 unbound ranks on $cpus CPUs take $want thread$s each" || { grep OpenMP <<<"$info"; failure "info: threads of 4 unbound ranks"; }
info=$(OMP_NUM_THREADS=3 "$MPIEXEC" -n 4 --bind-to none -x OMP_NUM_THREADS "$TESSERA_BIN" info 2>&1)
grep -qF "OpenMP:   3 threads per rank (OMP_NUM_THREADS=3)" <<<"$info" &&
  pass "info: OMP_NUM_THREADS=3 rules" || { grep OpenMP <<<"$info"; failure "info: OMP_NUM_THREADS=3"; }
if out=$("$TESSERA_BIN" info c.yaml 2>&1); then
  failure "info with a case file exits 0"
elif grep -q "info takes no case file" <<<"$out"; then
  pass "info refuses a case file"
else
  echo "$out"; failure "info with a case file: message"
fi
cat >"$work/c.yaml" <<'YAML'
model: heat
grid: {cells: [24, 20]}
initial: {u: "sin(pi*x)*sin(pi*y)"}
time: {scheme: rk4, end: 0.01}
exact: {u: "exp(-2*pi*pi*t)*sin(pi*x)*sin(pi*y)"}
output: {monitor_every: 10, progress: lines}
YAML
if log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/c.yaml" --out "$work/o" 2>&1); then
  pass "run on 2 ranks"
else
  echo "$log"; failure "run on 2 ranks"
fi
# progress lines: step, t, dt, min/max/L2 per field, the error, cells/s, elapsed, ETA
if grep -qE '^step [0-9]+/[0-9]+ t=.* dt=.* \| u min=.* max=.* L2=.* errL2=.* errLinf=.* \| .* cells/s \| elapsed [0-9:]+ ETA [0-9:]+$' <<<"$log"; then
  pass "progress lines carry step, t, dt, norms, errors, cells/s, elapsed and ETA"
else
  echo "$log"; failure "progress line format"
fi
nlines=$(grep -c '^step ' <<<"$log")
steps=$(grep -o '"steps": [0-9]*' "$work/o/report.json" | grep -o '[0-9]*$')
want=$(( steps / 10 + 1 + (steps % 10 != 0) ))
if [ "$nlines" -eq "$want" ]; then pass "monitor_every 10: $nlines lines for $steps steps"; else failure "monitor lines: $nlines, want $want"; fi
for key in '"case": "c"' '"case_hash": "' '"tessera_version"' '"ranks": 2' '"boxes"' '"final_time": 0.01' \
           '"wall_time"' '"cells_per_second"' '"halo_wait"' '"error_l2"' '"error_linf"' \
           '"gpu_graphs": "' '"gpu_graph_steps": ' '"openmp": {' '"ranks_sharing": ' '"set_by": "'; do
  if grep -qF "$key" "$work/o/report.json"; then pass "report.json has $key"; else failure "report.json lacks $key"; fi
done
for attr in lo hi cells time step tessera_version; do
  if h5dump -a "/$attr" "$work/o/final.h5" >/dev/null 2>&1; then pass "final.h5 attribute $attr"; else failure "final.h5 lacks attribute $attr"; fi
done
if grep -q 'Dimensions="1 20 24"' "$work/o/final.xmf" && grep -q 'final.h5:/fields/u' "$work/o/final.xmf"; then
  pass "final.xmf describes the 20 x 24 field in final.h5 (one layer across z)"
else
  cat "$work/o/final.xmf"; failure "final.xmf"
fi
# --set takes effect and is validated like the file
if "$MPIEXEC" -n 1 "$TESSERA_BIN" run "$work/c.yaml" --out "$work/o2" --set time.end=0.002 --set grid.cells=[12,10] >/dev/null 2>&1 &&
   grep -q '"final_time": 0.002' "$work/o2/report.json" && grep -q '"cells": 120' "$work/o2/report.json"; then
  pass "--set overrides time.end and grid.cells"
else
  failure "--set overrides"
fi
finish

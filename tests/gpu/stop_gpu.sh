#!/usr/bin/env bash
# GPU end-to-end (label gpu): batch jobs on the CUDA backend, CUDA graphs on (one GPU's
# default) and off. A run that signals itself (--inject-fault kind=signal, SIGTERM) after step
# 30, or before its first step, stops with exit 4 and a checkpoint, and --restart latest
# finishes it bitwise equal to the uninterrupted GPU run; a run that ended continues from
# final.h5 to a later end, bitwise equal to one run to that end.
set -u
. "$TESSERA_SOURCE/tests/scripts/lib.bash"
. "$TESSERA_SOURCE/tests/gpu/fields.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case=$TESSERA_SOURCE/tests/cases/bw_heat3d.yaml
for graphs in on off; do
  g=(--backend cuda --set "gpu.graphs=$graphs" --set output.checkpoint_every=20 --set time.steps=80)
  run_ok "graphs $graphs: uninterrupted" 1 "$case" --out "$work/ref-$graphs" "${g[@]}" || continue
  for at in 0 30; do
    d=$work/stop-$graphs-$at
    "$MPIEXEC" -n 1 "$TESSERA_BIN" run "$case" --out "$d" "${g[@]}" \
      --inject-fault "rank=0,step=$at,kind=signal" >"$d.log" 2>&1; rc=$?
    [ $rc = 4 ] && grep -q "stopped by SIGTERM after step" "$d.log" &&
      pass "graphs $graphs, signal at $at: exit 4 with a checkpoint" ||
      { tail -3 "$d.log"; failure "graphs $graphs, signal at $at: rc $rc"; continue; }
    run_ok "graphs $graphs, signal at $at: restart" 1 "$case" --out "$d" "${g[@]}" --restart latest &&
      { same_fields "$work/ref-$graphs/final.h5" "$d/final.h5" &&
        pass "graphs $graphs, signal at $at: finished = uninterrupted" ||
        failure "graphs $graphs, signal at $at: fields differ"; }
  done
  d=$work/cont-$graphs
  run_ok "graphs $graphs: 40 steps" 1 "$case" --out "$d" "${g[@]}" --set time.steps=40 &&
    run_ok "graphs $graphs: continued to 80" 1 "$case" --out "$d" "${g[@]}" --restart latest &&
    { same_fields "$work/ref-$graphs/final.h5" "$d/final.h5" &&
      pass "graphs $graphs: continued from final.h5 = one run" || failure "graphs $graphs: continued"; }
done
finish

#!/usr/bin/env bash
# GPU end-to-end (label gpu): every bitwise test case run with the CUDA backend on one GPU gives
# the same bits as the host backend (the per-cell code is shared and the expressions are
# evaluated on the host for both). With GPU_RANKS=2 (label gpu2), also on 2 GPUs with every
# partitioner.
set -u
. "$TESSERA_SOURCE/tests/scripts/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ranks=${GPU_RANKS:-1}
for case in "$TESSERA_SOURCE"/tests/cases/bw_*.yaml; do
  name=$(basename "$case" .yaml)
  run_ok "$name host" 1 "$case" --out "$work/$name-host" --backend host || continue
  if [ "$ranks" = 1 ]; then
    runs="1:rcb"
  else
    runs="2:rcb 2:slabs"
  fi
  for r in $runs; do
    np=${r%%:*} p=${r#*:}
    out="$work/$name-cuda-$np-$p"
    run_ok "$name cuda np$np $p" "$np" "$case" --out "$out" --backend cuda --set decomposition.partition="$p" || continue
    grep -q '"backend": "cuda"' "$out/report.json" || { failure "$name: report does not say cuda"; continue; }
    if h5diff -q "$work/$name-host/final.h5" "$out/final.h5" /fields /fields >/dev/null 2>&1; then
      pass "$name cuda np$np $p: bitwise identical to the host"
    else
      h5diff -r "$work/$name-host/final.h5" "$out/final.h5" /fields /fields 2>&1 | head -5
      failure "$name cuda np$np $p: differs from the host"
    fi
  done
done
finish

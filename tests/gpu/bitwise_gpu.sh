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
# same_fields A B: the /fields datasets of two files hold the same bits (h5diff where the HDF5
# tools are installed; h5py on the GPU machines, which lack them)
same_fields() {
  if command -v h5diff >/dev/null; then
    h5diff -q "$1" "$2" /fields /fields >/dev/null 2>&1
  else
    python3 - "$1" "$2" <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r")["fields"], h5py.File(sys.argv[2], "r")["fields"]
ok = sorted(a) == sorted(b) and all(
    a[k].shape == b[k].shape and np.array_equal(a[k][...].view(np.uint64), b[k][...].view(np.uint64)) for k in a)
if not ok:
    for k in a:
        d = np.abs(a[k][...] - b[k][...]); print(k, "max abs diff", d.max(), "cells differing", int((d != 0).sum()))
sys.exit(0 if ok else 1)
PY
  fi
}
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
    if same_fields "$work/$name-host/final.h5" "$out/final.h5"; then
      pass "$name cuda np$np $p: bitwise identical to the host"
    else
      failure "$name cuda np$np $p: differs from the host"
    fi
  done
done
finish

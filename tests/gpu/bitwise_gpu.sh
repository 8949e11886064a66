#!/usr/bin/env bash
# GPU end-to-end (label gpu). Every bitwise test case with the CUDA backend, against the host
# backend: the per-cell code is shared, so cases whose expressions are polynomials (bw_poly_*)
# must give the host's bits; the others evaluate sin, exp, ... with the device's math library
# (a few ulp from glibc's) and must agree to 1e-13 relative to the field's largest value.
# With GPU_RANKS=n > 1 (label gpu2: n = 2; bench/study_gpus.sh runs it on 4 and 8): on n GPUs
# with rcb and slabs, bitwise equal to 1 GPU.
set -u
. "$TESSERA_SOURCE/tests/scripts/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ranks=${GPU_RANKS:-1}
. "$TESSERA_SOURCE/tests/gpu/fields.bash"
for case in "$TESSERA_SOURCE"/tests/cases/bw_*.yaml; do
  name=$(basename "$case" .yaml)
  run_ok "$name host" 1 "$case" --out "$work/$name-host" --backend host || continue
  run_ok "$name cuda" 1 "$case" --out "$work/$name-cuda" --backend cuda || continue
  grep -q '"backend": "cuda"' "$work/$name-cuda/report.json" || { failure "$name: report does not say cuda"; continue; }
  case "$name" in bw_poly_*) tol=0 what="bitwise identical to" ;; *) tol=1e-13 what="within 1e-13 of" ;; esac
  if same_fields "$work/$name-host/final.h5" "$work/$name-cuda/final.h5" "$tol"; then
    pass "$name: 1 GPU $what the host"
  else
    failure "$name: 1 GPU not $what the host"
  fi
  # single precision: the same per-cell code in double, rounded once per store, so polynomial
  # cases are again bitwise equal; elsewhere a last-bit difference of the device's libm can
  # flip a float rounding, so the bound is float resolution (1e-6 of the field's scale)
  run_ok "$name host single" 1 "$case" --out "$work/$name-host-s" --backend host --set precision=single || continue
  run_ok "$name cuda single" 1 "$case" --out "$work/$name-cuda-s" --backend cuda --set precision=single || continue
  case "$name" in bw_poly_*) tol=0 what="bitwise identical to" ;; *) tol=1e-6 what="within 1e-6 of" ;; esac
  if same_fields "$work/$name-host-s/final.h5" "$work/$name-cuda-s/final.h5" "$tol"; then
    pass "$name single: 1 GPU $what the host"
  else
    failure "$name single: 1 GPU not $what the host"
  fi
  [ "$ranks" = 1 ] && continue
  out="$work/$name-cuda-s-$ranks"
  run_ok "$name cuda single np$ranks" "$ranks" "$case" --out "$out" --backend cuda --set precision=single || continue
  if same_fields "$work/$name-cuda-s/final.h5" "$out/final.h5" 0; then
    pass "$name single: $ranks GPUs bitwise identical to 1 GPU"
  else
    failure "$name single: $ranks GPUs differ from 1 GPU"
  fi
  for p in rcb slabs; do
    out="$work/$name-cuda-$ranks-$p"
    run_ok "$name cuda np$ranks $p" "$ranks" "$case" --out "$out" --backend cuda --set decomposition.partition="$p" || continue
    if same_fields "$work/$name-cuda/final.h5" "$out/final.h5" 0; then
      pass "$name: $ranks GPUs ($p) bitwise identical to 1 GPU"
    else
      failure "$name: $ranks GPUs ($p) differ from 1 GPU"
    fi
  done
done
finish

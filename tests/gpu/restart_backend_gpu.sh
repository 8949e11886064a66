#!/usr/bin/env bash
# GPU end-to-end (label gpu): checkpoints cross backends. A run checkpoints on the GPU (backend
# cuda) and a restart finishes it on the host backend, and the reverse; each must end equal to
# an uninterrupted run of the finishing leg's backend: bitwise for a polynomial case (no libm in
# the update or the expressions, so both backends give the same bits), within 1e-13 relative
# for cases with sin and exp (the device's math library differs from glibc's in the last bits
# during the first leg). The GPU legs run on GPU_RANKS ranks (default 1), the host legs on 2
# ranks, so the decomposition changes at the restart too. Checkpoints are written rank by rank
# (output.io: serial), the path of the GPU machines' serial HDF5; fields are compared with h5py
# there (tests/gpu/fields.bash). RESTART_GPU_BACKEND=host runs the same legs host to host, all
# bitwise (a check of this script on a machine without a GPU).
set -u
. "$TESSERA_SOURCE/tests/scripts/lib.bash"
. "$TESSERA_SOURCE/tests/gpu/fields.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gpu_ranks=${GPU_RANKS:-1}
gpu=${RESTART_GPU_BACKEND:-cuda}
ranks_of() { [ "$1" = host ] && echo 2 || echo "$gpu_ranks"; }
steps_of() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["steps"])' "$1"; }

for name in bw_poly_heat3d bw_heat2d bw_wave3d; do
  case=$TESSERA_SOURCE/tests/cases/$name.yaml
  case "$name" in bw_poly_*) tol=0 what="bitwise identical to" ;; *) tol=1e-13 what="within 1e-13 of" ;; esac
  # host to host is a restart on one backend: bitwise whatever the expressions
  [ "$gpu" = host ] && tol=0 what="bitwise identical to"
  # the uninterrupted runs, one per backend
  for be in "$gpu" host; do
    run_ok "$name $be" "$(ranks_of $be)" "$case" --out "$work/$name-ref-$be" --backend "$be" \
      --set output.io=serial || continue 2
  done
  if [ "$gpu" = cuda ] && ! grep -q '"backend": "cuda"' "$work/$name-ref-cuda/report.json"; then
    failure "$name: the cuda run's report does not say cuda"
    continue
  fi
  n=$(steps_of "$work/$name-ref-host/report.json")
  half=$((n / 2))
  ckpt=$(printf 'checkpoint_%08d.h5' "$half")
  for legs in "$gpu host" "host $gpu"; do
    set -- $legs
    first=$1 second=$2 out=$work/$name-$1-$2
    run_ok "$name: $first checkpointing" "$(ranks_of $first)" "$case" --out "$out" --backend "$first" \
      --set output.io=serial --set output.checkpoint_every="$half" || continue
    [ "$(cat "$out/latest" 2>/dev/null)" = "$ckpt" ] || { failure "$name: $first: latest does not name $ckpt"; continue; }
    rm "$out/final.h5"
    log=$("$MPIEXEC" -n "$(ranks_of $second)" "$TESSERA_BIN" run "$case" --out "$out" --backend "$second" \
      --set output.io=serial --restart latest 2>&1) ||
      { echo "$log" | tail -5; failure "$name: restart $first -> $second exited non-zero"; continue; }
    echo "$log" | grep -q "restart: from '$out/$ckpt' (step $half)" ||
      { echo "$log" | head -3; failure "$name: restart $first -> $second: no restart line"; continue; }
    grep -q "\"backend\": \"$second\"" "$out/report.json" ||
      { failure "$name: restart leg's report does not say $second"; continue; }
    if same_fields "$work/$name-ref-$second/final.h5" "$out/final.h5" "$tol"; then
      pass "$name: checkpoint at $half on $first, restart on $second: $what an uninterrupted $second run"
    else
      failure "$name: checkpoint on $first, restart on $second: not $what an uninterrupted $second run"
    fi
  done
done
finish

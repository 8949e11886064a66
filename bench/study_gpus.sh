#!/usr/bin/env bash
# The multi-GPU study of one machine (4 or 8 GPUs; it runs on fewer too), one phase per device
# call (a call may run 600 s):
#   usage: bench/study_gpus.sh tests1|tests2|tests:N|scaling [BUILD_DIR] [OUT_DIR]  (after building)
# tests1:  the gpu-labelled tests of one GPU (ctest -L gpu -LE gpu2; 9 tests, about 470 s on
#          an H200).
# tests2:  those of two GPUs (ctest -L gpu2; 8 tests, about 570 s on nvidia-h200-x2).
# tests:N: the end-to-end scripts that take a GPU count, on N GPUs: bitwise equal to 1 GPU
#          across counts and partitioners (bitwise_gpu.sh), CUDA graphs (graphs_gpu.sh),
#          restarts across backends (restart_backend_gpu.sh); STUDY_SCRIPTS picks some of them
#          (default "bitwise graphs restart_backend") where all three do not fit one call.
# scaling: bench/scaling.py --steady on STUDY_GPUS for strong2d (20480^2), weak3d (512^3 per
#          GPU) and strong3d (1024^3), fp64: CSV, markdown and PNG per study.
# STUDY_GPUS: the GPU counts of scaling (default 1 2 4 8, cut at what nvidia-smi lists).
# STUDY_SCALE=K divides every grid length by K and STUDY_STEPS sets the steps (default 1000):
# a smoke run of the plumbing, whose figures mean nothing. Logs and results go to OUT_DIR
# (default /tmp/study_gpus; scaling writes 12 files, more than the device tool brings back: tar
# them under $OUT); a summary is printed last, and the exit code is non-zero when a test or a
# run failed.
set -u
phase=${1:?usage: bench/study_gpus.sh tests1|tests2|tests:N|scaling [BUILD_DIR] [OUT_DIR]}
B=$(cd "${2:-build-gpu}" && pwd) || exit 2
O=${3:-/tmp/study_gpus}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$O"
have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
counts=()
for n in ${STUDY_GPUS:-1 2 4 8}; do [ "$n" -le "$have" ] && counts+=("$n"); done
[ ${#counts[@]} -gt 0 ] || { echo "study_gpus: no GPU count in '${STUDY_GPUS:-1 2 4 8}' fits the $have GPUs here" >&2; exit 2; }
export TESSERA_BIN=$B/tessera TESSERA_SOURCE=$src MPIEXEC=${MPIEXEC:-mpirun}
summary=()
failed=0
note() { summary+=("$1"); }
case $phase in
tests1 | tests2)
  if [ "$phase" = tests1 ]; then sel=(-L gpu -LE gpu2); else sel=(-L gpu2); fi
  if [ "$phase" = tests2 ] && [ "$have" -lt 2 ]; then
    note "ctest -L gpu2: not run, $have GPU here"
  else
    start=$(date +%s)
    ctest --test-dir "$B" "${sel[@]}" --output-on-failure >"$O/ctest_$phase.txt" 2>&1 || failed=1
    note "ctest ${sel[*]}: $(grep -E 'tests passed|tests failed' "$O/ctest_$phase.txt" | tail -1) ($(( $(date +%s) - start )) s)"
  fi
  ;;
tests:*)
  n=${phase#tests:}
  case $n in '' | *[!0-9]*) echo "study_gpus: tests:N wants a GPU count, got '$phase'" >&2; exit 2 ;; esac
  [ "$n" -le "$have" ] || { echo "study_gpus: tests:$n but $have GPUs here" >&2; exit 2; }
  for t in ${STUDY_SCRIPTS:-bitwise graphs restart_backend}; do
    start=$(date +%s)
    GPU_RANKS=$n bash "$src/tests/gpu/${t}_gpu.sh" >"$O/${t}_np$n.txt" 2>&1 || failed=1
    note "${t}_gpu.sh on $n GPUs: $(tail -1 "$O/${t}_np$n.txt") ($(( $(date +%s) - start )) s)"
  done
  ;;
scaling)
  for study in strong2d weak3d strong3d; do
    start=$(date +%s)
    python3 "$src/bench/scaling.py" --gpus "${counts[@]}" --study "$study" --steady \
      --steps "${STUDY_STEPS:-1000}" --scale "${STUDY_SCALE:-1}" --tessera "$B/tessera" \
      --out "$O" >"$O/$study.txt" 2>&1; rc=$?
    rm -rf "$O"/run_"$study"_* "$O/$study"_*gpu.yaml
    [ $rc = 0 ] || failed=1
    note "$study on ${counts[*]} GPUs: exit $rc ($(( $(date +%s) - start )) s); $O/$study.md"
  done
  ;;
*) echo "study_gpus: unknown phase '$phase': tests1, tests2, tests:N or scaling" >&2; exit 2 ;;
esac
echo "study_gpus $phase on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x $have, $(date -u +%F)"
for l in "${summary[@]}"; do echo "  $l"; done
[ "$phase" = scaling ] && for study in strong2d weak3d strong3d; do [ -f "$O/$study.md" ] && { echo "$study:"; cat "$O/$study.md"; }; done
exit $failed

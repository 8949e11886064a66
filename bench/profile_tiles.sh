#!/usr/bin/env bash
# What bounds the time tiles (bench/gpu_tiles): Nsight Compute on the single-step kernel and on
# passes of 3 and 5 steps (2D 20480^2, or 3D 512^3 with DIM=3; fp64 and fp32): DRAM bytes
# (bytes per cell per step), instructions executed per cell, issue activity, occupancy and warp
# stall reasons.
#   usage: [DIM=3] bench/profile_tiles.sh [BUILD_DIR] [OUT_DIR]  (on a GPU machine; ncu on PATH)
# Writes OUT_DIR/profile_tiles.txt. --clock-control none: the clocks the benchmark runs at.
set -eu
B=${1:-build-gpu}
O=${2:-/tmp/profile_tiles}
DIM=${DIM:-2}
K1=stage_kernel KP=steps_kernel # the single step's kernel and the pass's
[ "$DIM" = 3 ] && K1='tile_kernel|stage_kernel' KP=steps3_kernel
mkdir -p "$O"
log=$O/profile_tiles.txt
: >"$log"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
M=$M,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
M=$M,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active
M=$M,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
M=$M,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem
prof() { # what, kernel regex, launches to skip, command...
  local what=$1 k=$2 s=$3
  shift 3
  echo "=== $what" | tee -a "$log"
  ncu --clock-control none -k "regex:$k" -s "$s" -c 1 --metrics "$M" --section WarpStateStats \
    --print-details all "$@" >>"$log" 2>&1 || echo "ncu failed: $what" | tee -a "$log"
}
for p in double single; do
  prof "1 step $p" "$K1" 2 "$B/bench/gpu_tiles" --dim "$DIM" --steps 30 --only 3 --precision "$p"
  for m in 3 5; do
    prof "$m steps $p" "$KP" 2 "$B/bench/gpu_tiles" --dim "$DIM" --steps 30 --only $m --precision "$p"
  done
done
grep -E "^===|gpu__time|dram__bytes|dram__throughput|inst_executed|warps_active|issue_active|fp64|wavefronts|bank_conflicts|registers_per|occupancy_limit|Stall" "$log" | head -150

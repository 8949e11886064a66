#!/usr/bin/env bash
# Why the stage kernels stop short of the copy ceiling (bench/README.md, gpu_stencil): Nsight
# Compute on the stage kernels of bench/gpu_stencil (2D 20480^2 and 3D 512^3, fp64 and fp32),
# on the boundary fill of a 512^3 tessera run, and on a plain copy kernel of the same bytes
# (bench/copy_kernel.cu), all with the same metrics: DRAM bytes and throughput, L2 throughput
# broken into its sub-units, L1/L2 requests, occupancy, issue activity and warp stall reasons.
#   usage: bench/profile_stage.sh [BUILD_DIR] [OUT_DIR]     (on a GPU machine; ncu on PATH)
# Writes OUT_DIR/profile_stage.txt (ncu's report per kernel). --clock-control none: the clocks
# the benchmarks run at.
set -eu
B=${1:-build-gpu}
O=${2:-/tmp/profile_stage}
mkdir -p "$O"
log=$O/profile_stage.txt
: >"$log"
copy=$B/bench/copy_kernel # built with the benchmarks (bench/CMakeLists.txt)
"$copy" | tee -a "$log"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
M=$M,dram__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum
M=$M,lts__t_requests_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_write.sum
M=$M,lts__t_sectors_srcunit_ltcfabric.sum,l1tex__t_sector_hit_rate.pct
M=$M,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active
M=$M,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem
M=$M,breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,breakdown:dram__throughput.avg.pct_of_peak_sustained_elapsed
prof() { # what, kernel regex, launches to skip, command...
  local what=$1 k=$2 s=$3
  shift 3
  echo "=== $what" | tee -a "$log"
  ncu --clock-control none -k "regex:$k" -s "$s" -c 1 --metrics "$M" --section WarpStateStats \
    --section Occupancy --print-details all "$@" >>"$log" 2>&1 || echo "ncu failed: $what" | tee -a "$log"
}
prof "copy kernel, 1.09 GB" copy_kernel 2 "$copy"
for p in double single; do
  prof "2D stage $p" stage_kernel 3 "$B/bench/gpu_stencil" --precision "$p"
  prof "3D stage $p" tile_kernel 3 "$B/bench/gpu_stencil" --precision "$p"
done
cat >"$O/heat512.yaml" <<'YAML'
model: heat
backend: cuda
grid: {cells: [512, 512, 512]}
initial: {u: "x*(1 - x)*y*(1 - y)*z*(1 - z)"}
boundary: {default: {type: dirichlet, value: 0}}
time: {scheme: euler, dt: auto, steps: 10}
output: {monitor_every: 100, progress: none}
YAML
prof "boundary fill 512^3 fp64" apply 3 "$B/tessera" run "$O/heat512.yaml" --out "$O/run"
grep -E "^===|gpu__time|dram__throughput.avg.pct|dram__bytes|lts__t_sectors_srcunit|lts__throughput|l1tex__t_sector|warps_active|issue_active|registers_per|Stall|copy_kernel:" "$log" | head -200

#!/usr/bin/env bash
# compute-sanitizer (memcheck and racecheck) on a small case of each model with the CUDA
# backend, 2D and 3D (label gpu). Clean means: exit 0 and memcheck's "ERROR SUMMARY: 0 errors"
# (CUDA API calls that return an error on purpose, as NCCL's probing of the platform at
# communicator creation does, are not memory errors: --report-api-errors no), racecheck's
# "0 hazards displayed (0 errors, 0 warnings)".
set -u
. "$TESSERA_SOURCE/tests/scripts/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$cs" ] || { failure "compute-sanitizer not found"; finish; exit 1; }
# check NAME CASE ARGS...: memcheck and racecheck on one run (where NAME holds
# $SANITIZER_ONLY, when that is set: a part of the test, by hand)
check() {
  local name=$1 case=$2 tool log opts clean
  shift 2
  [[ $name == *"${SANITIZER_ONLY:-}"* ]] || return 0
  for tool in memcheck racecheck; do
    log="$work/$name-$tool.txt"
    if [ "$tool" = memcheck ]; then
      opts="--report-api-errors no" clean="ERROR SUMMARY: 0 errors"
    else
      opts="" clean="0 hazards displayed (0 errors, 0 warnings)"
    fi
    # shellcheck disable=SC2086
    if "$cs" --tool "$tool" $opts --error-exitcode 9 "$TESSERA_BIN" run "$case" --backend cuda \
         --out "$work/$name-$tool" "$@" >"$log" 2>&1 && grep -qF "$clean" "$log"; then
      pass "$name: $tool clean"
    else
      grep -v "Host Frame" "$log" | grep "=========" | head -20
      failure "$name: $tool"
    fi
  done
}
# each run GPU_TEST_JOBS at a time (spawn and gather: tests/scripts/lib.bash); a sanitized run is
# slow on the host (instrumenting every module), not on the GPU
for case in "$TESSERA_SOURCE"/tests/cases/bw_*.yaml; do
  spawn "$(basename "$case" .yaml)" check "$(basename "$case" .yaml)" "$case"
done
# grids large enough for the stage's shared-memory tiles (64 x 16 cells of the x-y plane), one
# and two components; racecheck sees the tiles' barrier
for name in bw_heat3d bw_wave3d; do
  spawn "$name-tiles" check "$name-tiles" "$TESSERA_SOURCE/tests/cases/$name.yaml" \
    --set "grid.cells=[70, 37, 6]"
done
# several steps a pass (time tiles: forward Euler, nothing that depends on t, no monitor inside
# a block of time.fuse 4: a pass of 3 and one step): the passes' pipelines, their shared planes
# and, in 3D, the input planes that cp.async copies into a ring, which racecheck sees
spawn bw_heat2d-passes check bw_heat2d-passes "$TESSERA_SOURCE/tests/cases/bw_heat2d.yaml" \
  --set "grid.cells=[70, 37]" --set time.scheme=euler --set source.u=x \
  --set boundary.ylo.value=x --set boundary.yhi.value=x --set time.fuse=4 \
  --set output.monitor_every=1000
spawn bw_heat3d-passes check bw_heat3d-passes "$TESSERA_SOURCE/tests/cases/bw_heat3d.yaml" \
  --set "grid.cells=[70, 37, 20]" --set time.fuse=4 --set output.monitor_every=1000
# SSP-RK3 passes (a step's three stages in one pass, the base kept in registers: the time.fuse
# 2 blocks' second step on a periodic box, every step where nothing is exchanged), one and two
# components, 2D and 3D
spawn bw_heat2d-ssp3-passes check bw_heat2d-ssp3-passes "$TESSERA_SOURCE/tests/cases/bw_heat2d.yaml" \
  --set "grid.cells=[70, 37]" --set time.scheme=ssp_rk3 --set source.u=x \
  --set boundary.ylo.value=x --set boundary.yhi.value=x --set time.fuse=2 \
  --set output.monitor_every=1000
spawn bw_wave3d-ssp3-passes check bw_wave3d-ssp3-passes "$TESSERA_SOURCE/tests/cases/bw_wave3d.yaml" \
  --set "grid.cells=[70, 37, 20]" --set time.fuse=2 --set output.monitor_every=1000
# and SSP-RK2's (two levels), two components
spawn bw_gray_scott2d-ssp2-passes check bw_gray_scott2d-ssp2-passes \
  "$TESSERA_SOURCE/tests/cases/bw_gray_scott2d.yaml" --set "grid.cells=[70, 37]" --set time.fuse=2 \
  --set output.monitor_every=1000
# and RK4's (four levels, the running sums in registers in 2D and in shared memory in 3D), one
# and two components
spawn bw_heat2d-rk4-passes check bw_heat2d-rk4-passes "$TESSERA_SOURCE/tests/cases/bw_heat2d.yaml" \
  --set "grid.cells=[70, 37]" --set time.scheme=rk4 --set source.u=x \
  --set boundary.ylo.value=x --set boundary.yhi.value=x --set time.fuse=2 \
  --set output.monitor_every=1000
spawn bw_wave3d-rk4-passes check bw_wave3d-rk4-passes "$TESSERA_SOURCE/tests/cases/bw_wave3d.yaml" \
  --set "grid.cells=[70, 37, 20]" --set time.scheme=rk4 --set time.fuse=2 \
  --set output.monitor_every=1000
# fp32 passes, whose levels sit on chip widened to double (TSR_STEPS_WIDE): in 3D (one
# component) after level 0's ring of floats in the same shared memory, RK4's running sums too
spawn bw_heat2d-f32-passes check bw_heat2d-f32-passes "$TESSERA_SOURCE/tests/cases/bw_heat2d.yaml" \
  --set "grid.cells=[70, 37]" --set precision=single --set time.scheme=euler --set source.u=x \
  --set boundary.ylo.value=x --set boundary.yhi.value=x --set time.fuse=4 \
  --set output.monitor_every=1000
spawn bw_heat3d-f32-rk4-passes check bw_heat3d-f32-rk4-passes "$TESSERA_SOURCE/tests/cases/bw_heat3d.yaml" \
  --set "grid.cells=[70, 37, 20]" --set precision=single --set time.scheme=rk4 --set time.fuse=2 \
  --set output.monitor_every=1000
# the PINN network's layers path (fp32, width 16, depth 4: every kernel of it, the last hidden
# layer's variants included; kernels/net_layer.cuh), a few Adam iterations; racecheck sees the
# tiles' barriers and the output's warp shuffles
spawn pinn2d-layers check pinn2d-layers "$TESSERA_SOURCE/cases/pinn_poisson2d.yaml" \
  --set "grid.cells=[16,16]" --set pinn.network.width=16 --set pinn.network.depth=4 \
  --set pinn.points.boundary=32 --set pinn.adam.iterations=4 --set pinn.log_every=2 \
  --set output.progress=none
# parareal with its slices sharing the GPU: each slice's fine solve in one launch of block
# steps (the default, kernels/block_steps.h: a cluster a slice, strips in shared memory), the
# batched fine solves (TESSERA_PARAREAL_FINE_BLOCK=off: tsr_stage_cuda_batch and
# tsr_bc_apply_cuda_batch, in one launch group and in groups of 2), the restriction,
# prolongation and correction kernels, the coarse steps in one block (coarse.h; as launches in
# the groups' case), 2D and 3D; and with a boundary value and a source that
# depend on t, which keep each slice on its own streams and graphs (batch.h)
cat >"$work/pr2d.yaml" <<'YAML'
model: heat
grid: {cells: [32, 24], lo: [0, 0], hi: [1, 1]}
initial: {u: "sin(pi*x)*sin(pi*y)"}
boundary: {default: {type: dirichlet, value: "0.1*x"}, xhi: {type: neumann, value: "0.5*y"}}
source: {u: "x*y"}
time: {scheme: ssp_rk3, dt: auto, steps: 32}
decomposition: {time_slices: 4}
parareal: {slices_per_rank: 4, coarsen: 2, max_iterations: 2}
output: {progress: none}
YAML
spawn parareal2d check parareal2d "$work/pr2d.yaml"
TESSERA_PARAREAL_FINE_BLOCK=off spawn parareal2d-launches check parareal2d-launches "$work/pr2d.yaml"
TESSERA_PARAREAL_FINE_BLOCK=off TESSERA_PARAREAL_BATCH=2 TESSERA_PARAREAL_COARSE_BLOCK=off \
  spawn parareal2d-groups check parareal2d-groups "$work/pr2d.yaml"
spawn parareal2d-timed check parareal2d-timed "$work/pr2d.yaml" \
  --set boundary.default.value="0.1*t" --set source.u="sin(2*pi*t)*x*y"
spawn parareal3d check parareal3d "$TESSERA_SOURCE/tests/cases/bw_heat3d.yaml" \
  --set "grid.cells=[16, 16, 8]" --set time.steps=16 --set decomposition.time_slices=4 \
  --set parareal.slices_per_rank=4 --set parareal.coarsen=2 --set parareal.max_iterations=2
gather
# the runs above took the paths they are there for
batched() { # NAME WHAT: the run's progress says WHAT about the batches
  [ -f "$work/$1-memcheck.txt" ] || return 0 # left out by SANITIZER_ONLY
  if grep -q "$2" "$work/$1-memcheck.txt"; then pass "$1: $2"
  else grep "^parareal:" "$work/$1-memcheck.txt"; failure "$1: not '$2'"; fi
}
batched parareal2d "each slice's steps in one GPU launch"
batched parareal2d-launches "batched launches of 4 at a time"
batched parareal2d-groups "batched launches of 2 at a time"
batched parareal3d "each slice's steps in one GPU launch"
batched parareal2d "a slice's steps in one GPU launch"
batched parareal3d "a slice's steps in one GPU launch"
if [ -f "$work/parareal2d-groups-memcheck.txt" ]; then
  grep -q "in one GPU launch" "$work/parareal2d-groups-memcheck.txt" &&
    failure "parareal2d-groups: the coarse steps in one block with TESSERA_PARAREAL_COARSE_BLOCK=off" ||
    pass "parareal2d-groups: the coarse steps as launches (TESSERA_PARAREAL_COARSE_BLOCK=off)"
fi
if [ -f "$work/parareal2d-timed-memcheck.txt" ]; then
  grep -q "batched launches" "$work/parareal2d-timed-memcheck.txt" &&
    failure "parareal2d-timed: batched, with values that depend on t" ||
    pass "parareal2d-timed: each slice on its own streams"
fi
finish

#!/usr/bin/env bash
# GPU end-to-end (label gpu): parareal on the CUDA backend. Slices of one rank run together,
# each with its own context, streams and CUDA graphs, or in batched launches where nothing
# depends on t (the coarse grid's steps replayed as graphs too):
# - exactness: after k iterations the first k slice ends equal the serial GPU run's bits;
# - backends: the same parareal run on the GPU and on a CPU rank gives the same bits, in
#   double and single precision, on a case of polynomial expressions (the per-cell
#   arithmetic is one source for both);
# - the coarse steps and the fine solves in one GPU launch a slice: the bits of their launches
#   and of a CPU rank;
# - with GPU_RANKS=2 (label gpu2): 2 groups of one GPU each equal 1 group, bit for bit; with
#   P_t = 2 groups the end state goes over NCCL, the result after 2 iterations is the serial
#   run's bits, and the MPI link (TESSERA_PARAREAL_LINK=mpi) gives the same bits.
set -u
. "$TESSERA_SOURCE/tests/scripts/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ranks=${GPU_RANKS:-1}
. "$TESSERA_SOURCE/tests/gpu/fields.bash"
same() { same_fields "$1" "$2" >/dev/null; }
snap() { printf '%s/snapshot_%08d.h5' "$1" "$2"; }
# exact_ends SERIAL RUN K: what is wrong with RUN's 4 slice ends (every 100 steps) after K
# iterations: ends 1..K must be SERIAL's bits, the others not yet (empty: nothing)
exact_ends() {
  local bad="" n
  for n in 1 2 3 4; do
    if [ $n -le $3 ]; then same "$(snap "$1" $((100 * n)))" "$(snap "$2" $((100 * n)))" || bad="$bad end$n-differs"
    else same "$(snap "$1" $((100 * n)))" "$(snap "$2" $((100 * n)))" && bad="$bad end$n-already-equal"
    fi
  done
  echo "$bad"
}
cat >"$work/heat.yaml" <<'YAML'
model: heat
grid: {cells: [64, 64], lo: [0, 0], hi: [1, 1]}
params: {kappa: 1.0}
initial: {u: "sin(pi*x)*sin(pi*y) + 0.3*sin(3*pi*x)*sin(2*pi*y)"}
boundary: {default: {type: dirichlet, value: 0}, xhi: {type: neumann, value: "0.5*y"}}
source: {u: "sin(2*pi*t)*x*y"}
time: {scheme: ssp_rk3, dt: auto, steps: 400}
output: {progress: none, snapshot_every: 100}
YAML
run_ok "serial" 1 "$work/heat.yaml" --out "$work/serial" --backend cuda || exit 1
for k in 1 2 4; do
  run_ok "gpu k=$k" 1 "$work/heat.yaml" --out "$work/k$k" --backend cuda \
    --set decomposition.time_slices=4 --set parareal.slices_per_rank=4 \
    --set parareal.max_iterations=$k --set parareal.tol=1e-300 || continue
  bad=$(exact_ends "$work/serial" "$work/k$k" "$k")
  if [ -z "$bad" ]; then pass "gpu exactness: after $k iteration(s) slice ends 1..$k are the serial run's bits"
  else failure "gpu exactness k=$k:$bad"; fi
done
# batched fine solves (solver/parareal/batch.h): nothing depends on t, so the slices of the
# rank step in batched launches and CUDA graphs of 32 steps; the same exactness, report.json
# says they ran, and equal and unequal slices give the bits of the unbatched path
sed -e 's/source: {u: "sin(2\*pi\*t)\*x\*y"}/source: {u: "x*y"}/' "$work/heat.yaml" >"$work/still.yaml"
grep -q 'u: "x\*y"' "$work/still.yaml" || failure "still.yaml: the source was not replaced"
run_ok "still serial" 1 "$work/still.yaml" --out "$work/still_serial" --backend cuda || exit 1
B="--set decomposition.time_slices=4 --set parareal.slices_per_rank=4 --set parareal.tol=1e-300"
for k in 1 2 4; do
  run_ok "batched k=$k" 1 "$work/still.yaml" --out "$work/b$k" --backend cuda $B \
    --set parareal.max_iterations=$k || continue
  grep -q '"fine_batched": *true' "$work/b$k/report.json" || { failure "batched k=$k: report.json says the batches did not run"; continue; }
  grep -q '"fine_block": *true' "$work/b$k/report.json" || { failure "batched k=$k: report.json says the fine solves were not block steps"; continue; }
  # slices sharing the GPU: the model's serial cost from a measured serial step
  if python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["parareal"]; sys.exit(not (0 < p["serial_step_seconds"] < 0.1 and p["predicted_speedup"] > 0))' "$work/b$k/report.json"; then
    pass "batched k=$k: report.json has a measured serial step and a prediction from it"
  else failure "batched k=$k: no measured serial step in report.json"; fi
  bad=$(exact_ends "$work/still_serial" "$work/b$k" "$k")
  if [ -z "$bad" ]; then pass "batched exactness: after $k iteration(s) slice ends 1..$k are the serial run's bits"
  else failure "batched exactness k=$k:$bad"; fi
done
# equal and unequal slices: the unbatched bits from each slice's steps in one launch of block
# steps (the default: 100 and 101 steps a slice in one launch), and with the block steps off
# from one batched launch of all 4 slices (auto) and from launch groups of 3 and 1 (batch.h:
# each group's steps before the next group's)
for steps in 400 402; do
  S="--set parareal.max_iterations=2 --set time.steps=$steps --set output.snapshot_every=1000000"
  TESSERA_PARAREAL_BATCH=off run_ok "unbatched $steps" 1 "$work/still.yaml" --out "$work/us$steps" \
    --backend cuda $B $S || continue
  grep -q '"fine_batched": *false' "$work/us$steps/report.json" ||
    { failure "unbatched $steps: report.json says the batches ran"; continue; }
  if run_ok "block $steps" 1 "$work/still.yaml" --out "$work/bb_$steps" --backend cuda $B $S; then
    if grep -q '"fine_block": *true' "$work/bb_$steps/report.json" &&
       same "$work/bb_$steps/final.h5" "$work/us$steps/final.h5"; then
      pass "fine solves as block steps and unbatched give the same bits ($steps steps in 4 slices)"
    else failure "fine solves as block steps differ from unbatched, or fine_block is not true ($steps steps)"; fi
  fi
  for g in auto 3; do
    TESSERA_PARAREAL_FINE_BLOCK=off TESSERA_PARAREAL_BATCH=$g run_ok "batched $g $steps" 1 "$work/still.yaml" \
      --out "$work/b${g}_$steps" --backend cuda $B $S || continue
    want=4
    [ $g = 3 ] && want=3
    if grep -q "\"batch_group\": *$want," "$work/b${g}_$steps/report.json" &&
       same "$work/b${g}_$steps/final.h5" "$work/us$steps/final.h5"; then
      pass "batched ($g: launch groups of $want) and unbatched fine solves give the same bits ($steps steps in 4 slices)"
    else failure "batched ($g) and unbatched fine solves differ, or the groups were not $want ($steps steps)"; fi
  done
done
# the backends' comparison on a case of polynomials: the device's sin and the host's libm may
# differ in the last bit of a double (the explicit method's backends agree under the same rule)
cat >"$work/poly.yaml" <<'YAML'
model: heat
grid: {cells: [64, 64], lo: [0, 0], hi: [1, 1]}
params: {kappa: 1.0}
initial: {u: "16*x*(1-x)*y*(1-y) + 0.5*x*y"}
boundary: {default: {type: dirichlet, value: 0}, xhi: {type: neumann, value: "0.5*y"}}
source: {u: "t*x*y"}
time: {scheme: ssp_rk3, dt: auto, steps: 400}
output: {progress: none}
YAML
for prec in double single; do
  P="--set decomposition.time_slices=8 --set parareal.max_iterations=2 --set parareal.tol=1e-300 --set precision=$prec"
  run_ok "gpu $prec" 1 "$work/poly.yaml" --out "$work/g_$prec" --backend cuda $P \
    --set parareal.slices_per_rank=8 || continue
  run_ok "host $prec" 1 "$work/poly.yaml" --out "$work/h_$prec" --backend host $P \
    --set parareal.slices_per_rank=8 || continue
  if same "$work/g_$prec/final.h5" "$work/h_$prec/final.h5"; then pass "backends: GPU and CPU parareal give the same bits ($prec)"
  else failure "backends: GPU and CPU parareal differ ($prec)"; fi
  if [ "$ranks" = 2 ]; then
    run_ok "gpu2 $prec" 2 "$work/poly.yaml" --out "$work/g2_$prec" --backend cuda $P \
      --set parareal.slices_per_rank=4 || continue
    if same "$work/g_$prec/final.h5" "$work/g2_$prec/final.h5"; then pass "2 GPUs (2 groups) equal 1 GPU ($prec)"
    else failure "2 GPUs differ from 1 ($prec)"; fi
  fi
done
# the coarse steps and the fine solves in one GPU launch a slice (solver/parareal/coarse.h,
# batch.h): where nothing depends on t a slice's steps are one launch of a cluster of blocks
# (strips of layers, 8 blocks or as many as layers: 8 and 6 here), each block's strip in its
# shared memory, the fine solves of all slices side by side. They must give the bits of the
# steps launched as kernels (TESSERA_PARAREAL_COARSE_BLOCK=off, TESSERA_PARAREAL_FINE_BLOCK=off)
# and of a CPU rank, for schemes of 1-4 stages (RK4's accumulator), 2D and 3D, one and two
# components, double and single; at 256^2 (8 blocks of 32 layers: 206 KB of shared memory
# each in double) and 320^2 (16 blocks: the non-portable cluster); and where the fields do
# not fit in shared memory (=on: one block in global memory)
cat >"$work/blk_heat.yaml" <<'YAML'
model: heat
grid: {cells: [64, 48], lo: [0, 0], hi: [1, 0.75]}
params: {kappa: 1.0}
initial: {u: "16*x*(1-x)*y*(1-y) + 0.5*x*y"}
boundary: {default: {type: dirichlet, value: "0.25*x"}, xhi: {type: neumann, value: "0.5*y"}}
source: {u: "x*y"}
time: {scheme: ssp_rk3, dt: auto, steps: 240}
output: {progress: none}
YAML
cat >"$work/blk_ac.yaml" <<'YAML'
model: allen_cahn
grid: {cells: [20, 16, 12]}
params: {eps: 0.2}
initial: {u: "x*(1-x)*y - 0.5*z*z + 0.1"}
boundary: {default: {type: neumann, value: 0}, zlo: {type: dirichlet, value: "0.1*x"}}
time: {scheme: rk4, dt: auto, steps: 240}
output: {progress: none}
YAML
cat >"$work/blk_gs.yaml" <<'YAML'
model: gray_scott
grid: {cells: [48, 48]}
params: {Du: 2.0e-3, Dv: 1.0e-3, F: 0.04, k: 0.06}
initial: {u: "1 - 0.5*x*y*(1-x)*(1-y)", v: "0.25*x*(1-x)*y*(1-y) + 0.01*x"}
boundary: {default: {type: neumann, value: 0}}
time: {scheme: ssp_rk3, dt: auto, steps: 240}
output: {progress: none}
YAML
for cs in "heat double ssp_rk3" "heat single euler" "ac double rk4" "gs double ssp_rk2" "gs single ssp_rk3"; do
  set -- $cs
  y="$work/blk_$1.yaml" d="$work/blk_$1_$2_$3"
  K="--set decomposition.time_slices=4 --set parareal.slices_per_rank=4 --set parareal.max_iterations=2"
  K="$K --set parareal.tol=1e-300 --set precision=$2 --set parareal.coarse_scheme=$3"
  run_ok "block $cs" 1 "$y" --out "$d.block" --backend cuda $K || continue
  TESSERA_PARAREAL_COARSE_BLOCK=off TESSERA_PARAREAL_FINE_BLOCK=off run_ok "launches $cs" 1 "$y" \
    --out "$d.launch" --backend cuda $K || continue
  run_ok "host $cs" 1 "$y" --out "$d.host" --backend host $K || continue
  if grep -q '"coarse_block": *true' "$d.block/report.json" && grep -q '"coarse_block": *false' "$d.launch/report.json" &&
     grep -q '"fine_block": *true' "$d.block/report.json" && grep -q '"fine_block": *false' "$d.launch/report.json"; then
    if same "$d.block/final.h5" "$d.launch/final.h5" && same "$d.block/final.h5" "$d.host/final.h5"; then
      pass "coarse and fine steps in one launch ($cs): the bits of the launches and of a CPU rank"
    else failure "coarse and fine steps in one launch ($cs): the result differs from the launches' or the CPU rank's"; fi
  else failure "steps in one launch ($cs): report.json's coarse_block or fine_block is not true with the default and false with off"; fi
done
# A build for GPUs before sm_90 has no clusters (report.json's block_clusters; here, code for
# sm_80 run from its PTX): such a grid does not fit one block, so it is taken only with =on,
# one block in place, and must give the same bits.
for cells in 256 320; do
  K="--set decomposition.time_slices=4 --set parareal.slices_per_rank=4 --set parareal.max_iterations=2"
  K="$K --set parareal.tol=1e-300 --set grid.cells=[$cells,$cells] --set time.steps=42"
  d="$work/fblk_$cells"
  run_ok "fine block $cells" 1 "$work/blk_heat.yaml" --out "$d.block" --backend cuda $K || continue
  how=default blk=$d.block
  if grep -q '"block_clusters": *false' "$d.block/report.json"; then
    grep -q '"fine_block": *false' "$d.block/report.json" ||
      failure "fine solves at ${cells}^2 without clusters: taken by default, though the grid needs a cluster"
    how="=on, without clusters" blk=$d.on
    TESSERA_PARAREAL_FINE_BLOCK=on run_ok "fine block on $cells" 1 "$work/blk_heat.yaml" --out "$blk" \
      --backend cuda $K || continue
  fi
  TESSERA_PARAREAL_FINE_BLOCK=off run_ok "fine launches $cells" 1 "$work/blk_heat.yaml" --out "$d.launch" \
    --backend cuda $K || continue
  if grep -q '"fine_block": *true' "$blk/report.json" && same "$blk/final.h5" "$d.launch/final.h5"; then
    pass "fine solves in one launch a slice at ${cells}^2 (double, SSP-RK3, $how): the launches' bits"
  else failure "fine solves in one launch at ${cells}^2: not taken, or the bits differ from the launches'"; fi
done
K="--set decomposition.time_slices=4 --set parareal.slices_per_rank=4 --set parareal.max_iterations=2"
K="$K --set parareal.tol=1e-300 --set parareal.coarse_scheme=euler --set parareal.coarsen=2"
K="$K --set grid.cells=[1280,1280] --set time.steps=40"
d="$work/blk_big"
if TESSERA_PARAREAL_COARSE_BLOCK=on TESSERA_PARAREAL_FINE_BLOCK=on run_ok "block big" 1 "$work/blk_heat.yaml" \
     --out "$d.block" --backend cuda $K &&
   TESSERA_PARAREAL_COARSE_BLOCK=off TESSERA_PARAREAL_FINE_BLOCK=off run_ok "launches big" 1 "$work/blk_heat.yaml" \
     --out "$d.launch" --backend cuda $K &&
   run_ok "default big" 1 "$work/blk_heat.yaml" --out "$d.auto" --backend cuda $K; then
  if grep -q '"coarse_block": *true' "$d.block/report.json" && grep -q '"coarse_block": *false' "$d.auto/report.json" &&
     grep -q '"fine_block": *true' "$d.block/report.json" && grep -q '"fine_block": *false' "$d.auto/report.json" &&
     same "$d.block/final.h5" "$d.launch/final.h5"; then
    pass "coarse and fine steps in one block in global memory (640^2 coarse, 1280^2 fine, =on): the launches' bits; not taken by default"
  else failure "steps in global memory (=on): bits differ, or coarse_block / fine_block not true with on and false by default"; fi
fi
TESSERA_PARAREAL_COARSE_BLOCK=sideways "$TESSERA_BIN" run "$work/blk_heat.yaml" --out "$work/blk_bad" \
  --backend cuda --set decomposition.time_slices=4 --set parareal.slices_per_rank=4 >"$work/blk_bad.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "TESSERA_PARAREAL_COARSE_BLOCK=sideways" "$work/blk_bad.log"; then
  pass "TESSERA_PARAREAL_COARSE_BLOCK=sideways: refused, naming the variable (exit $rc)"
else failure "TESSERA_PARAREAL_COARSE_BLOCK=sideways: rc $rc, $(tail -1 "$work/blk_bad.log")"; fi
TESSERA_PARAREAL_FINE_BLOCK=2 "$TESSERA_BIN" run "$work/blk_heat.yaml" --out "$work/fblk_bad" \
  --backend cuda --set decomposition.time_slices=4 --set parareal.slices_per_rank=4 >"$work/fblk_bad.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "TESSERA_PARAREAL_FINE_BLOCK=2: expected off, auto or on" "$work/fblk_bad.log" &&
   [ ! -e "$work/fblk_bad/final.h5" ]; then
  pass "TESSERA_PARAREAL_FINE_BLOCK=2: refused, naming the variable (exit $rc), no final.h5"
else failure "TESSERA_PARAREAL_FINE_BLOCK=2: rc $rc, $(tail -1 "$work/fblk_bad.log")"; fi
# 2 groups of one GPU each (P_t = 2): the end state goes GPU to GPU over NCCL (link.h); after
# k = P_t iterations the whole run is the serial run's bits, report.json names the link, and
# the MPI link through host memory (TESSERA_PARAREAL_LINK=mpi) gives the same bits
if [ "$ranks" = 2 ]; then
  L="--set decomposition.time_slices=2 --set parareal.slices_per_rank=1 --set parareal.max_iterations=2"
  L="$L --set parareal.tol=1e-300 --set output.snapshot_every=1000000"
  if run_ok "link nccl" 2 "$work/heat.yaml" --out "$work/l_nccl" --backend cuda $L &&
     TESSERA_PARAREAL_LINK=mpi run_ok "link mpi" 2 "$work/heat.yaml" --out "$work/l_mpi" --backend cuda $L; then
    grep -q '"link": *"nccl"' "$work/l_nccl/report.json" && pass "link: 2 groups on 2 GPUs use NCCL (report.json)" ||
      failure "link: report.json of 2 groups on 2 GPUs does not say nccl"
    grep -q '"link": *"mpi"' "$work/l_mpi/report.json" && pass "link: TESSERA_PARAREAL_LINK=mpi takes MPI (report.json)" ||
      failure "link: TESSERA_PARAREAL_LINK=mpi did not take MPI"
    grep -q '"iterations": *2' "$work/l_nccl/report.json" || failure "link: not 2 iterations"
    if same "$work/serial/final.h5" "$work/l_nccl/final.h5"; then pass "link nccl: after P_t = 2 iterations the serial run's bits"
    else failure "link nccl: after P_t = 2 iterations the result differs from the serial run"; fi
    if same "$work/l_nccl/final.h5" "$work/l_mpi/final.h5"; then pass "link: NCCL and MPI give the same bits"
    else failure "link: NCCL and MPI differ"; fi
  fi
fi
# checkpoints on the GPU: 3 iterations straight against a signal after iteration 1 (iteration
# 2 is dropped at its start, the run stops with iteration 1's checkpoint) continued from it,
# bit for bit
C="--set decomposition.time_slices=4 --set parareal.slices_per_rank=4 --set parareal.max_iterations=3"
C="$C --set parareal.tol=1e-300 --set output.checkpoint_every=1 --set output.snapshot_every=1000"
if run_ok "gpu checkpoints straight" 1 "$work/heat.yaml" --out "$work/cs" --backend cuda $C; then
  "$MPIEXEC" -n 1 "$TESSERA_BIN" run "$work/heat.yaml" --out "$work/ck" --backend cuda $C \
    --inject-fault rank=0,step=1,kind=signal >"$work/ck.log" 2>&1
  rc=$?
  if [ $rc = 4 ] && [ "$(cat "$work/ck/latest")" = parareal_0001.h5 ] &&
     run_ok "gpu continued" 1 "$work/heat.yaml" --out "$work/ck" --backend cuda $C \
       --restart latest && same "$work/cs/final.h5" "$work/ck/final.h5"; then
    pass "gpu checkpoints: iteration 2 dropped on a signal (exit 4), continued from 1, the same bits"
  else tail -3 "$work/ck.log"; failure "gpu checkpoints (rc $rc)"; fi
fi
finish

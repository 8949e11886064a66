#!/usr/bin/env bash
# GPU recovery (labels gpu, gpu2: two GPUs). On the CUDA backend under tessera supervise: a rank
# that exits, and a rank that hangs (its watchdog reports it within comm.timeout, aborts the
# NCCL communicator and the job), both end with final fields bitwise equal to an uninterrupted
# 2-GPU run; and the hang is not left waiting in NCCL (the attempt ends), with plain launches
# and with the steps replayed as CUDA graphs.
set -u
. "$TESSERA_SOURCE/tests/scripts/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
B=$TESSERA_BIN
cat >"$work/heat3d.yaml" <<'YAML'
model: heat
grid: {cells: [48, 40, 36]}
initial: {u: "x*(1 - x)*y*z + 0.5"}
time: {scheme: ssp_rk3, dt: auto, steps: 40}
output: {checkpoint_every: 10, keep: 2, progress: none, monitor_every: 5}
YAML
case=$work/heat3d.yaml
# same A B: the /fields datasets hold the same bits (h5diff, else h5py on machines without it)
same() {
  if command -v h5diff >/dev/null; then h5diff -q "$2" "$3" /fields /fields >/dev/null 2>&1
  else
    python3 - "$2" "$3" <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r")["fields"], h5py.File(sys.argv[2], "r")["fields"]
sys.exit(0 if sorted(a) == sorted(b) and all(
    np.array_equal(a[k][...].view(np.uint64), b[k][...].view(np.uint64)) for k in a) else 1)
PY
  fi && pass "$1" || failure "$1"
}
run_ok "reference 2 GPUs" 2 "$case" --out "$work/ref" --backend cuda || { finish; exit 1; }
ref=$work/ref/final.h5

out=$work/exit
log=$("$B" supervise -- "$MPIEXEC" -n 2 "$B" run "$case" --backend cuda --out "$out" \
  --inject-fault rank=1,step=15,kind=exit 2>&1); rc=$?
if [ $rc = 0 ] && echo "$log" | grep -qF "restart: from '$out/checkpoint_00000010.h5'"; then
  same "cuda exit: relaunched from 10, final = uninterrupted" "$ref" "$out/final.h5"
else echo "$log" | tail -20; failure "cuda exit: rc $rc"; fi

# a hang with plain launches (gpu.graphs auto is off on 2 GPUs) and with the exchange inside
# replayed CUDA graphs
T=5
for graphs in auto on; do
  out=$work/hang-$graphs
  start=$(date +%s)
  log=$(timeout 100 "$B" supervise -- "$MPIEXEC" -n 2 "$B" run "$case" --backend cuda --out "$out" \
    --set gpu.graphs=$graphs --set comm.timeout=$T --inject-fault rank=1,step=15,kind=hang 2>&1); rc=$?
  echo "hang, gpu.graphs $graphs: supervise took $(( $(date +%s) - start )) s"
  if [ $rc = 0 ] && echo "$log" | grep -qF "tessera: watchdog: rank 1 stopped"; then
    same "cuda hang (gpu.graphs $graphs): watchdog named rank 1, final = uninterrupted" "$ref" "$out/final.h5"
  else echo "$log" | tail -30; failure "cuda hang (gpu.graphs $graphs): rc $rc"; fi
done
finish

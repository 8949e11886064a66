#!/usr/bin/env bash
# tessera probe on real GPUs (label gpu; any GPU count): it counts what nvidia-smi lists, each
# GPU usable, on one node; CUDA_VISIBLE_DEVICES narrows it (one GPU, none); and under tessera
# supervise a CUDA run whose rank exits is recovered bitwise after a probe through the launcher
# that found every GPU (so nothing is shrunk).
set -u
. "$TESSERA_SOURCE/tests/scripts/lib.bash"
. "$TESSERA_SOURCE/tests/gpu/fields.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
B=$TESSERA_BIN
has() { # has LABEL TEXT PATTERN: the text contains the fixed string
  if printf '%s' "$2" | grep -qF -- "$3"; then pass "$1"
  else printf '%s\n' "$2" | tail -15; failure "$1 (no '$3')"; fi
}
n=$(nvidia-smi -L | grep -c '^GPU ')
log=$("$MPIEXEC" -n 1 "$B" probe 2>&1)
has "probe: every GPU nvidia-smi lists is usable" "$log" "tessera probe: total $n of $n GPUs usable on 1 node"
[ "$(printf '%s\n' "$log" | grep -c '^tessera probe: node ')" = 1 ] && pass "probe: one node line" || failure "probe: node lines"
log=$(CUDA_VISIBLE_DEVICES=0 "$MPIEXEC" -n 2 "$B" probe 2>&1)
has "probe: CUDA_VISIBLE_DEVICES=0, two ranks: one GPU, one node" "$log" "tessera probe: total 1 of 1 GPUs usable on 1 node"
log=$(CUDA_VISIBLE_DEVICES= "$MPIEXEC" -n 1 "$B" probe 2>&1); rc=$?
[ $rc = 0 ] && pass "probe: no GPU visible is not an error" || failure "probe: no GPU rc $rc"
has "probe: no GPU visible" "$log" "tessera probe: total 0 of 0 GPUs usable on 1 node"

heat_case "$work/heat2d.yaml" 64 48
case=$work/heat2d.yaml
run_ok "reference 1 GPU" 1 "$case" --out "$work/ref" --backend cuda || { finish; exit 1; }
out=$work/exit
log=$(CUDA_VISIBLE_DEVICES=0 "$B" supervise -- "$MPIEXEC" -n 1 "$B" run "$case" --backend cuda \
  --out "$out" --inject-fault rank=0,step=5,kind=exit 2>&1); rc=$?
[ $rc = 0 ] && pass "supervise: ends with 0" || { printf '%s\n' "$log" | tail; failure "supervise: rc $rc"; }
has "supervise: the probe found the GPU" "$log" "tessera supervise: 1 usable GPU on 1 node"
has "supervise: restarted from 3 on as many ranks" "$log" "restart: from '$out/checkpoint_00000003.h5'"
if printf '%s' "$log" | grep -q "relaunching on .* ranks instead"; then failure "supervise: shrank with no GPU lost"
else pass "supervise: no shrink when nothing was lost"; fi
if same_fields "$work/ref/final.h5" "$out/final.h5"; then
  pass "supervise: final = uninterrupted"
else failure "supervise: final differs"; fi
finish

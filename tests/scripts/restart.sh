#!/usr/bin/env bash
# Checkpoint/restart: a run restarted from a checkpoint on another decomposition ends bitwise
# equal to an uninterrupted run; `latest` falls back past a damaged checkpoint; a checkpoint of
# another case is refused; checkpoint datasets carry Fletcher32 checksums. Checkpoints are
# written by a background thread (the default) except where a leg says otherwise: background
# and synchronous checkpoints hold the same data, and a background write that fails (full disk)
# stops the run with a message naming the file while the previous checkpoint stays good.
set -u
. "$(dirname "$0")/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/heat2d.yaml" <<'YAML'
model: heat
grid: {cells: [40, 34], lo: [0, -1], hi: [2, 1], periodic: [true, false]}
params: {kappa: 0.7, a: 0.3}
initial: {u: "sin(pi*x)*cos(0.5*pi*y) + a*x*y"}
source: {u: "a*sin(t + x)*y"}
boundary: {ylo: {type: dirichlet, value: "a*sin(3*t)*cos(pi*x)"}, yhi: {type: neumann, value: "0.1*t + x"}}
time: {scheme: rk4, dt: auto, steps: 12}
output: {checkpoint_every: 3, keep: 3}
YAML
cat >"$work/wave3d.yaml" <<'YAML'
model: wave
grid: {cells: [10, 12, 11], periodic: true}
initial: {u: "exp(-30*(pow(x - 0.5, 2) + pow(y - 0.5, 2) + pow(z - 0.5, 2)))", v: "0"}
time: {scheme: ssp_rk3, dt: auto, steps: 12}
output: {checkpoint_every: 3, keep: 3}
YAML
same() { # same LABEL A B: final fields bitwise equal
  if h5diff -q "$2" "$3" /fields /fields >/dev/null 2>&1; then pass "$1"
  else h5diff -r "$2" "$3" /fields /fields 2>&1 | head -5; failure "$1"; fi
}
for name in heat2d wave3d; do
  case=$work/$name.yaml ref=$work/$name-ref out=$work/$name-ckpt
  run_ok "$name np1" 1 "$case" --out "$ref" || continue
  # the checkpointing leg writes rank by rank (output.io: serial), the serial-HDF5 builds' path,
  # and the restart below reads those files back in parallel
  run_ok "$name np2 checkpointing" 2 "$case" --out "$out" --set output.io=serial || continue
  # keep 3 of 3, 6, 9 (none at the last step); latest names the newest
  [ "$(ls "$out" | grep -c '^checkpoint_.*\.h5$')" = 3 ] && [ -f "$out/checkpoint_00000003.h5" ] &&
    [ -f "$out/checkpoint_00000009.h5" ] && [ "$(cat "$out/latest")" = checkpoint_00000009.h5 ] &&
    pass "$name: checkpoints 3, 6, 9 and latest" || { ls "$out"; failure "$name: checkpoint files"; }
  rm "$out/final.h5"
  run_ok "$name restart 6 np3 slabs" 3 "$case" --out "$out" --restart "$out/checkpoint_00000006.h5" \
    --set decomposition.partition=slabs && same "$name: restart from 6 on 3 ranks (slabs) = uninterrupted" "$ref/final.h5" "$out/final.h5"
  # damage the newest: latest falls back to 6
  truncate -s 2000 "$out/checkpoint_00000009.h5"
  rm "$out/final.h5"
  if log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$out" --restart latest 2>&1); then
    if echo "$log" | grep -q "using the older '$out/checkpoint_00000006.h5'"; then pass "$name: latest falls back to 6"
    else echo "$log" | head; failure "$name: fallback message"; fi
    same "$name: restart from fallback = uninterrupted" "$ref/final.h5" "$out/final.h5"
  else echo "$log" | tail; failure "$name: --restart latest with a damaged newest"; fi
done
out=$work/heat2d-ckpt
# flipped data bytes: the checksum catches them
f=$out/checkpoint_00000006.h5
cp "$f" "$work/bad.h5"
size=$(stat -c %s "$work/bad.h5")
printf '\x55\x55\x55\x55\x55\x55\x55\x55' | dd of="$work/bad.h5" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/heat2d.yaml" --out "$work/bad" --restart "$work/bad.h5" 2>&1); rc=$?
if [ $rc = 2 ] && echo "$log" | grep -q "checksum error"; then pass "damaged data: checksum error, exit 2"
else echo "$log" | tail -3; failure "damaged data: rc $rc"; fi
# another case (a changed param) is refused
sed 's/kappa: 0.7/kappa: 0.8/' "$work/heat2d.yaml" >"$work/other.yaml"
log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/other.yaml" --out "$work/other" --restart "$f" 2>&1); rc=$?
if [ $rc = 2 ] && echo "$log" | grep -q "was written by a different case (hash"; then pass "other case refused, exit 2"
else echo "$log" | tail -3; failure "other case: rc $rc"; fi
log=$("$MPIEXEC" -n 1 "$TESSERA_BIN" run "$work/heat2d.yaml" --out "$work/other" --restart "$f" --set params.a=0.4 2>&1); rc=$?
[ $rc = 2 ] && echo "$log" | grep -q "different case" && pass "other --set refused" || failure "other --set: rc $rc"
if h5dump -p -H -d /fields/u "$f" | grep -q FLETCHER32; then pass "Fletcher32 on /fields/u"
else failure "no Fletcher32 on /fields/u"; fi

# background (default) and synchronous checkpoints of one run: the same data
case=$work/heat2d.yaml
if run_ok "heat2d async" 2 "$case" --out "$work/async" && run_ok "heat2d sync" 2 "$case" --out "$work/sync" --set output.checkpoint_async=false; then
  grep -q '"async": true' "$work/async/report.json" && grep -q '"async": false' "$work/sync/report.json" &&
    pass "report.json: checkpoints async true / false" || { grep -A3 checkpoints "$work/async/report.json"; failure "report.json checkpoints.async"; }
  for s in 3 6 9; do
    f=checkpoint_0000000$s.h5
    if h5diff -q "$work/async/$f" "$work/sync/$f" /fields /fields >/dev/null 2>&1; then pass "step $s: background = synchronous checkpoint"
    else h5diff -r "$work/async/$f" "$work/sync/$f" /fields /fields 2>&1 | head -5; failure "step $s: background != synchronous"; fi
  done
fi
# a full disk under a background write: checkpoint 6's temporary file leads to /dev/full. The run
# stops at the next checkpoint with a message naming the file, exits non-zero and does not hang;
# latest still names checkpoint 3, from which the run restarts and ends bitwise equal.
# (ranks in turn: the MPI-IO path's handling of a full disk is a separate matter)
full=$work/full
mkdir -p "$full" && ln -s /dev/full "$full/checkpoint_00000006.h5.tmp"
log=$(timeout 120 "$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$full" --set output.io=serial 2>&1); rc=$?
if [ $rc != 0 ] && [ $rc != 124 ] && echo "$log" | grep -q "checkpoint '$full/checkpoint_00000006.h5' was not written (background write)" &&
  echo "$log" | grep -q "No space left on device"; then pass "full disk in a background write: clear error, rc $rc"
else echo "$log" | grep -v '^step' | tail -5; failure "full disk in a background write: rc $rc"; fi
[ "$(cat "$full/latest")" = checkpoint_00000003.h5 ] && [ ! -e "$full/checkpoint_00000006.h5" ] && [ ! -e "$full/final.h5" ] &&
  pass "full disk: latest still names checkpoint 3, nothing else written" || { ls -l "$full"; failure "full disk: files left"; }
# the run fails in the step loop (the solution blows up) while a checkpoint is being written in
# the background (one every step): the writer is joined, the error is the loop's, no hang
log=$(timeout 120 "$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$work/blowup" --set time.dt=2 \
  --set time.steps=400 --set output.checkpoint_every=1 --set output.keep=1 --set output.monitor_every=1 2>&1); rc=$?
if [ $rc = 2 ] && echo "$log" | grep -q "became non-finite"; then pass "failure beside a background write: exit 2, no hang"
else echo "$log" | grep -v '^step' | tail -3; failure "failure beside a background write: rc $rc"; fi
run_ok "restart after the full disk" 2 "$case" --out "$full" --restart latest &&
  same "restart from checkpoint 3 after the full disk = uninterrupted" "$work/heat2d-ref/final.h5" "$full/final.h5"
finish

#!/usr/bin/env bash
# Snapshots and schedules: output.snapshot_every by steps and by simulated time writes the
# initial state and the due steps, the same files on 1 and 2 ranks (parallel and ranks-in-turn
# HDF5), each holding the state of its step; time-based checkpoints land on the expected steps
# (never the last); single precision stores float32 equal to the doubles rounded; the series'
# XDMF parses and names datasets that exist with the right dimensions; a restart after a killed
# run deletes the snapshots it wrote past the checkpoint and the series ends as an uninterrupted
# run's; bad schedules exit 2.
set -u
. "$(dirname "$0")/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
check_xdmf() { python3 "$TESSERA_SOURCE/tests/scripts/xdmf_check.py" "$@"; }
# dt 2e-4 divides the periods below only up to rounding (3 * 2e-4 is 6.000000000000001e-4)
cat >"$work/heat.yaml" <<'YAML'
model: heat
grid: {cells: [24, 20], lo: [0, -1], hi: [1, 1]}
params: {kappa: 0.5}
initial: {u: "sin(pi*x)*y + 0.25*x*x"}
boundary: {ylo: {type: neumann, value: "x"}}
time: {dt: 2e-4, steps: 10}
output: {progress: none}
YAML
case=$work/heat.yaml
files() { (cd "$1" && ls | grep -E "^$2_[0-9]{8}\.h5$" | sed -E "s/^$2_0*([0-9]+)\.h5$/\1/" | sort -n | paste -sd, -); }
expect_files() { # LABEL DIR PREFIX STEPS
  local got
  got=$(files "$2" "$3")
  [ "$got" = "${4:-}" ] && pass "$1: $3 files at steps ${4:-none}" || failure "$1: $3 files at steps '$got', expected '${4:-}'"
}
same() { # LABEL A B: /fields bitwise equal
  if h5diff -q "$2" "$3" /fields /fields >/dev/null 2>&1; then pass "$1"
  else h5diff -r "$2" "$3" /fields /fields 2>&1 | head -5; failure "$1"; fi
}

# by steps: the initial state, 4 and 8 (not 10: no multiple of 4); 1 rank, 2 ranks parallel
for np in 1 2; do
  run_ok "steps np$np" $np "$case" --out "$work/steps$np" --set output.snapshot_every=4 || continue
  expect_files "every 4 steps, np$np" "$work/steps$np" snapshot 0,4,8
  check_xdmf "$work/steps$np/snapshots.xmf" 0,4,8 8 && pass "every 4 steps, np$np: XDMF series" ||
    failure "every 4 steps, np$np: XDMF series"
done
for s in 00000000 00000004 00000008; do
  same "snapshot $s: 2 ranks = 1 rank" "$work/steps1/snapshot_$s.h5" "$work/steps2/snapshot_$s.h5"
done
# a snapshot holds the state of its step: snapshot 8 = the final fields of an 8-step run
run_ok "8 steps" 1 "$case" --out "$work/eight" --set time.steps=8 &&
  same "snapshot 8 = final state after 8 steps" "$work/eight/final.h5" "$work/steps1/snapshot_00000008.h5"
[ "$(h5dump -a /step "$work/steps1/snapshot_00000004.h5" | grep -c '(0): 4$')" = 1 ] &&
  pass "snapshot 4 says step 4" || failure "snapshot 4: step attribute"

# by simulated time, with checkpoints by time: snapshots after the steps that reach 6e-4,
# 1.2e-3, 1.8e-3 (3, 6, 9); checkpoints every 5e-4 at 3 (6e-4), 5 (1e-3 exactly), 8 (1.6e-3),
# none at the last step 10 (2e-3, which final.h5 holds). 2 ranks write in turn (output.io serial).
time_sets=(--set "output.snapshot_every={time: 6e-4}" --set "output.checkpoint_every={time: 5e-4}" --set output.keep=5)
for np in 1 2; do
  extra=()
  [ $np = 2 ] && extra=(--set output.io=serial)
  run_ok "time np$np" $np "$case" --out "$work/time$np" "${time_sets[@]}" "${extra[@]}" || continue
  expect_files "every 6e-4 in time, np$np" "$work/time$np" snapshot 0,3,6,9
  expect_files "checkpoints every 5e-4 in time, np$np" "$work/time$np" checkpoint 3,5,8
  check_xdmf "$work/time$np/snapshots.xmf" 0,3,6,9 8 && pass "by time, np$np: XDMF series" ||
    failure "by time, np$np: XDMF series"
done
for s in 00000003 00000006 00000009; do
  same "time snapshot $s: 2 ranks in turn = 1 rank" "$work/time1/snapshot_$s.h5" "$work/time2/snapshot_$s.h5"
done
same "checkpoint 5: 2 ranks in turn = 1 rank" "$work/time1/checkpoint_00000005.h5" "$work/time2/checkpoint_00000005.h5"

# single precision: float32 datasets holding the doubles rounded to float, on 2 ranks
run_ok "single np2" 2 "$case" --out "$work/single" --set output.snapshot_every=4 \
  --set output.snapshot_precision=single && {
  expect_files "single" "$work/single" snapshot 0,4,8
  h5dump -H -d /fields/u "$work/single/snapshot_00000004.h5" | grep -q H5T_IEEE_F32LE &&
    h5dump -H -d /fields/u "$work/steps1/snapshot_00000004.h5" | grep -q H5T_IEEE_F64LE &&
    pass "single: float32 datasets (double: float64)" || failure "single: dataset types"
  check_xdmf "$work/single/snapshots.xmf" 0,4,8 4 && pass "single: XDMF says Precision 4" ||
    failure "single: XDMF series"
  h5dump -d /fields/u -b LE -o "$work/d.bin" "$work/steps1/snapshot_00000008.h5" >/dev/null &&
    h5dump -d /fields/u -b LE -o "$work/f.bin" "$work/single/snapshot_00000008.h5" >/dev/null &&
    python3 - "$work/d.bin" "$work/f.bin" <<'PY' && pass "single: the doubles rounded to float" || failure "single: values"
import struct, sys
d = open(sys.argv[1], "rb").read(); f = open(sys.argv[2], "rb").read()
n = len(d) // 8
assert n == 24 * 20 and len(f) == 4 * n, (len(d), len(f))
dv = struct.unpack(f"<{n}d", d); fv = struct.unpack(f"<{n}f", f)
bad = [i for i in range(n) if struct.unpack("<f", struct.pack("<f", dv[i]))[0] != fv[i]]
assert not bad and any(v != 0 for v in fv), f"{len(bad)} values differ"
PY
}

# a new run in the same directory starts a new series
run_ok "rerun" 1 "$case" --out "$work/steps1" --set output.snapshot_every=5 &&
  check_xdmf "$work/steps1/snapshots.xmf" 0,5,10 8 && pass "a new run replaces the series" ||
  failure "new run: series"

# a run killed after checkpoint 4 leaves snapshots past it: the restart deletes them and says
# so; the series then lists each step once, in order, and its files equal an uninterrupted run's
k=$work/killed
ks=(--set output.snapshot_every=1 --set output.checkpoint_every=4)
run_ok "uninterrupted, a snapshot every step" 2 "$case" --out "$work/whole" "${ks[@]}"
"$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$k" "${ks[@]}" \
  --inject-fault rank=1,step=6,kind=exit >/dev/null 2>&1 && failure "killed run: exit 0"
stale=$(files "$k" snapshot | tr , '\n' | awk '$1 > 4' | wc -l)
if [ "$stale" -ge 1 ] && [ "$(cat "$k/latest" 2>/dev/null)" = checkpoint_00000004.h5 ]; then
  pass "killed run: $stale snapshots past its latest checkpoint (4)"
else failure "killed run: files $(ls "$k" | paste -sd' ' -)"; fi
log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$k" "${ks[@]}" --restart latest 2>&1); rc=$?
if [ $rc = 0 ] && [ "$(echo "$log" | grep -c "^restart: removed ")" = 1 ] &&
  echo "$log" | grep -qxF "restart: removed $stale snapshots after step 4 left by the earlier run"; then
  pass "restart: one line says the $stale later snapshots went"
else echo "$log" | tail -5; failure "restart: rc $rc, message"; fi
check_xdmf "$k/snapshots.xmf" 0,1,2,3,4,5,6,7,8,9,10 8 && pass "restart: series lists 0..10 once each, in order" ||
  failure "restart: series"
[ "$(grep -c '<Grid Name="snapshot_' "$k/snapshots.xmf")" = 11 ] && pass "restart: 11 entries" ||
  failure "restart: $(grep -c '<Grid Name="snapshot_' "$k/snapshots.xmf") entries"
expect_files "restart" "$k" snapshot 0,1,2,3,4,5,6,7,8,9,10
for s in 0 1 2 3 4 5 6 7 8 9 10; do
  f=$(printf 'snapshot_%08d.h5' $s)
  same "restart: $f = uninterrupted" "$work/whole/$f" "$k/$f"
done
# restarted with no snapshots to write, at 4: those after 4 go all the same
log=$("$MPIEXEC" -n 1 "$TESSERA_BIN" run "$case" --out "$k" --set output.checkpoint_every=4 \
  --restart "$k/checkpoint_00000004.h5" 2>&1) &&
  echo "$log" | grep -qxF "restart: removed 6 snapshots after step 4 left by the earlier run" &&
  [ "$(files "$k" snapshot)" = 0,1,2,3,4 ] && check_xdmf "$k/snapshots.xmf" 0,1,2,3,4 8 &&
  pass "restart without snapshot_every: later snapshots removed, series 0..4" ||
  { echo "$log" | tail -3; failure "restart without snapshot_every: files $(files "$k" snapshot)"; }

# none turns off a schedule the case file sets
sed 's/progress: none}/progress: none, snapshot_every: 2, checkpoint_every: 3}/' "$case" >"$work/sched.yaml"
run_ok "none" 1 "$work/sched.yaml" --out "$work/none" --set time.steps=6 \
    --set output.snapshot_every=none --set output.checkpoint_every=none &&
  if [ -e "$work/none/final.h5" ] && ! ls "$work"/none/snapshot_* "$work"/none/checkpoint_* >/dev/null 2>&1
  then pass "schedules set to none: no snapshot, no checkpoint"
  else failure "schedules set to none: $(ls "$work/none" | tr '\n' ' ')"; fi
# bad schedules: exit 2 with the place and the key
bad() { # LABEL MESSAGE ARGS...
  local label=$1 msg=$2 log rc
  shift 2
  log=$("$MPIEXEC" -n 1 "$TESSERA_BIN" run "$@" --out "$work/bad" 2>&1); rc=$?
  if [ $rc = 2 ] && echo "$log" | grep -qF -- "$msg"; then pass "$label: exit 2"
  else echo "$log" | tail -3; failure "$label: rc $rc"; fi
  [ ! -e "$work/bad" ] || { failure "$label: left $work/bad behind"; rm -rf "$work/bad"; }
}
bad "negative time" "--set output.snapshot_every={time: -1}: output.snapshot_every.time: must be > 0" \
  "$case" --set "output.snapshot_every={time: -1}"
bad "zero steps" "output.checkpoint_every: must be >= 1 steps, got 0" "$case" --set output.checkpoint_every=0
sed 's/progress: none}/progress: none, checkpoint_every: {steps: 2, time: 0.1}}/' "$case" >"$work/both.yaml"
bad "steps and time" "both.yaml:7:55: output.checkpoint_every: give either steps or time, not both" "$work/both.yaml"
sed 's/progress: none}/progress: none, snapshot_every: {tiem: 0.1}}/' "$case" >"$work/typo.yaml"
bad "misspelt subkey" "typo.yaml:7:43: unknown key 'output.snapshot_every.tiem' (did you mean 'output.snapshot_every.time'?)" "$work/typo.yaml"
bad "precision" "output.snapshot_precision: unknown value 'float'" "$case" --set output.snapshot_precision=float
finish

#!/usr/bin/env bash
# Batch jobs: a run that ended continues to a later end (time.end or time.steps, from final.h5
# or a checkpoint, on another rank count) bitwise equal to one run to that end; SIGTERM,
# SIGINT and SIGUSR1 (before the first step, while stepping, while a background checkpoint is
# written; to one rank, to every rank, to mpirun) stop a run with exit status 4, a checkpoint
# that `latest` names and no temporary file, and --restart latest finishes it bitwise equal to
# an uninterrupted run; so do HUP, USR2, XCPU and PIPE; a second signal, or QUIT, ends the run at
# once, leaving no temporary file and a `latest` that reads; a signal while the case is read
# ends the process; --walltime stops before its limit with a checkpoint.
set -u
. "$(dirname "$0")/lib.bash"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
case=$work/heat.yaml
cat >"$case" <<'YAML'
model: heat
grid: {cells: [48, 40], lo: [0, -1], hi: [2, 1], periodic: [true, false]}
params: {kappa: 0.7, a: 0.3}
initial: {u: "sin(pi*x)*cos(0.5*pi*y) + a*x*y"}
source: {u: "a*sin(t + x)*y"}
boundary: {ylo: {type: dirichlet, value: "a*sin(3*t)*cos(pi*x)"}, yhi: {type: neumann, value: "0.1*t + x"}}
time: {scheme: ssp_rk3, dt: 0.0005, end: 0.02}
output: {checkpoint_every: 10, keep: 2, progress: none}
YAML
same() { # LABEL A B: final fields bitwise equal
  if h5diff -q "$2" "$3" /fields /fields >/dev/null 2>&1; then pass "$1"
  else h5diff -r "$2" "$3" /fields /fields 2>&1 | head -5; failure "$1"; fi
}
no_tmp() { # LABEL DIR: no temporary file left
  local left
  left=$(find "$2" -name '*.tmp' 2>/dev/null)
  [ -z "$left" ] && pass "$1: no temporary file" || { echo "$left"; failure "$1: $left"; }
}

# --- continuing a run that ended ----------------------------------------------------------
run_ok "one run to t = 0.06" 2 "$case" --out "$work/ref" --set time.end=0.06
run_ok "to t = 0.02" 2 "$case" --out "$work/cont"
if log=$("$MPIEXEC" -n 3 "$TESSERA_BIN" run "$case" --out "$work/cont" --set time.end=0.06 \
         --restart latest 2>&1); then
  echo "$log" | grep -q "from '$work/cont/final.h5' (step 40), where the earlier run ended" &&
    echo "$log" | grep -q "continuing with time.end = 0.06 (the checkpoint's run had 0.02)" &&
    pass "continue: from final.h5, said" || { echo "$log" | head -5; failure "continue: message"; }
  same "continue to 0.06 on 3 ranks = one run to 0.06" "$work/ref/final.h5" "$work/cont/final.h5"
else echo "$log" | tail -5; failure "continue: rc $?"; fi
# no checkpoint_every at all, and time.steps as the stopping criterion
steps=$work/steps.yaml
sed 's/end: 0.02/steps: 40/; /^output:/d' "$case" >"$steps"
run_ok "steps 40, no checkpoints" 1 "$steps" --out "$work/nock"
[ -f "$work/nock/final.h5" ] && [ -z "$(ls "$work/nock" | grep '^checkpoint_')" ] &&
  pass "no checkpoint_every: final.h5 and no checkpoint file" || failure "no checkpoint_every: files"
run_ok "continue to steps 120 on 2 ranks" 2 "$steps" --out "$work/nock" --set time.steps=120 \
  --restart latest &&
  same "continue steps 40 -> 120 = one run to 0.06" "$work/ref/final.h5" "$work/nock/final.h5"
# a later end with dt: auto keeps the dt the run started with; a changed key is still refused
auto=$work/auto.yaml
sed 's/dt: 0.0005, end: 0.02/dt: auto, end: 0.02/' "$case" >"$auto"
run_ok "auto dt to 0.02" 1 "$auto" --out "$work/auto"
attr() { h5dump -m %.17g -a "/$2" "$1" | sed -n 's/.*(0): *//p'; }
dt=$(attr "$work/auto/final.h5" dt)
run_ok "auto dt continued to 0.05" 2 "$auto" --out "$work/auto" --set time.end=0.05 --restart latest
n=$(attr "$work/auto/final.h5" step)
[ "$(attr "$work/auto/final.h5" dt)" = "$dt" ] && pass "dt auto: continued with the first run's dt" ||
  failure "dt auto: dt changed"
# the same steps in one run: time.steps takes dt as given (time.end would divide it anew)
sed "s/dt: auto, end: 0.02/dt: $dt, steps: $n/" "$auto" >"$work/auto1.yaml"
run_ok "one run of those steps with that dt" 2 "$work/auto1.yaml" --out "$work/auto1"
same "dt auto: continued = one run of its steps" "$work/auto1/final.h5" "$work/auto/final.h5"
log=$("$MPIEXEC" -n 1 "$TESSERA_BIN" run "$case" --out "$work/cont" --set time.end=0.1 \
      --set params.kappa=0.8 --restart latest 2>&1); rc=$?
[ $rc = 2 ] && echo "$log" | grep -q "params.kappa: checkpoint 0.7, this case 0.8" &&
  pass "a later end with another kappa: refused" || { echo "$log" | tail -3; failure "kappa: rc $rc"; }
log=$("$TESSERA_BIN" run "$case" --out "$work/cont" --set time.end=0.01 --restart latest 2>&1); rc=$?
[ $rc = 2 ] && echo "$log" | grep -q "at step 120 (t = 0.06), past this run's 20 steps: give the run a later end" &&
  pass "an earlier end: refused, saying what to do" || { echo "$log" | tail -3; failure "earlier end: rc $rc"; }

# --- signals ------------------------------------------------------------------------------
long=(--set time.end=2 --set output.checkpoint_every=100)  # 4000 steps: long enough to signal
run_ok "uninterrupted to t = 2" 2 "$case" --out "$work/full" "${long[@]}"
# stopped LABEL DIR LOG RC: exit 4, its message, latest reads, no tmp; then finish and compare
stopped() {
  local label=$1 dir=$2 log=$3 rc=$4
  if [ "$rc" = 4 ] && grep -q "tessera: stopped by .* after step" "$log" &&
     grep -q -- "--restart latest" "$log"; then pass "$label: exit 4, says how to continue"
  else tail -5 "$log"; failure "$label: rc $rc"; return; fi
  [ -f "$dir/$(cat "$dir/latest")" ] && [ ! -f "$dir/final.h5" ] &&
    pass "$label: latest names a checkpoint, no final.h5" || failure "$label: latest"
  no_tmp "$label" "$dir"
  # under the sanitizers (tests/sanitize.sh) one stop of each kind is finished: the restarts
  # run the same code, and the plain run finishes every one
  [ -n "${TSR_SANITIZED:-}" ] && [ "$label" != "SIGTERM on rank 1 at step 100" ] &&
    [ "$label" != SIGINT ] && return
  run_ok "$label: restart" 2 "$case" --out "$dir" "${long[@]}" --restart latest &&
    same "$label: finished = uninterrupted" "$work/full/final.h5" "$dir/final.h5"
}
# started LOG: waits until the run has stepped (its first checkpoint is there)
started() {
  for _ in $(seq 300); do [ -e "$1/latest" ] && return 0; sleep 0.05; done
  return 1
}
# deterministic: rank 1 signals itself before the first step, and right after a checkpoint
# has been handed to the background writer (step 100)
for at in 0 100; do
  d=$work/self$at
  "$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$d" "${long[@]}" \
    --inject-fault "rank=1,step=$at,kind=signal" >"$d.log" 2>&1
  stopped "SIGTERM on rank 1 at step $at" "$d" "$d.log" $?
done
grep -q "after step 0 of 4000" "$work/self0.log" && pass "before the first step: stops at 0" ||
  failure "before the first step: step"
# from outside, at a random time: SIGUSR1 to mpirun (which forwards it), SIGTERM to one rank,
# SIGINT to every rank (as srun delivers them)
for sig in USR1 TERM INT; do
  d=$work/sig$sig
  "$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$d" "${long[@]}" >"$d.log" 2>&1 &
  pid=$!
  started "$d" || failure "SIG$sig: the run did not start"
  sleep "0.$((RANDOM % 8))"
  ranks=$(pgrep -f -- "--out $d " | grep -v "^$pid$" | while read -r p; do
            [ "$(ps -o comm= -p "$p")" = tessera ] && echo "$p"; done)
  case $sig in
    USR1) kill -USR1 "$pid" ;;
    TERM) kill -TERM "$(echo "$ranks" | tail -1)" ;;
    INT) kill -INT $ranks ;;
  esac
  wait "$pid"
  stopped "SIG$sig" "$d" "$d.log" $?
done
# a second signal ends the run at once: rank 1 signals itself twice while the checkpoint of
# step 100 is written in the background; no temporary file, and latest still reads
d=$work/twice
"$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$d" "${long[@]}" \
  --inject-fault rank=1,step=100,kind=signal2 >"$d.log" 2>&1; rc=$?
[ $rc != 0 ] && [ $rc != 4 ] && ! grep -q "stopped by" "$d.log" &&
  pass "second signal: ended at once (rc $rc)" || { tail -3 "$d.log"; failure "second signal: rc $rc"; }
no_tmp "second signal" "$d"
run_ok "second signal: restart from latest" 2 "$case" --out "$d" "${long[@]}" --restart latest &&
  same "second signal: finished = uninterrupted" "$work/full/final.h5" "$d/final.h5"

# the other signals a job meets, on one rank (one process, as a batch system delivers them):
# a batch system's warning (USR2: SGE's -notify; XCPU: a CPU limit) and the session's end (HUP)
# stop as TERM does; QUIT ends the run at once, removing what was being written
quick=(--set time.end=2 --set output.checkpoint_every=20)
for sig in HUP USR2 XCPU QUIT; do
  d=$work/one$sig
  "$TESSERA_BIN" run "$case" --out "$d" "${quick[@]}" >"$d.log" 2>&1 &
  pid=$!
  started "$d" || failure "SIG$sig: the run did not start"
  kill -"$sig" $pid
  wait $pid; rc=$?
  if [ $sig = QUIT ]; then
    [ $rc = 131 ] && grep -q "ended at once by a signal" "$d.log" &&
      pass "SIGQUIT: ended at once, said" || { tail -3 "$d.log"; failure "SIGQUIT: rc $rc"; }
  else
    [ $rc = 4 ] && grep -q "stopped by SIG$sig.* after step" "$d.log" &&
      pass "SIG$sig: stopped with a checkpoint, exit 4" || { tail -3 "$d.log"; failure "SIG$sig: rc $rc"; }
  fi
  [ -f "$d/$(cat "$d/latest")" ] && pass "SIG$sig: latest names a checkpoint" ||
    failure "SIG$sig: latest"
  no_tmp "SIG$sig" "$d"
done
# the reader of the run's output ended (| head -1): a stop, whose own messages meet the closed
# pipe without ending it
d=$work/pipe
"$TESSERA_BIN" run "$case" --out "$d" "${quick[@]}" --set output.progress=lines 2>"$d.log" |
  head -1 >/dev/null
rc=${PIPESTATUS[0]}
[ $rc = 4 ] && grep -q "stopped by SIGPIPE" "$d.log" && [ -f "$d/$(cat "$d/latest")" ] &&
  pass "SIGPIPE: stopped with a checkpoint, exit 4" || { tail -3 "$d.log"; failure "SIGPIPE: rc $rc"; }
# before a run is under way a signal ends the process as it ends any other: a case read from a
# pipe that no one writes
rm -f "$work/fifo" && mkfifo "$work/fifo"
timeout -k 2 20 "$TESSERA_BIN" run "$work/fifo" --out "$work/fifo_out" >"$work/fifo.log" 2>&1 &
pid=$!
sleep 1
kill -TERM $pid 2>/dev/null; pkill -TERM -f "run $work/fifo --out"
wait $pid; rc=$?
[ $rc = 143 ] && [ ! -e "$work/fifo_out" ] && pass "SIGTERM while reading the case: ended" ||
  failure "SIGTERM while reading the case: rc $rc"

# --- the wall-time limit ------------------------------------------------------------------
d=$work/wall
start=$(date +%s.%N)
"$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$d" --set time.end=1000 --walltime 5 \
  >"$d.log" 2>&1; rc=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
if [ $rc = 4 ] && grep -q "stopped by the wall-time limit" "$d.log"; then
  pass "--walltime 5: stopped with a checkpoint (exit 4) after $took s, mpirun's start included"
else tail -5 "$d.log"; failure "--walltime: rc $rc"; fi
# rank 0 counts from its own start (after mpirun's) to the end of the stop's checkpoint: before
# the limit, and not absurdly early; mpirun's start and end around it are the launcher's
spent=$(sed -n 's/^tessera: \([0-9.]*\) s of the 5 s --walltime spent.*/\1/p' "$d.log")
awk -v t="${spent:-99}" 'BEGIN { exit !(t < 5 && t > 1) }' &&
  pass "--walltime 5: stopped after $spent s, before the limit" ||
  failure "--walltime 5: spent '${spent}' s"
no_tmp "--walltime" "$d"
log=$("$MPIEXEC" -n 1 "$TESSERA_BIN" run "$case" --out "$work/x" --walltime 1:75 2>&1); rc=$?
[ $rc = 2 ] && echo "$log" | grep -q "walltime: expected \[D-\]HH:MM:SS" &&
  pass "--walltime 1:75: refused" || { echo "$log" | tail -2; failure "--walltime 1:75: rc $rc"; }
finish

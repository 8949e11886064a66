#!/usr/bin/env bash
# Recovery from faults injected with --inject-fault (a testing aid): under tessera supervise a
# rank that exits, a rank that hangs (the watchdog ends the job within comm.timeout) and a
# damaged newest checkpoint all end with final fields bitwise equal to an uninterrupted run,
# also when supervise relaunches on fewer ranks after a GPU is lost on another node (counted
# through the launcher by tessera probe; a probe that fails or hangs leaves the rank count); a
# full disk during a checkpoint is a clear error that leaves the previous checkpoint good and
# no temporary file; an unwritable output location is a clear error; bad --inject-fault and
# supervise arguments exit 2; supervise passes TESSERA_ATTEMPT, gives up after --max-restarts and stops on a signal.
set -u
. "$(dirname "$0")/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
heat_case "$work/heat2d.yaml" 24 20
case=$work/heat2d.yaml
B=$TESSERA_BIN
same() { # same LABEL A B: final fields bitwise equal
  if h5diff -q "$2" "$3" /fields /fields >/dev/null 2>&1; then pass "$1"
  else h5diff -r "$2" "$3" /fields /fields 2>&1 | head -5; failure "$1"; fi
}
has() { # has LABEL TEXT PATTERN: the text contains the fixed string
  if printf '%s' "$2" | grep -qF -- "$3"; then pass "$1"
  else printf '%s\n' "$2" | tail -15; failure "$1 (no '$3')"; fi
}
run_ok "reference np1" 1 "$case" --out "$work/ref" || { finish; exit 1; }
ref=$work/ref/final.h5

# (a) rank 3 of 4 exits after step 5, on the second of two pretend nodes (node.sh: ranks 0-1
# on node0, 2-3 on node1, each with the GPUs its file says; a run on node1 loses one there).
# supervise counts the GPUs of both nodes through the launcher (tessera probe), sees the one
# lost on node1, and relaunches on 3 ranks from checkpoint 3
cat >"$work/node.sh" <<NODE
#!/usr/bin/env bash
r=\${OMPI_COMM_WORLD_RANK:-\${PMI_RANK:-0}}
n=node\$((r / 2))
export TESSERA_PROBE_NODE=\$n TESSERA_PROBE_GPUS=\$(cat "$work/\$n.gpus")
if [ "\$2" = run ] && [ \$n = node1 ]; then echo 1 >"$work/node1.gpus"; fi
exec "\$@"
NODE
chmod +x "$work/node.sh"
echo 2 >"$work/node0.gpus"; echo 2 >"$work/node1.gpus"
log=$("$MPIEXEC" -n 4 "$work/node.sh" "$B" probe 2>&1)
has "probe: one line per node" "$log" "$(printf 'tessera probe: node node0: 2 of 2 GPUs usable\ntessera probe: node node1: 2 of 2 GPUs usable\ntessera probe: total 4 of 4 GPUs usable on 2 nodes')"
out=$work/exit
log=$("$B" supervise -- "$MPIEXEC" -n 4 "$work/node.sh" "$B" run "$case" --out "$out" \
  --inject-fault rank=3,step=5,kind=exit 2>&1); rc=$?
if [ $rc = 0 ]; then pass "exit: supervise ends with 0"; else echo "$log" | tail; failure "exit: rc $rc"; fi
has "exit: GPUs counted on every node" "$log" "tessera supervise: 4 usable GPUs on 2 nodes"
has "exit: the reason names the rank" "$log" "attempt 2/4: attempt 1 failed with exit code 1 (rank 3 exited with code 1); restarting from the latest checkpoint"
has "exit: a GPU lost on another node is seen" "$log" "3 usable GPUs on 2 nodes (4 at the first launch; node1: 1 of 1 usable (had 2)): relaunching on 3 ranks instead of 4"
has "exit: restarted from 3" "$log" "restart: from '$out/checkpoint_00000003.h5'"
same "exit: final = uninterrupted" "$ref" "$out/final.h5"

# the relaunch on fewer ranks finds a node with more ranks than GPUs (tessera's refusal, played
# by place.sh): supervise stops, and says how to give the launcher the GPUs left as slots
printf '#!/usr/bin/env bash\nif [ "$2" = run ] && [ "$TESSERA_ATTEMPT" = 2 ]; then\n  echo "tessera: input error: 2 ranks on node node1 but only 1 GPU found" >&2; exit 2\nfi\nexec "%s" "$@"\n' "$work/node.sh" >"$work/place.sh"
chmod +x "$work/place.sh"
echo 2 >"$work/node0.gpus"; echo 2 >"$work/node1.gpus"
log=$("$B" supervise -- "$MPIEXEC" -n 4 "$work/place.sh" "$B" run "$case" --out "$work/place" \
  --inject-fault rank=3,step=5,kind=exit 2>&1); rc=$?
[ $rc = 2 ] && pass "placement: exit 2 is not retried" || { echo "$log" | tail; failure "placement: rc $rc"; }
has "placement: the host list of the GPUs left" "$log" "give the launcher a host list with the GPUs left as slots (Open MPI: --host node0:2,node1:1)"

# a rank that exits before the first checkpoint: the relaunch starts over; a probe that fails
# (noprobe.sh) leaves the rank count as it is
printf '#!/usr/bin/env bash\nif [ "$2" = probe ]; then exit 7; fi\nexec "$@"\n' >"$work/noprobe.sh"
chmod +x "$work/noprobe.sh"
out=$work/early
log=$("$B" supervise -- "$MPIEXEC" -n 2 "$work/noprobe.sh" "$B" run "$case" --out "$out" \
  --inject-fault rank=0,step=2,kind=exit 2>&1); rc=$?
if [ $rc = 0 ]; then pass "early exit: supervise ends with 0"; else echo "$log" | tail; failure "early exit: rc $rc"; fi
has "early exit: a failed probe is said" "$log" "tessera supervise: could not count the GPUs through the launcher (it ended with exit code 7); relaunches will keep the rank count"
has "early exit: starts over" "$log" "restart: no checkpoint in '$out' yet; starting from the initial conditions (attempt 2 under tessera supervise)"
same "early exit: final = uninterrupted" "$ref" "$out/final.h5"

# a probe that hangs (a GPU stuck in the driver) is ended after TESSERA_PROBE_TIMEOUT, with what
# it started, and the run goes on. 5 s rather than 2: with 2 the check below once found the
# probe's rank left (CI, under the sanitizers, session 20). The likeliest cause, unconfirmed (1 s
# on this loaded 2-core machine left nothing in 9 tries): a launcher signalled while still
# starting its ranks may not reach the one it is starting (session 32, CI, under the sanitizers:
# 10 s after the launcher's SIGTERM, its rank was still there). So supervise now ends what
# outlived the launcher too (a subreaper, solver/supervise.c), and the probe's rank here starts
# one process out of the launcher's reach (a session of its own) for certain: it must go too.
printf '#!/usr/bin/env bash\nif [ "$2" = probe ]; then setsid sleep 301 >/dev/null 2>&1 & exec sleep 300; fi\nexec "$@"\n' >"$work/slowprobe.sh"
chmod +x "$work/slowprobe.sh"
t0=$(date +%s)
log=$(TESSERA_PROBE_TIMEOUT=5 "$B" supervise -- "$MPIEXEC" -n 1 "$work/slowprobe.sh" "$B" run "$case" \
  --out "$work/slow" 2>&1); rc=$?
t1=$(date +%s)
if [ $rc = 0 ] && [ $((t1 - t0)) -lt 30 ] && [ -f "$work/slow/final.h5" ]; then pass "hung probe: ended, the run done in $((t1 - t0)) s"
else echo "$log" | tail; failure "hung probe: rc $rc after $((t1 - t0)) s"; fi
has "hung probe: said" "$log" "could not count the GPUs through the launcher (no answer within 5 s, TESSERA_PROBE_TIMEOUT)"
# (the launcher's ranks end on its SIGTERM as it exits; up to 10 s for the last of them to go:
# 1 s was not always enough under the sanitizers on CI's loaded 2-core machine)
left=1
for _ in $(seq 100); do pgrep -f "exec sleep 300|^sleep 30[01]" >/dev/null || { left=0; break; }; sleep 0.1; done
if [ $left = 1 ]; then failure "hung probe: its processes are left"; pkill -f "^sleep 30[01]"
else pass "hung probe: nothing left running"; fi

# (b) rank 1 hangs after step 5 (outside MPI): the watchdog aborts within comm.timeout and
# names it; the relaunch completes. Each stderr line is stamped with the time it came.
out=$work/hang timeout_s=3
# ($EPOCHREALTIME is bash's own clock: a date process a line fell behind a busy run's output on
# a loaded machine, which made the stamps late)
stamp() { while IFS= read -r l; do printf '%s %s\n' "${EPOCHREALTIME/,/.}" "$l"; done; }
log=$(timeout 120 "$B" supervise -- "$MPIEXEC" -n 2 "$B" run "$case" --out "$out" \
  --set comm.timeout=$timeout_s --inject-fault rank=1,step=5,kind=hang 2>&1 | stamp); rc=${PIPESTATUS[0]}
if [ "$rc" = 0 ]; then pass "hang: supervise ends with 0"; else echo "$log" | tail; failure "hang: rc $rc"; fi
has "hang: the watchdog names the rank that stopped" "$log" "tessera: watchdog: rank 1 stopped: no progress for"
has "hang: supervise says why" "$log" "(the watchdog found rank 1 stopped: no progress for"
t0=$(echo "$log" | grep -m1 "rank 1 hangs after step 5" | cut -d' ' -f1)
t1=$(echo "$log" | grep -m1 "tessera: watchdog:" | cut -d' ' -f1)
# The watchdog counts from rank 1's last progress, which comes before its message, and a stamp
# is when mpirun forwarded the line: on a loaded machine d falls short of T (2.04 s for T = 3
# was seen), so the lower bound only shows that the watchdog waited instead of firing at once.
# The sanitizers' run shares CI's 2 cores with another test's ranks: 2 s more for the lines to
# come through there. The watchdog's own figure (it polls every timeout / 20) is exact.
slack=2; [ "${TSR_SANITIZED:-0}" = 1 ] && slack=4
if [ -n "$t0" ] && [ -n "$t1" ] && awk -v a="$t0" -v b="$t1" -v T=$timeout_s -v s=$slack 'BEGIN { d = b - a; print "hang detected after " d " s"; exit !(d >= T / 2 && d <= T + s) }'; then
  pass "hang: detected within comm.timeout ($timeout_s s) + $slack s"
else failure "hang: detection time (from '$t0' to '$t1')"; fi
idle=$(echo "$log" | grep -m1 -o "no progress for [0-9.]* s" | cut -d' ' -f4)
if [ -n "$idle" ] && awk -v x="$idle" -v T=$timeout_s 'BEGIN { exit !(x >= T && x <= T + 1) }'; then
  pass "hang: the watchdog fired after $idle s without progress (comm.timeout $timeout_s s)"
else failure "hang: the watchdog's idle time '$idle' is not within [$timeout_s, $timeout_s + 1] s"; fi
same "hang: final = uninterrupted" "$ref" "$out/final.h5"

# (c) the newest checkpoint (6) is damaged as the node dies: latest falls back to 3
out=$work/corrupt
log=$("$B" supervise --max-restarts 1 -- "$MPIEXEC" -n 2 "$B" run "$case" --out "$out" \
  --inject-fault rank=0,step=6,kind=corrupt 2>&1); rc=$?
if [ $rc = 0 ]; then pass "corrupt: supervise ends with 0"; else echo "$log" | tail; failure "corrupt: rc $rc"; fi
has "corrupt: checksum error found" "$log" "skipping checkpoint '$out/checkpoint_00000006.h5': checksum error"
has "corrupt: falls back to 3" "$log" "using the older '$out/checkpoint_00000003.h5' (step 3)"
has "corrupt: 2 attempts" "$log" "attempt 2/2 succeeded"
same "corrupt: final = uninterrupted" "$ref" "$out/final.h5"

# (d) the disk is full at the checkpoint of step 6 (ENOSPC from the kernel, through HDF5)
out=$work/full
log=$("$MPIEXEC" -n 2 "$B" run "$case" --out "$out" --inject-fault rank=0,step=6,kind=enospc 2>&1); rc=$?
if [ $rc = 1 ]; then pass "enospc: exit 1"; else echo "$log" | tail; failure "enospc: rc $rc"; fi
has "enospc: message names the file" "$log" "cannot write '$out/checkpoint_00000006.h5': no space left on device; free space there or write elsewhere"
has "enospc: says the previous one holds" "$log" "the previous checkpoint and '$out/latest' are unchanged"
if printf '%s' "$log" | grep -q "infinite loop closing library"; then failure "enospc: HDF5's noise at exit"
else pass "enospc: one message, no HDF5 noise"; fi
left=$(ls "$out")
if [ "$left" = "$(printf 'checkpoint_00000003.h5\nlatest')" ] && [ "$(cat "$out/latest")" = checkpoint_00000003.h5 ]; then
  pass "enospc: no temporary left, latest still names 3"
else echo "$left"; failure "enospc: files left"; fi
if h5dump -H "$out/checkpoint_00000003.h5" >/dev/null 2>&1 &&
  run_ok "enospc: restart" 2 "$case" --out "$out" --restart latest; then
  same "enospc: restart from the previous checkpoint = uninterrupted" "$ref" "$out/final.h5"
else failure "enospc: previous checkpoint does not verify"; fi

# (e) an output location below a regular file (root ignores permissions; this it cannot pass):
# bad input, exit 2, which supervise does not relaunch
: >"$work/plain"
log=$("$MPIEXEC" -n 2 "$B" run "$case" --out "$work/plain/out" 2>&1); rc=$?
if [ $rc = 2 ] && [ ! -s "$work/plain" ] && [ -f "$work/plain" ]; then pass "unwritable output: exit 2, nothing written"
else echo "$log" | tail -3; failure "unwritable output: rc $rc"; fi
has "unwritable output: message names it" "$log" \
  "cannot create output directory '$work/plain/out': '$work/plain' exists and is not a directory"

# (f) bad input: exit 2 with a message, and supervise does not retry it
bad() { # bad LABEL PATTERN COMMAND...: exit 2 and the message
  local label=$1 want=$2 log rc
  shift 2
  log=$("$@" 2>&1); rc=$?
  if [ $rc = 2 ] && printf '%s' "$log" | grep -qF -- "$want"; then pass "$label"
  else printf '%s\n' "$log" | tail -5; failure "$label: rc $rc (wanted 2 and '$want')"; fi
}
bad "bad --inject-fault kind" "--inject-fault 'rank=1,step=5,kind=explode': unknown kind 'explode'; expected rank=R,step=S,kind=exit|hang|corrupt|enospc" \
  "$B" run "$case" --out "$work/bad" --inject-fault rank=1,step=5,kind=explode
bad "bad --inject-fault syntax" "expected KEY=VALUE, got 'hang'" "$B" run "$case" --out "$work/bad" --inject-fault rank=1,hang
bad "--inject-fault without a value" "option --inject-fault needs a value" "$B" run "$case" --inject-fault
bad "--inject-fault rank out of range" "--inject-fault: rank=4 but the run has 2 ranks (0..1)" \
  "$MPIEXEC" -n 2 "$B" run "$case" --out "$work/bad" --inject-fault rank=4,step=5,kind=exit
bad "--inject-fault corrupt needs a checkpoint step" "kind=corrupt needs a step that writes a checkpoint" \
  "$B" run "$case" --out "$work/bad" --inject-fault rank=0,step=5,kind=corrupt
[ ! -e "$work/bad" ] && pass "bad input leaves no output directory" || failure "bad input left $work/bad"
mkdir "$work/empty"
bad "--restart latest with no checkpoint, unsupervised" "--restart latest: no checkpoint in '$work/empty'" \
  "$B" run "$case" --out "$work/empty" --restart latest
bad "probe takes no case file" "probe takes no case file, got '$case'" "$B" probe "$case"
bad "supervise without --" "expected -- before the launch command, got 'mpirun'" "$B" supervise mpirun -n 2
bad "supervise without a command" "no launch command after --" "$B" supervise --max-restarts 2 --
bad "supervise --max-restarts x" "--max-restarts: expected an integer from 0 to 1000, got 'x'" "$B" supervise --max-restarts x -- true
bad "supervise: a command that does not exist" "cannot run 'no-such-launcher': No such file or directory" "$B" supervise -- no-such-launcher -n 2
log=$("$B" supervise -- "$MPIEXEC" -n 1 "$B" run "$case" --set time.cfl=2 2>&1); rc=$?
if [ $rc = 2 ] && [ "$(printf '%s' "$log" | grep -c "time.cfl: must be in")" = 1 ]; then
  has "supervise: bad input is not retried" "$log" "attempt 1/4: exit code 2, bad input"
else printf '%s\n' "$log" | tail -5; failure "supervise: bad input rc $rc"; fi

# supervise's own behaviour on plain commands
log=$("$B" supervise --max-restarts 2 -- bash -c 'echo "attempt $TESSERA_ATTEMPT" >&2; exit 3' 2>&1); rc=$?
if [ $rc = 3 ] && [ "$(printf '%s' "$log" | grep -c '^attempt [123]$')" = 3 ]; then
  has "supervise: gives up after --max-restarts with the last code" "$log" "attempt 3/3 failed with exit code 3 (no reason given on its standard error); no restarts left (--max-restarts 2)"
else printf '%s\n' "$log"; failure "supervise: retries rc $rc"; fi
# a failed attempt's rank that outlived its launcher (a session of its own, as the probe's above;
# or a launcher killed outright) is ended before the relaunch, which would otherwise race it on
# the checkpoints' files: the second attempt looks for the first one's
log=$("$B" supervise --max-restarts 1 -- bash -c 'if [ "$TESSERA_ATTEMPT" = 1 ]; then
  setsid sleep 302 & exit 3; fi
  ! pgrep -f "^sleep 302" >/dev/null || exit 5' 2>&1); rc=$?
if [ $rc = 0 ]; then # (5 where the second attempt found it)
  has "supervise: a failed attempt's leftover process is ended and said" "$log" "attempt 1: ended 1 process it left running on this node after its launcher exited"
else printf '%s\n' "$log"; failure "supervise: leftover of attempt 1, rc $rc"; pkill -f "^sleep 302"; fi
# Ctrl-C, and QUIT (whose default would end supervise and leave the command running)
for sig in INT:2 QUIT:3; do
  "$B" supervise -- sleep 30 2>"$work/sig.log" &
  pid=$!
  # a background job starts with SIGINT ignored until supervise installs its handler: signal
  # it once its command runs (on a loaded machine that takes more than half a second)
  for _ in $(seq 100); do pgrep -P $pid -x sleep >/dev/null && break; sleep 0.1; done
  kill -"${sig%:*}" $pid
  wait $pid; rc=$?
  if [ $rc = $((128 + ${sig#*:})) ] &&
     grep -q "stopped by signal ${sig#*:} (forwarded to the command); not relaunching" "$work/sig.log"
  then pass "supervise: SIG${sig%:*} is forwarded and ends supervision"
  else cat "$work/sig.log"; failure "supervise: SIG${sig%:*} rc $rc"; fi
done
finish

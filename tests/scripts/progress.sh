#!/usr/bin/env bash
# Progress as the README promises it, under a pseudo-terminal (script(1), util-linux): run
# directly on a terminal, `tessera run` draws the live bar (carriage returns, percentage, ETA)
# between its monitor lines; piped, and under mpirun on a terminal (1 and 2 ranks), it prints
# lines only, each with the elapsed time and the ETA; output.progress overrides the choice; a
# long run's log gets a step line with the ETA when monitor lines are far apart.
set -u
. "$(dirname "$0")/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! command -v script >/dev/null; then
  failure "script(1) not found: install bsdutils (Debian) or util-linux"
  finish
  exit 1
fi
cat >"$work/c.yaml" <<'YAML'
model: heat
grid: {cells: [48, 40]}
initial: {u: "sin(pi*x)*sin(pi*y)"}
time: {steps: 400}
output: {monitor_every: 100}
YAML
# a run started directly, even from a shell that a launcher started (CI under srun)
direct=(env -u OMPI_COMM_WORLD_SIZE -u PMI_RANK -u PMIX_RANK -u SLURM_STEP_ID -u MPI_LOCALRANKID)
# on_tty LOG CMD...: runs CMD on a pseudo-terminal (its output comes with \r\n line ends)
on_tty() {
  shift
  script -qec "$(printf '%q ' "$@")" /dev/null </dev/null
}
mmss='[0-9]{2}:[0-9]{2}'
bar=$'\r''\[[#.]{30}\] +[0-9]+% step [0-9]+/400 t=[^ ]+ ETA '"$mmss"' [^ ]+ cells/s'
line="^step [0-9]+/400 t=.* \\| [^ ]+ cells/s \\| elapsed $mmss ETA ($mmss|--:--)\$"
has_bar() { grep -qaE "$bar" "$1"; }
# lines LOG: the 5 monitor lines (steps 0, 100, ..., 400), no ETA before a step, 00:00 at the end
lines_ok() {
  local got
  got=$(tr -d '\r' <"$1" | sed 's/\x1b\[K/\n/g' | grep -aE "$line" |
    sed -E 's/^step ([0-9]+).*ETA (.*)$/\1 \2/' | paste -sd, -)
  [[ $got =~ ^0\ --:--,100\ $mmss,200\ $mmss,300\ $mmss,400\ 00:00$ ]] ||
    { echo "monitor lines (step ETA): $got"; return 1; }
}
check() { # LABEL LOG BAR(yes|no)
  local ok=1
  if [ "$3" = yes ]; then has_bar "$2" || { echo "no bar"; ok=0; }
  else ! has_bar "$2" && ! grep -qa $'\r\[' "$2" || { echo "a bar where lines were due"; ok=0; }; fi
  lines_ok "$2" || ok=0
  grep -qa '^done: 400 steps' "$2" || { echo "no 'done:' line"; ok=0; }
  if [ $ok = 1 ]; then pass "$1"; else head -c 3000 "$2" | cat -v | tail -20; failure "$1"; fi
}

# run_log LABEL LOG BAR CMD...: runs CMD (on_tty for a terminal), which must succeed, then check
run_log() {
  local label=$1 log=$2 want=$3
  shift 3
  if "$@" >"$log" 2>&1; then check "$label" "$log" "$want"
  else cat -v "$log" | tail -5; failure "$label: exited non-zero"; fi
}
run=("$TESSERA_BIN" run "$work/c.yaml")
run_log "run directly on a terminal: the bar with its ETA, lines with elapsed and ETA" \
  "$work/tty.log" yes on_tty "$work/tty.log" "${direct[@]}" "${run[@]}" --out "$work/o1"
# the bar is redrawn in place: carriage returns, no newline between two bars
[ "$(grep -aoE "$bar" "$work/tty.log" | wc -l)" -ge 2 ] &&
  pass "the bar is drawn more than once" || failure "the bar is drawn fewer than twice"
run_log "piped: lines with elapsed and ETA, no bar" "$work/pipe.log" no \
  "${direct[@]}" "${run[@]}" --out "$work/o2"
for np in 1 2; do
  run_log "mpirun -n $np on a terminal: lines, no bar" "$work/mpi$np.log" no \
    on_tty "$work/mpi$np.log" "$MPIEXEC" -n $np "${run[@]}" --out "$work/m$np"
done
run_log "output.progress=lines on a terminal: lines" "$work/forced.log" no \
  on_tty "$work/forced.log" "${direct[@]}" "${run[@]}" --out "$work/o3" --set output.progress=lines
run_log "output.progress=bar when piped: the bar" "$work/fbar.log" yes \
  "${direct[@]}" "${run[@]}" --out "$work/o4" --set output.progress=bar
"${direct[@]}" "${run[@]}" --out "$work/o5" --set output.progress=none >"$work/none.log" 2>&1
! grep -qaE '^step |\[[#.]{30}\]' "$work/none.log" &&
  grep -qa '^done: 400 steps' "$work/none.log" &&
  pass "output.progress=none: neither" || failure "output.progress=none printed progress"
# monitor lines far apart (a long job's): a step line with the ETA after TSR_PROGRESS_SECONDS
# without a line (60 by default: none in these short runs, whose lines are checked above). The
# run is held to a few seconds by --walltime (exit 4), not by a step count: a fast machine
# finished 60000 steps inside the 1 s.
TSR_PROGRESS_SECONDS=1 "${direct[@]}" "${run[@]}" --out "$work/o6" --set time.steps=1000000000 \
  --set output.monitor_every=1000000000 --walltime 6 >"$work/quiet.log" 2>&1
rc=$?
quiet="^step [0-9]+/1000000000 t=[^ ]+ \\| [^ ]+ cells/s \\| elapsed $mmss ETA [0-9][0-9:d ]*\$"
[ $rc = 4 ] && [ "$(grep -cE "$quiet" "$work/quiet.log")" -ge 1 ] &&
  pass "no line for TSR_PROGRESS_SECONDS: a step line with the ETA" ||
  { cat "$work/quiet.log"; failure "no step line after TSR_PROGRESS_SECONDS (exit $rc, 4 expected)"; }
finish

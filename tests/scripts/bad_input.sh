#!/usr/bin/env bash
# Every malformed case file or command line gets its own clear message (asserted by a
# substring), a non-zero exit, and leaves no output directory behind.
set -u
. "$(dirname "$0")/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
good='model: heat
grid: {cells: [8, 8]}
initial: {u: "sin(pi*x)"}
time: {end: 0.01}'

# expect_fail LABEL NP SUBSTRING CASE_TEXT ARGS...   (CASE_TEXT "-" = no case file written)
# want_rc=CODE before it: that exit status too; wrap="timeout ..." before it: tessera run under
# that command (one rank); last_log: its output, for further checks
expect_fail() {
  local label=$1 np=$2 want=$3 text=$4
  shift 4
  n=$((n + 1))
  local dir="$work/t$n" case="$work/t$n.yaml"
  [ "$text" = "-" ] || printf '%s\n' "$text" >"$case"
  local args=("$@")
  for i in "${!args[@]}"; do args[$i]=${args[$i]//@CASE@/$case}; args[$i]=${args[$i]//@OUT@/$dir}; done
  local log rc pre=()
  [ -n "${wrap:-}" ] && read -ra pre <<<"$wrap"
  # one rank without the launcher (an MPI singleton, as a user runs tessera check): Open MPI's
  # launcher takes about 2 s to end a job that failed, and 35 of these fail on one rank
  if [ "$np" = 1 ]; then log=$("${pre[@]}" "$TESSERA_BIN" "${args[@]}" 2>&1)
  else log=$("$MPIEXEC" -n "$np" "$TESSERA_BIN" "${args[@]}" 2>&1); fi
  rc=$?
  last_log=$log
  if [ "$rc" -eq 0 ]; then failure "$label: exit 0"; echo "$log" | tail -3; return; fi
  if [ -n "${want_rc:-}" ] && [ "$rc" != "$want_rc" ]; then
    failure "$label: exit $rc, not $want_rc"; echo "$log" | tail -3; return
  fi
  if ! grep -qF -- "$want" <<<"$log"; then
    failure "$label: message lacks '$want'"; echo "$log" | tail -5; return
  fi
  if [ -e "$dir" ]; then failure "$label: left $dir behind"; return; fi
  # (a warning before it, as for a dt past the stable limit, is not a second error)
  if [ "$(grep -v 'tessera: warning: ' <<<"$log" | grep -c 'tessera: ')" -gt 1 ]; then
    failure "$label: more than one message (one per rank?)"; echo "$log"; return
  fi
  pass "$label (exit $rc): $(grep 'tessera' <<<"$log" | head -1 | cut -c1-150)"
}

expect_fail "missing case file" 1 "cannot read case file" - run "$work/nonexistent.yaml" --out @OUT@
expect_fail "case file is a directory" 1 "cannot read case file" - run "$work" --out @OUT@
# read up to a cap, not until memory runs out (17 GB); pipes stay readable (the end of this file)
want_rc=2 wrap="timeout -k 5 30" expect_fail "case file /dev/zero" 1 \
  "case file '/dev/zero' is larger than 64 MiB" - run /dev/zero --out @OUT@
# exit 2, bad input, which tessera supervise does not relaunch (it was 1, an I/O error)
"$TESSERA_BIN" run "$work/nonexistent.yaml" --out "$work/nx" >/dev/null 2>&1
rc=$?
[ $rc = 2 ] && pass "missing case file: exit 2" || failure "missing case file: exit $rc, not 2"
expect_fail "YAML syntax" 1 "t$((n + 1)).yaml:3:1: YAML syntax error" 'model: heat
grid: {cells: [8, 8]
time: {end: 1}' run @CASE@ --out @OUT@
expect_fail "unknown top key" 1 "did you mean 'model'" "modle: heat
${good#model: heat}" run @CASE@ --out @OUT@
expect_fail "unknown model" 1 "did you mean 'heat'" "model: heet
${good#model: heat}" run @CASE@ --out @OUT@
expect_fail "integer expected" 1 "grid.cells" 'model: heat
grid: {cells: [8, 2.5]}
initial: {u: "0"}
time: {end: 0.01}' run @CASE@ --out @OUT@
expect_fail "zero cells" 1 "grid.cells" 'model: heat
grid: {cells: [0, 8]}
initial: {u: "0"}
time: {end: 0.01}' run @CASE@ --out @OUT@
expect_fail "hi <= lo" 1 "grid.hi" 'model: heat
grid: {cells: [8, 8], lo: [0, 1], hi: [1, 1]}
initial: {u: "0"}
time: {end: 0.01}' run @CASE@ --out @OUT@
expect_fail "missing time" 1 "time" 'model: heat
grid: {cells: [8, 8]}
initial: {u: "0"}' run @CASE@ --out @OUT@
expect_fail "end and steps" 1 "not both" "${good%time:*}time: {end: 0.01, steps: 3}" run @CASE@ --out @OUT@
expect_fail "negative kappa" 1 "params.kappa" "$good
params: {kappa: -1}" run @CASE@ --out @OUT@
expect_fail "cfl above 1" 1 "time.cfl" 'model: heat
grid: {cells: [8, 8]}
initial: {u: "0"}
time: {end: 0.01, cfl: 1.5}' run @CASE@ --out @OUT@
expect_fail "missing component" 1 "initial" 'model: wave
grid: {cells: [8, 8]}
initial: {u: "0"}
time: {end: 0.01}' run @CASE@ --out @OUT@
expect_fail "z face in 2D" 1 "zlo" "$good
boundary: {zlo: {type: neumann}}" run @CASE@ --out @OUT@
expect_fail "method not available" 1 "parareal is not available" "$good
method: parareal" run @CASE@ --out @OUT@
expect_fail "unbalanced expression" 1 ":3:" 'model: heat
grid: {cells: [8, 8]}
initial: {u: "sin(pi*x"}
time: {end: 0.01}' run @CASE@ --out @OUT@
expect_fail "unknown function" 1 "did you mean 'sin'" 'model: heat
grid: {cells: [8, 8]}
initial: {u: "sinn(pi*x)"}
time: {end: 0.01}' run @CASE@ --out @OUT@
expect_fail "power operator" 1 "pow" 'model: heat
grid: {cells: [8, 8]}
initial: {u: "x^2"}
time: {end: 0.01}' run @CASE@ --out @OUT@
expect_fail "param typo" 1 "did you mean 'kappa'" "$good
params: {kapa: 2}" run @CASE@ --out @OUT@
expect_fail "too many ranks (check)" 1 "at most" 'model: heat
grid: {cells: [2, 2]}
initial: {u: "0"}
time: {end: 0.01}' check @CASE@ --ranks 5
expect_fail "too many ranks (mpirun)" 3 "at most" 'model: heat
grid: {cells: [2, 1]}
initial: {u: "0"}
time: {end: 0.01}' run @CASE@ --out @OUT@
expect_fail "weights per rank" 2 "weights" "$good
decomposition: {weights: [1, 2, 3]}" run @CASE@ --out @OUT@
# under parareal one weight per rank of a time-slice group (it said "the run has 1 ranks")
want_rc=2 expect_fail "parareal: weights per group rank" 1 \
  "3 weights given but each time-slice group (which splits the grid) has 1 ranks" "$good
decomposition: {time_slices: 2, weights: [1, 2, 3]}
parareal: {slices_per_rank: 2}" run @CASE@ --out @OUT@
# an output directory that cannot be made is the user's to change: exit 2 (supervise would only
# fail again), one message naming the path and what was wrong
want_rc=2 expect_fail "unwritable output" 1 \
  "cannot create output directory '/proc/tessera-denied/x': mkdir '/proc/tessera-denied'" \
  "$good" run @CASE@ --out /proc/tessera-denied/x
want_rc=2 expect_fail "--out names a file" 1 \
  "cannot create output directory '$work/t$((n + 1)).yaml': it exists and is not a directory" \
  "$good" run @CASE@ --out @CASE@
# a run that fails after making a new path removes each level it made, not just the last
want_rc=2 expect_fail "deep new --out, failed run" 1 "non-finite" 'model: heat
grid: {cells: [16, 16]}
initial: {u: "sin(pi*x)*sin(pi*y)"}
time: {dt: 0.01, steps: 200}' run @CASE@ --out @OUT@/a/b/c
# longer than PATH_MAX: refused before anything is made (it made 21 levels of it), and said in
# a line (all of it was printed, cut at 4096 characters)
want_rc=2 expect_fail "over-long --out" 1 "bytes long, and the limit is 4000" "$good" \
  run @CASE@ --out "@OUT@/$(printf '%05000d' 0 | sed 's/0\{100\}/&\//g')"
[ "${#last_log}" -lt 400 ] && pass "over-long --out: a short message" ||
  failure "over-long --out: a message of ${#last_log} characters"
# a long one that fits runs: Open MPI's lockedfile component aborted at MPI_File_open on paths
# past about 230 bytes (tessera turns it off)
printf '%s\n' "$good" >"$work/long.yaml"
long=$work/$(printf '%0250d' 0)
if "$TESSERA_BIN" run "$work/long.yaml" --out "$long" >"$work/long.log" 2>&1 && [ -f "$long/final.h5" ]
then pass "a 270-byte --out: runs"; else tail -3 "$work/long.log"; failure "a 270-byte --out"; fi
rm -rf "$long"
# initial values that are not finite are the case's, not the time step's (it said lower dt),
# named with a point where they are not
want_rc=2 expect_fail "initial not finite" 1 'initial.u: "log(x-0.5)" is nan at x = 0.0625' \
  'model: heat
grid: {cells: [8, 8]}
initial: {u: "log(x-0.5)"}
time: {end: 0.01}' run @CASE@ --out @OUT@
# a grid past the index types: tessera check printed negative cells and memory (exit 0)
want_rc=2 expect_fail "grid past 32-bit box corners (check)" 1 \
  "grid.cells[0]: at most 536870912 cells per axis" 'model: heat
grid: {cells: [2147483647, 2147483647, 2147483647]}
initial: {u: "0"}
time: {end: 0.01}' check @CASE@
# method pinn's check printed "points: -1" for a batch past int's range (the run refused it)
want_rc=2 expect_fail "pinn: batch past 2^31 points (check)" 1 \
  "the PINN's batch would have more than 2^31 points" 'model: heat
method: pinn
grid: {cells: [100000, 100000]}
initial: {u: "0"}
time: {end: 0.1}' check @CASE@
# a grid too large for a rank's memory names the key and the bytes (it was "out of memory
# allocating a field of N bytes"); exit 1: whether it fits depends on the machine
want_rc=1 expect_fail "grid too large for one rank" 1 \
  "grid.cells [100000, 100000, 100000]: rank 0 cannot allocate its fields" 'model: heat
grid: {cells: [100000, 100000, 100000]}
initial: {u: "0"}
time: {steps: 1}' run @CASE@ --out @OUT@
# an exact solution that is not finite: the errors skipped those cells (errL2 nan, exit 0)
want_rc=2 expect_fail "exact not finite" 1 \
  'exact.u: "sqrt(x - 0.5)" is nan at x = 0.0625, y = 0.0625, t = 0' "$good
exact: {u: \"sqrt(x - 0.5)\"}" run @CASE@ --out @OUT@
# a boundary value or source that is not finite is the case's, not the step's (it said lower
# time.cfl or time.dt)
want_rc=2 expect_fail "boundary value not finite" 1 \
  'boundary.xlo.value: "sqrt(0.005 - t)" is nan at x = 0, y = 0.0625, t = 0.00666666667' "$good
boundary: {xlo: {type: dirichlet, value: \"sqrt(0.005 - t)\"}}" run @CASE@ --out @OUT@
want_rc=2 expect_fail "source not finite" 1 'source.u: "log(0.005 - t)" is nan at' "$good
source: {u: \"log(0.005 - t)\"}" run @CASE@ --out @OUT@
# under parareal too (it said a slice's state became non-finite: lower time.cfl)
want_rc=2 expect_fail "parareal: source not finite" 2 'source.u: "log(0.005 - t)" is nan at' "$good
source: {u: \"log(0.005 - t)\"}
decomposition: {time_slices: 2}" run @CASE@ --out @OUT@
# method pinn: initial values that are not finite (it said the loss became NaN: lower
# pinn.adam.lr), and an exact one (relative error computed without those points, exit 0)
pinn_nf='model: heat
method: pinn
grid: {cells: [8, 8]}
time: {end: 0.1}
pinn: {network: {width: 8, depth: 2}, adam: {iterations: 10}}'
want_rc=2 expect_fail "pinn: initial not finite" 1 'initial.u: "log(x - 0.5)" is nan at' \
  "$pinn_nf
initial: {u: \"log(x - 0.5)\"}" run @CASE@ --out @OUT@
want_rc=2 expect_fail "pinn: exact not finite" 1 'exact.u: "sqrt(x - 0.5)" is nan at x = 0.0625' \
  "$pinn_nf
initial: {u: \"sin(pi*x)\"}
exact: {u: \"sqrt(x - 0.5)\"}" run @CASE@ --out @OUT@
# float32 snapshots of values past float32's range are inf: said once (nothing was said); the
# run itself is right, exit 0
printf '%s\n' "${good%time:*}time: {steps: 2}" \
  'output: {snapshot_every: 1, snapshot_precision: single}' |
  sed 's/sin(pi\*x)/1e39*sin(pi*x)/' >"$work/f32.yaml"
said='warning: .*/snapshot_00000000.h5: 48 values of u past float32.*snapshot_precision: double'
if log=$("$TESSERA_BIN" run "$work/f32.yaml" --out "$work/f32" 2>&1) &&
  [ "$(grep -c "$said" <<<"$log")" = 1 ] && [ "$(grep -c warning <<<"$log")" = 1 ]; then
  pass "float32 snapshots past float32's range: one warning"
else
  failure "float32 snapshots past float32's range: not one warning"; printf '%s\n' "$log" | tail -3
fi
# a coarse propagator dearer than the fine one (a tiny coarse_dt overflowed its step count)
want_rc=2 expect_fail "parareal: coarse_dt 1e-14" 1 "cost more than its" "$good
decomposition: {time_slices: 2}
parareal: {coarse_dt: 1e-14, slices_per_rank: 2}" run @CASE@ --out @OUT@
# and tessera check says so before a job is submitted (it planned the ranks only)
want_rc=2 expect_fail "parareal: coarse_dt 1e-14 (check)" 1 "cost more than its" "$good
decomposition: {time_slices: 2}
parareal: {coarse_dt: 1e-14, slices_per_rank: 2}" check @CASE@
expect_fail "override value" 1 "--set time.end=abc" "$good" run @CASE@ --out @OUT@ --set time.end=abc
expect_fail "fuse out of range" 1 "t$((n + 1)).yaml:4:" 'model: heat
grid: {cells: [8, 8]}
initial: {u: "0"}
time: {end: 0.01, fuse: 17}' run @CASE@ --out @OUT@
expect_fail "fuse with implicit" 1 "time.fuse: a key of the explicit method" "$good
method: implicit" run @CASE@ --out @OUT@ --set time.fuse=2 --set time.dt=1e-3
expect_fail "fuse with parareal" 1 "time.fuse: not with parareal" "$good
decomposition: {time_slices: 2}" run @CASE@ --out @OUT@ --set time.fuse=2
expect_fail "fuse wider than the boxes" 2 "use time.fuse: 2 or less" "$good" run @CASE@ --out @OUT@ \
  --set time.fuse=3 --set time.scheme=ssp_rk2
expect_fail "override syntax" 1 "--set" "$good" run @CASE@ --out @OUT@ --set time.end
expect_fail "override unknown key" 1 "did you mean 'time.end'" "$good" run @CASE@ --out @OUT@ --set time.edn=1
# found by the case fuzzer (tests/fuzz): a checkpoint's record could not hold this option
expect_fail "override with a line break" 1 "a line break in the option" "$good" run @CASE@ --out @OUT@ \
  --set $'initial.u=sin(pi*x)\n*2'
expect_fail "unknown option" 1 "unknown option" "$good" run @CASE@ --frobnicate
expect_fail "unknown command" 1 "unknown command" "$good" fly @CASE@
expect_fail "no case file given" 1 "needs a case file" - run
expect_fail "--ranks with run" 1 "--ranks" "$good" run @CASE@ --ranks 2
expect_fail "--ranks not a number" 1 "--ranks" "$good" check @CASE@ --ranks two
expect_fail "--ranks with a sign" 1 "--ranks: expected a whole number from 1 to 1000000, got '+2'" "$good" \
  check @CASE@ --ranks +2
expect_fail "duplicate key" 1 "duplicate" "$good
model: wave" run @CASE@ --out @OUT@
expect_fail "blow-up" 1 "non-finite" 'model: heat
grid: {cells: [16, 16]}
initial: {u: "sin(pi*x)*sin(pi*y)"}
time: {dt: 0.01, steps: 200}' run @CASE@ --out @OUT@
# with checkpoints between monitor lines: none is written of the blown-up state, so the one
# `latest` names is finite (it named one of infinities, and keep had removed the good ones)
printf 'model: heat\ngrid: {cells: [16, 16]}\ninitial: {u: "sin(pi*x)*sin(pi*y)"}\ntime: {dt: 0.01, steps: 200}\noutput: {checkpoint_every: 2, keep: 2, progress: none}\n' >"$work/blow.yaml"
"$TESSERA_BIN" run "$work/blow.yaml" --out "$work/blow" >/dev/null 2>&1
rc=$?
last=$work/blow/$(cat "$work/blow/latest" 2>/dev/null)
[ $rc = 2 ] && [ -f "$last" ] && ! h5dump -d /fields/u "$last" | grep -qiE 'inf|nan' &&
  pass "blow-up with checkpoints: latest names a finite one" ||
  failure "blow-up with checkpoints: rc $rc, latest '$last' not finite"
expect_fail "rebalance key typo" 1 "did you mean 'rebalance.every'" "$good
rebalance: {evry: 5}" run @CASE@ --out @OUT@
expect_fail "rebalance window beyond every" 1 "rebalance.window: must be from 1 to" "$good
rebalance: {every: 10, window: 20}" run @CASE@ --out @OUT@
expect_fail "rebalance threshold override" 1 "--set rebalance.threshold=-1" "$good" run @CASE@ \
  --out @OUT@ --set rebalance.threshold=-1
expect_fail "slowdown steps" 1 "debug.slowdown.steps: expected [a, b]" "$good
debug: {slowdown: {rank: 0, factor: 2, steps: [5]}}" run @CASE@ --out @OUT@
expect_fail "slowdown rank beyond the ranks (check)" 1 ":5:26: debug.slowdown.rank: rank 3, but the run has 2 ranks" "$good
debug: {slowdown: {rank: 3, factor: 2, steps: [1, 5]}}" check @CASE@ --ranks 2
# step counts: time.steps past int (3e9) is taken, as time.end derives such counts; past 2^62
# neither is; method implicit, whose PETSc counts steps in 32 bits, refuses more (the count
# wrapped and the run ended early, saying done)
if log=$("$TESSERA_BIN" check <(printf '%s\n' "${good/end: 0.01/steps: 3000000000}") 2>&1) &&
   grep -q ", 3000000000 steps of dt" <<<"$log"; then pass "time.steps 3000000000 taken"
else failure "time.steps 3000000000"; printf '%s\n' "$log" | tail -3; fi
expect_fail "time.steps past 2^62" 1 "time.steps: integer out of range [-4611686018427387904, 4611686018427387904]" \
  "${good/end: 0.01/steps: 5000000000000000000}" check @CASE@
expect_fail "time.end derives past 2^62 steps" 1 "needs 2.84e+22 steps, more than 4.61e+18" "$good" check @CASE@ --set time.end=1e20
expect_fail "implicit: steps past PetscInt" 1 "time: 1e+10 steps of dt = 1e-12, more than this PETSc's 32-bit step count" \
  "model: heat
method: implicit
grid: {cells: [8, 8]}
initial: {u: \"sin(pi*x)\"}
time: {dt: 1e-12, end: 0.01}" run @CASE@ --out @OUT@
# refused in a method's set-up, before the driver makes the output directory (solver/driver.c):
# the PINN made it first and left it behind
pinn='model: heat
method: pinn
grid: {cells: [8, 8]}
initial: {u: "sin(pi*x)"}
time: {end: 0.1}
boundary: {default: {type: dirichlet, value: 0}}
pinn: {network: {width: 8, depth: 2}, adam: {iterations: 10}}'
expect_fail "pinn: time slabs and ranks" 2 "time slabs need a rank count that is a multiple of 3" \
  "$pinn" run @CASE@ --out @OUT@ --set decomposition.time_slices=3
expect_fail "pinn: a fault kind it lacks" 1 "kind=graph is not available with method pinn" \
  "$pinn" run @CASE@ --out @OUT@ --inject-fault rank=0,step=5,kind=graph
# the environment: a variable tessera reads whose value does not parse is refused by name
# (solver/env.c), not taken as its default; on 2 ranks one message
TESSERA_TIME_TILES=no expect_fail "env: TESSERA_TIME_TILES" 1 \
  "environment variable TESSERA_TIME_TILES='no': expected on or off" "$good" run @CASE@ --out @OUT@
TSR_NET_FUSED=3 expect_fail "env: TSR_NET_FUSED, 2 ranks" 2 \
  "environment variable TSR_NET_FUSED='3': expected 0 (cuBLAS products)" "$good" run @CASE@ --out @OUT@
OMP_NUM_THREADS=100000 expect_fail "env: OMP_NUM_THREADS" 1 \
  "environment variable OMP_NUM_THREADS='100000': expected a whole number of threads" \
  "$good" run @CASE@ --out @OUT@
TESSERA_ATTEMPT=first expect_fail "env: TESSERA_ATTEMPT" 1 \
  "environment variable TESSERA_ATTEMPT='first': expected the attempt number" "$good" check @CASE@
# supervise refuses before it launches anything (the run would leave its output directory)
TESSERA_PROBE_TIMEOUT=2m expect_fail "env: TESSERA_PROBE_TIMEOUT, supervise" 1 \
  "tessera supervise: environment variable TESSERA_PROBE_TIMEOUT='2m': expected whole seconds" \
  "$good" supervise -- "$TESSERA_BIN" run @CASE@ --out @OUT@
# and the values they take are taken
if log=$(TESSERA_TIME_TILES=on TSR_NET_FUSED=2 TESSERA_PROBE_TIMEOUT=60 TESSERA_ATTEMPT= \
  "$TESSERA_BIN" run <(printf '%s\n' "$good") --out "$work/envok" 2>&1); then
  pass "env: values that parse run"
else failure "env: values that parse refused"; printf '%s\n' "$log" | tail -3; fi
finish

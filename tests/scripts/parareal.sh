#!/usr/bin/env bash
# Parareal (decomposition.time_slices > 1, method explicit) on CPU ranks:
# - exactness: after k iterations the first k slice ends are the serial run's, bit for bit,
#   and slice k + 1's is not yet; after time_slices iterations the whole run is;
# - spatial invariance: for one slice count and iteration count the result is the same bits
#   for every rank count, partitioner and number of slices per rank (2D heat, and 3D
#   advection-diffusion in single precision with a periodic axis);
# - convergence: heat and Allen-Cahn stop below tol in far fewer iterations than slices, within
#   tol of the serial result; the wave equation's iterations are reported;
# - checkpoints and stops: a rank lost, a signal (on one rank, with or without
#   checkpoint_every, in the first iteration, and from outside in the middle of a long
#   iteration) or --walltime drops the iteration in progress; continued, the same bits;
# - report.json's parareal member, and refusals (rank counts, an unstable coarse step, a
#   link TESSERA_PARAREAL_LINK cannot give).
set -u
. "$(dirname "$0")/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1 # small grids; CI runs two tests at a time on 2 cores
py=/usr/bin/python3
[ -x "$py" ] || py=python3
q="--set output.progress=none"
same() { h5diff -q "$1" "$2" /fields/u /fields/u >/dev/null 2>&1; }
# relative max-norm difference of /fields/u
reldiff() {
  $py -c "import h5py,numpy as n,sys; a=h5py.File(sys.argv[1])['fields/u'][()]; b=h5py.File(sys.argv[2])['fields/u'][()]; print('%.3e' % (abs(a-b).max()/abs(b).max()))" "$1" "$2"
}
field() { $py -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval('r'+sys.argv[2]))" "$@"; }

cat >"$work/heat.yaml" <<'YAML'
model: heat
grid: {cells: [32, 32], lo: [0, 0], hi: [1, 1]}
params: {kappa: 1.0}
initial: {u: "sin(pi*x)*sin(pi*y) + 0.3*sin(3*pi*x)*sin(2*pi*y)"}
boundary: {default: {type: dirichlet, value: 0}, xhi: {type: neumann, value: "0.5*y"}}
source: {u: "sin(2*pi*t)*x*y"}
time: {scheme: ssp_rk3, dt: auto, steps: 96}
output: {progress: none, snapshot_every: 24}
YAML
# --- tessera check's memory column counts parareal's states (4 per slice of a rank and 4 more:
# it showed the plain run's) and the stored precision (it counted doubles) -------------------
mem() { # the memory of rank 0 in check's table, MiB
  "$TESSERA_BIN" check "$work/heat.yaml" --set 'grid.cells=[1024, 1024]' "$@" |
    awk '$1 == "0" && $NF == "MiB" { print $(NF - 1) }'
}
plain=$(mem --ranks 2) single=$(mem --ranks 2 --set precision=single)
pr=$(mem --ranks 4 --set decomposition.time_slices=4 --set parareal.slices_per_rank=2)
if [ -n "$plain" ] && [ -n "$single" ] && [ -n "$pr" ] &&
   $py -c "import sys; p, s, q = map(float, sys.argv[1:]); sys.exit(0 if abs(s / p - 0.5) < 0.01 and abs(q / p - 16 / 4) < 0.05 else 1)" "$plain" "$single" "$pr"; then
  pass "check's memory: $plain MiB a rank, $single in single precision, $pr with 2 parareal slices a rank"
else failure "check's memory: '$plain' MiB, '$single' single, '$pr' with parareal"; fi
run_ok "serial heat" 1 "$work/heat.yaml" --out "$work/serial" || exit 1
snap() { printf '%s/snapshot_%08d.h5' "$1" "$2"; }

# --- exactness: 4 slices of 24 steps; k iterations leave slices 1..k exact ------------------
ks="1 2 3 4"
[ -n "${TSR_SANITIZED:-}" ] && ks="2 4"
for k in $ks; do
  np=2 m=2
  [ $k = 4 ] && np=4 m=1
  run_ok "exactness k=$k" $np "$work/heat.yaml" --out "$work/k$k" \
    --set decomposition.time_slices=4 --set parareal.max_iterations=$k \
    --set parareal.slices_per_rank=$m --set parareal.tol=1e-300 || continue
  bad=""
  for n in 1 2 3 4; do
    if [ $n -le $k ]; then same "$(snap "$work/serial" $((24 * n)))" "$(snap "$work/k$k" $((24 * n)))" || bad="$bad end$n-differs"
    else same "$(snap "$work/serial" $((24 * n)))" "$(snap "$work/k$k" $((24 * n)))" && bad="$bad end$n-already-equal"
    fi
  done
  [ $k = 4 ] && { same "$work/serial/final.h5" "$work/k4/final.h5" || bad="$bad final-differs"; }
  if [ -z "$bad" ]; then pass "exactness: after $k iteration(s) slice ends 1..$k equal the serial run's bits, the rest differ"
  else failure "exactness k=$k:$bad"; fi
done

# --- spatial invariance: 4 slices, 2 iterations (not converged: the result is parareal's own)
inv() { # NAME CASE NP ARGS...: final.h5 equal to the first run's of the set
  local name=$1 case=$2 np=$3 ref=$4
  shift 4
  run_ok "invariance $name" "$np" "$case" --out "$work/$name" $q "$@" || return
  if same "$ref" "$work/$name/final.h5"; then pass "invariance: $name equals the reference bits"
  else failure "invariance: $name differs from the reference"; fi
}
P="--set decomposition.time_slices=4 --set parareal.max_iterations=2 --set parareal.tol=1e-300"
P="$P --set output.snapshot_every=1000"
run_ok "invariance reference" 1 "$work/heat.yaml" --out "$work/ref" $q $P \
  --set parareal.slices_per_rank=4 && {
  ref=$work/ref/final.h5
  if same "$ref" "$work/serial/final.h5"; then failure "invariance: 2 iterations already the serial result (the test would prove nothing)"
  else pass "invariance: 2 iterations differ from the serial run ($(reldiff "$ref" "$work/serial/final.h5"))"; fi
  inv m2_np2 "$work/heat.yaml" 2 "$ref" $P --set parareal.slices_per_rank=2
  # (under the sanitizers, tests/sanitize.sh, a subset: the memory paths are the same)
  [ -z "${TSR_SANITIZED:-}" ] && inv m1_np4 "$work/heat.yaml" 4 "$ref" $P --set parareal.slices_per_rank=1
  [ -z "${TSR_SANITIZED:-}" ] && inv space2_rcb "$work/heat.yaml" 2 "$ref" $P --set parareal.slices_per_rank=4
  inv space3_slabs "$work/heat.yaml" 3 "$ref" $P --set parareal.slices_per_rank=4 \
    --set decomposition.partition=slabs
  inv space2x2_grid "$work/heat.yaml" 4 "$ref" $P --set parareal.slices_per_rank=2 \
    --set 'decomposition.ranks=[1, 2]'
}
cat >"$work/ad3.yaml" <<'YAML'
model: advection_diffusion
precision: single
grid: {cells: [16, 8, 8], periodic: [true, false, false]}
params: {kappa: 0.05, vx: 1.0, vy: 0.3, vz: 0.0}
initial: {u: "sin(2*pi*x)*sin(pi*y)*sin(pi*z) + 1"}
boundary: {default: {type: dirichlet, value: 1}, zhi: {type: neumann, value: 0}}
time: {scheme: ssp_rk2, dt: auto, steps: 40}
decomposition: {time_slices: 4}
parareal: {max_iterations: 2, tol: 1.0e-300}
output: {progress: none}
YAML
run_ok "invariance 3D reference" 1 "$work/ad3.yaml" --out "$work/ad_ref" \
  --set parareal.slices_per_rank=4 && {
  inv ad_np2_m2 "$work/ad3.yaml" 2 "$work/ad_ref/final.h5" --set parareal.slices_per_rank=2
  [ -z "${TSR_SANITIZED:-}" ] && inv ad_space3 "$work/ad3.yaml" 3 "$work/ad_ref/final.h5" \
    --set parareal.slices_per_rank=4
}

# the coarse steps in time tiles (forward Euler coarse steps, nothing that depends on t, one
# space rank: several coarse steps a pass): the bits of single steps, so the result equals the
# one with the tiles off and the one on 2 space ranks (which take none)
sed 's/^source: .*/source: {u: "x*y"}/; s/value: "0.5\*y"/value: "0.5*y*x"/' "$work/heat.yaml" >"$work/eu.yaml"
E="$P --set parareal.coarse_scheme=euler --set parareal.slices_per_rank=4"
run_ok "coarse tiles reference" 1 "$work/eu.yaml" --out "$work/eu_ref" $q $E && {
  n=$(field "$work/eu_ref/report.json" "['parareal']['coarse_passes']")
  k=$(field "$work/eu_ref/report.json" "['parareal']['coarse_pass_steps']")
  [ "$n" -gt 0 ] && [ "$k" -ge 3 ] && pass "coarse steps in time tiles: $n passes of $k" ||
    failure "coarse steps in time tiles: $n passes of $k"
  TESSERA_TIME_TILES=off inv eu_tiles_off "$work/eu.yaml" 1 "$work/eu_ref/final.h5" $E
  [ "$(field "$work/eu_tiles_off/report.json" "['parareal']['coarse_passes']")" = 0 ] &&
    pass "TESSERA_TIME_TILES=off: no coarse pass" || failure "TESSERA_TIME_TILES=off: coarse passes"
  inv eu_space2 "$work/eu.yaml" 2 "$work/eu_ref/final.h5" $E
}

# --- convergence (numerics; the plain run has it, not the sanitizers') ------------------------
if [ -z "${TSR_SANITIZED:-}" ]; then
conv() { # NAME CASE NP MAXIT ARGS...: stops below tol in <= MAXIT iterations, within 5 tol
  local name=$1 case=$2 np=$3 maxit=$4
  shift 4
  run_ok "serial $name" 1 "$case" --out "$work/s_$name" $q || return
  run_ok "parareal $name" "$np" "$case" --out "$work/p_$name" $q "$@" || return
  local it conv d
  it=$(field "$work/p_$name/report.json" "['parareal']['iterations']")
  conv=$(field "$work/p_$name/report.json" "['parareal']['converged']")
  d=$(reldiff "$work/p_$name/final.h5" "$work/s_$name/final.h5")
  if [ "$conv" = True ] && [ "$it" -le "$maxit" ] &&
     $py -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 5e-6 else 1)" "$d"; then
    pass "convergence $name: $it iterations (<= $maxit) of 16 slices, $d from the serial result"
  else
    failure "convergence $name: converged $conv after $it iterations (want <= $maxit), $d from serial (want <= 5e-6)"
  fi
}
cat >"$work/heat64.yaml" <<'YAML'
model: heat
grid: {cells: [64, 64]}
params: {kappa: 1.0}
initial: {u: "sin(pi*x)*sin(pi*y) + 0.3*sin(3*pi*x)*sin(2*pi*y)"}
boundary: {default: {type: dirichlet, value: 0}}
time: {scheme: ssp_rk3, dt: auto, end: 0.1}
YAML
conv heat "$work/heat64.yaml" 2 6 --set decomposition.time_slices=16 \
  --set parareal.slices_per_rank=8 --set parareal.tol=1e-6
# (a front the coarse grid resolves, eps = 5 fine cells, and 73 fine steps a slice: with
# eps = 0.03, or one fine step a slice, the coarse grid's error is too large and the
# iterations take most of the slices, as parareal's theory says)
cat >"$work/ac.yaml" <<'YAML'
model: allen_cahn
grid: {cells: [64, 64]}
params: {eps: 0.08}
initial: {u: "0.6*sin(2*pi*x)*cos(pi*y) + 0.2*cos(3*pi*x*y)"}
boundary: {default: {type: neumann, value: 0}}
time: {scheme: ssp_rk3, dt: auto, end: 10}
YAML
conv allen_cahn "$work/ac.yaml" 2 6 --set decomposition.time_slices=16 \
  --set parareal.slices_per_rank=8 --set parareal.tol=1e-6
cat >"$work/wave.yaml" <<'YAML'
model: wave
grid: {cells: [32, 32]}
params: {c: 1.0}
initial: {u: "exp(-100*(pow(x-0.5, 2) + pow(y-0.5, 2)))", v: "0"}
boundary: {default: {type: dirichlet, value: 0}}
time: {scheme: ssp_rk3, dt: auto, end: 0.5}
YAML
if run_ok "parareal wave" 2 "$work/wave.yaml" --out "$work/p_wave" $q \
  --set decomposition.time_slices=8 --set parareal.slices_per_rank=4 --set parareal.tol=1e-6; then
  it=$(field "$work/p_wave/report.json" "['parareal']['iterations']")
  pass "wave: $it iterations of 8 slices to tol 1e-6 (parareal is known to struggle here; reported, not bounded)"
fi
fi

# --- report.json ------------------------------------------------------------------------------
r=$work/k2/report.json
if [ -f "$r" ] && $py - "$r" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["parareal"]
assert p["time_slices"] == 4 and p["iterations"] == 2 and p["coarsen"] == 2, p
assert len(p["history"]) == 2 and all(len(h["change"]) == 4 for h in p["history"])
ch = p["history"][1]["change"]
# the end of slice 1 was exact after iteration 1: unchanged in iteration 2, the others moved
assert ch[0] == 0 and min(ch[1:]) > 0, ch
assert p["coarse_dt_max"] <= p["coarse_dt_limit"] and p["fine_seconds"] >= 0
assert p["link"] == "mpi", p["link"]  # CPU ranks: the end states go over MPI
PY
then pass "report.json: parareal's settings, iterations, per-slice changes and the link (mpi)"
else failure "report.json: the parareal member is missing or wrong"; fi

# --- checkpoints: 3 iterations straight = killed after 2 (or stopped by a signal, which
# comes after iteration 1: iteration 2 is dropped, the run stops with the states of 1) and
# continued, on another grouping and rank count, bit for bit ----------------------------
N="--set decomposition.time_slices=4 --set parareal.max_iterations=3 --set parareal.tol=1e-300"
N="$N --set output.snapshot_every=1000"
C="$N --set output.checkpoint_every=1"
ckpts() { ls "$1" | grep parareal_ | tr '\n' ' '; }
no_tmp() { [ -z "$(find "$1" -name '*.tmp')" ]; }
dropped="stopped by a signal during iteration 2, which is dropped; continue from the checkpoint"
dropped="$dropped of iteration 1"
if run_ok "checkpoints straight" 2 "$work/heat.yaml" --out "$work/cs" $C --set parareal.slices_per_rank=2; then
  log=$("$TESSERA_BIN" supervise --max-restarts 1 -- "$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/heat.yaml" \
    --out "$work/ck" $C --set parareal.slices_per_rank=2 --inject-fault rank=1,step=2,kind=exit 2>&1); rc=$?
  if [ $rc = 0 ] && echo "$log" | grep -q "restart: parareal iteration 2 from $work/ck/parareal_0002.h5" &&
     same "$work/cs/final.h5" "$work/ck/final.h5"; then
    pass "checkpoints: a rank lost after iteration 2, supervise relaunches from parareal_0002.h5, the same bits"
  else echo "$log" | tail -5; failure "checkpoints: supervise's relaunch (rc $rc)"; fi
  log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/heat.yaml" --out "$work/sig" $C \
    --set parareal.slices_per_rank=2 --inject-fault rank=0,step=1,kind=signal 2>&1); rc=$?
  if [ $rc = 4 ] && echo "$log" | grep -q "$dropped, $work/sig/parareal_0001.h5" &&
     ! echo "$log" | grep -q "parareal iteration 2" &&
     [ "$(ckpts "$work/sig")" = "parareal_0001.h5 " ] &&
     run_ok "checkpoints: continued on 1 rank" 1 "$work/heat.yaml" --out "$work/sig" $C \
       --set parareal.slices_per_rank=4 --restart latest &&
     same "$work/cs/final.h5" "$work/sig/final.h5"; then
    pass "checkpoints: a signal drops the iteration in progress (exit 4, no figures or checkpoint" \
      "of it); continued on 1 rank, the same bits"
  else echo "$log" | tail -5; failure "checkpoints: the signal's stop and continuation (rc $rc)"; fi
  # the same without output.checkpoint_every, on 2 groups of 2 space ranks, the signal on one
  # rank (space rank 1 of group 0): the group stops together, tells group 1, and iteration 1,
  # which had no checkpoint, gets one at the stop
  log=$("$MPIEXEC" -n 4 "$TESSERA_BIN" run "$work/heat.yaml" --out "$work/sig4" $N \
    --set parareal.slices_per_rank=2 --inject-fault rank=1,step=1,kind=signal 2>&1); rc=$?
  if [ $rc = 4 ] && echo "$log" | grep -q "$dropped, $work/sig4/parareal_0001.h5" &&
     [ "$(ckpts "$work/sig4")" = "parareal_0001.h5 " ] &&
     [ "$(cat "$work/sig4/latest")" = parareal_0001.h5 ] && no_tmp "$work/sig4" &&
     run_ok "checkpoints: continued on 2 ranks" 2 "$work/heat.yaml" --out "$work/sig4" $N \
       --set parareal.slices_per_rank=2 --restart latest --set output.checkpoint_every=2 \
       --set output.keep=1 &&
     same "$work/cs/final.h5" "$work/sig4/final.h5" &&
     [ "$(ckpts "$work/sig4")" = "parareal_0002.h5 " ]; then
    pass "checkpoints: a signal on one space rank drops iteration 2 on every group; iteration" \
      "1's checkpoint written at the stop; continued, the same bits; keep 1 removed it"
  else
    echo "$log" | tail -5; ls "$work/sig4"
    failure "checkpoints: one rank's signal without checkpoint_every (rc $rc)"
  fi
  # a signal before the first iteration ends: nothing to continue from
  log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/heat.yaml" --out "$work/sig0" $N \
    --set parareal.slices_per_rank=2 --inject-fault rank=1,step=0,kind=signal 2>&1); rc=$?
  first="before its first iteration ended; nothing to continue from"
  if [ $rc = 4 ] && echo "$log" | grep -q "stopped by a signal $first" &&
     [ -z "$(ckpts "$work/sig0")" ] && [ ! -e "$work/sig0/latest" ] &&
     [ ! -e "$work/sig0/final.h5" ]; then
    pass "checkpoints: a signal in iteration 1 stops the run at once, nothing written (exit 4)"
  else echo "$log" | tail -5; failure "checkpoints: a signal in iteration 1 (rc $rc)"; fi
  # --walltime within the margin a stop keeps (a checkpoint's write, 1 s): polled inside the
  # iterations, it drops iteration 1 at once rather than letting it run past the limit
  log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/heat.yaml" --out "$work/wall" $N \
    --set parareal.slices_per_rank=2 --walltime 1 2>&1); rc=$?
  if [ $rc = 4 ] && echo "$log" | grep -q "stopped by the wall-time limit $first" &&
     ! echo "$log" | grep -q "parareal iteration 1" && [ -z "$(ckpts "$work/wall")" ]; then
    pass "checkpoints: --walltime shorter than its margin drops iteration 1 (exit 4)"
  else echo "$log" | tail -5; failure "checkpoints: --walltime in iteration 1 (rc $rc)"; fi
  if [ "$(ls "$work/cs" | grep parareal_ | tr '\n' ' ')" = "parareal_0001.h5 parareal_0002.h5 " ] &&
     [ "$(cat "$work/cs/latest")" = parareal_0002.h5 ]; then
    pass "checkpoints: parareal_0001.h5 and 0002.h5 (none at the last iteration), latest names 0002"
  else ls "$work/cs"; failure "checkpoints: the files"; fi
  log=$("$TESSERA_BIN" run "$work/heat.yaml" --out "$work/cs" $q --set decomposition.time_slices=8 \
    --set parareal.slices_per_rank=8 --restart latest 2>&1) &&
    failure "checkpoints: 8 slices from a checkpoint of 4 accepted" ||
    { echo "$log" | grep -q "holds the states of 4 time slices and this run has 8" &&
      pass "checkpoints: another slice count refused" || failure "checkpoints: refusal message"; }
  # another end: the states would be taken for other times (it ran on and said done)
  log=$("$TESSERA_BIN" run "$work/heat.yaml" --out "$work/cs" $q $N --set time.steps=192 \
    --set parareal.slices_per_rank=4 --restart latest 2>&1) &&
    failure "checkpoints: time.steps 192 from a checkpoint of 96 accepted" ||
    { echo "$log" | grep -q "holds the slice starts of a run of 96 fine steps of dt .* and this run takes 192 of dt" &&
      pass "checkpoints: another time.steps refused" || { echo "$log" | tail -2; failure "checkpoints: time plan refusal"; }; }
fi
# a run that ended without checkpoints: its final.h5 continues without time slices, not with
log=$("$TESSERA_BIN" run "$work/heat.yaml" --out "$work/serial" $q --set decomposition.time_slices=2 \
  --set parareal.slices_per_rank=2 --restart latest 2>&1) &&
  failure "final.h5 continued by parareal" ||
  { echo "$log" | grep -q "holds final.h5 of a run that ended and no parareal checkpoint" &&
    pass "final.h5 and no parareal checkpoint: refused, saying how to continue" ||
    { echo "$log" | tail -2; failure "final.h5: refusal message"; }; }

# --- a stop inside a long iteration: SIGUSR1 to mpirun (which forwards it to the ranks) 0.15 s
# into iteration 2, whose fine solve takes about 0.8 s here (the same as iteration 1's): the
# ranks stop within a few fine steps, well before the iteration would have ended, drop it, and
# write iteration 1's checkpoint; continued, the run equals the serial one (2 slices, 2
# iterations), computed meanwhile. (Not under the sanitizers: the timing is the point.)
if [ -z "${TSR_SANITIZED:-}" ]; then
  sed 's/cells: \[32, 32\]/cells: [128, 128]/; s/steps: 96/steps: 16000/' "$work/heat.yaml" |
    sed 's/, snapshot_every: 24//' >"$work/long.yaml"
  L="--set decomposition.time_slices=2 --set parareal.slices_per_rank=1 --set parareal.coarsen=4"
  L="$L --set parareal.max_iterations=2 --set parareal.tol=1e-300"
  d=$work/mid
  "$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/long.yaml" --out "$d" $L >"$d.log" 2>&1 &
  pid=$!
  until grep -q "parareal iteration 1:" "$d.log" || ! kill -0 $pid 2>/dev/null; do
    sleep 0.02
  done
  sleep 0.15
  t0=$(date +%s.%N)
  kill -USR1 $pid
  until grep -q "parareal: stopped" "$d.log" || ! kill -0 $pid 2>/dev/null; do sleep 0.01; done
  t1=$(date +%s.%N)
  wait $pid; rc=$?
  t2=$(date +%s.%N)
  fine=$(sed -n 's/^parareal iteration 1: .* fine \([0-9.]*\) s,.*/\1/p' "$d.log")
  lat=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  end=$(awk -v a="$t0" -v b="$t2" 'BEGIN { printf "%.2f", b - a }')
  if [ $rc = 4 ] && [ -n "$fine" ] && awk -v l="$lat" -v f="$fine" 'BEGIN { exit !(l < f / 2) }' &&
     grep -q "$dropped, $d/parareal_0001.h5" "$d.log" && ! grep -q "parareal iteration 2" "$d.log" &&
     [ "$(cat "$d/latest")" = parareal_0001.h5 ] && [ "$(ckpts "$d")" = "parareal_0001.h5 " ] &&
     no_tmp "$d"; then
    pass "a stop inside an iteration: stopped $lat s after SIGUSR1 (an iteration's fine solve:" \
      "$fine s; mpirun ended $end s after), iteration 2 dropped, latest names parareal_0001.h5"
  else
    tail -5 "$d.log"
    failure "a stop inside an iteration: rc $rc, stopped $lat s after the signal (fine $fine s)"
  fi
  "$TESSERA_BIN" run "$work/long.yaml" --out "$work/long_serial" $q >/dev/null 2>&1 &
  spid=$!
  run_ok "a stop inside an iteration: continued" 2 "$work/long.yaml" --out "$d" $q $L \
    --restart latest
  wait $spid
  same "$work/long_serial/final.h5" "$d/final.h5" &&
    pass "a stop inside an iteration: continued from parareal_0001.h5, the serial run's bits" ||
    failure "a stop inside an iteration: the continuation differs from the serial run"
fi

# --- refusals ---------------------------------------------------------------------------------
refused() { # LABEL NP WANT ARGS...
  local label=$1 np=$2 want=$3
  shift 3
  local log
  if log=$("$MPIEXEC" -n "$np" "$TESSERA_BIN" run "$work/heat.yaml" --out "$work/bad" $q "$@" 2>&1); then
    failure "$label: accepted"
  elif echo "$log" | grep -qF -- "$want" && [ ! -e "$work/bad/final.h5" ]; then
    pass "$label: refused ($want)"
  else
    echo "$log" | tail -5
    failure "$label: not the expected message '$want'"
  fi
}
refused "ranks not a multiple of the groups" 3 "need the rank count to be a multiple of 4 rank groups" \
  --set decomposition.time_slices=4
refused "unstable coarse step" 1 "is past the coarse grid's stability limit" \
  --set decomposition.time_slices=4 --set parareal.slices_per_rank=4 --set parareal.coarse_dt=0.01
refused "more slices than steps" 1 "each slice needs a step at least" \
  --set decomposition.time_slices=128 --set parareal.slices_per_rank=128
TESSERA_PARAREAL_LINK=nccl refused "the NCCL link on CPU ranks" 2 \
  "TESSERA_PARAREAL_LINK=nccl: the run is on the host backend" --set decomposition.time_slices=2
TESSERA_PARAREAL_LINK=shm refused "an unknown link" 2 \
  "TESSERA_PARAREAL_LINK=shm: not a way between parareal's rank groups" --set decomposition.time_slices=2
TESSERA_PARAREAL_BATCH=4x refused "an unreadable batch setting" 1 \
  "TESSERA_PARAREAL_BATCH=4x: expected off, auto (or on), or the number of time slices" \
  --set decomposition.time_slices=4 --set parareal.slices_per_rank=4
TESSERA_PARAREAL_COARSE_BLOCK=yes refused "an unreadable coarse block setting" 1 \
  "TESSERA_PARAREAL_COARSE_BLOCK=yes: expected off, auto or on" \
  --set decomposition.time_slices=4 --set parareal.slices_per_rank=4
TESSERA_PARAREAL_FINE_BLOCK=all refused "an unreadable fine block setting" 1 \
  "TESSERA_PARAREAL_FINE_BLOCK=all: expected off, auto or on" \
  --set decomposition.time_slices=4 --set parareal.slices_per_rank=4
finish

#!/usr/bin/env bash
# method: pinn on CPU ranks (the host backend with OpenBLAS): small versions of the example
# problems train for real and reach asserted errors; a restart continues the same trajectory
# bit for bit; a loss that becomes NaN stops the run with its iteration and term and the last
# checkpoint good; the keys and models the method cannot take are refused with their message.
set -u
. "$(dirname "$0")/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# one thread: these networks are small, and CI runs two tests at a time on its 2 cores
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
cases=$TESSERA_SOURCE/cases

# Debian's python3 has numpy and h5py (scripts/setup.sh); one first on PATH may not
py=/usr/bin/python3
[ -x "$py" ] || py=python3
# rel_err FILE prints the relative L2 error the report records
rel_err() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['rel_l2_error'])" "$1"; }
below() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)" "$1" "$2"; }

# small Poisson runs (here and in the NaN and rank checks below)
small="--set grid.cells=[24,24] --set pinn.network.width=20 --set pinn.network.depth=3"

# --- accuracy: Poisson 2D and heat 2D + t against exact, in double and single -------------
# (not under the sanitizers, tests/sanitize.sh: thousands of iterations; the plain run has them)
if [ -z "${TSR_SANITIZED:-}" ]; then
train() { # LABEL BOUND CASE ARGS...: trains, asserts the report's error <= BOUND
  local label=$1 bound=$2 case=$3
  shift 3
  local out="$work/$label"
  run_ok "$label" 1 "$case" --out "$out" --set output.progress=none "$@" || return 1
  local e
  e=$(rel_err "$out/report.json")
  if below "$e" "$bound"; then pass "$label: relative L2 error $e <= $bound"
  else failure "$label: relative L2 error $e > $bound"; fi
}
# measured 2.4e-3 (double) after 3000 iterations
psmall="$small --set pinn.points.boundary=64 --set pinn.weights.boundary=10 --set pinn.adam.lr=1e-2
        --set pinn.adam.decay_every=500 --set pinn.adam.iterations=3000"
train poisson_double 1e-2 "$cases/pinn_poisson2d.yaml" $psmall --set precision=double
train poisson_single 1e-2 "$cases/pinn_poisson2d.yaml" $psmall
# L-BFGS after the same Adam iterations: measured 5.4e-4 after 500 more
train poisson_lbfgs 1.2e-3 "$cases/pinn_poisson2d.yaml" $psmall --set precision=double \
  --set pinn.lbfgs.iterations=500
# measured 1.3e-2 after 3000 iterations (Adam only, weights 10)
train heat 3e-2 "$cases/pinn_heat2d.yaml" --set grid.cells=[12,12] --set pinn.points.times=8 \
  --set pinn.lbfgs.iterations=0 --set pinn.weights.boundary=10 --set pinn.weights.initial=10 \
  --set pinn.network.width=20 --set pinn.network.depth=3 --set pinn.points.boundary=128 \
  --set pinn.points.initial=256 --set pinn.adam.iterations=3000 --set pinn.adam.lr=1e-2 \
  --set pinn.adam.decay_every=500 --set output.snapshot_every.time=0.05
# the heat run's snapshots: t = 0, 0.05, 0.1 in snapshots.xmf
if [ "$(grep -c 'snapshot_0000000[0-2].h5' "$work/heat/snapshots.xmf" 2>/dev/null)" -ge 3 ]; then
  pass "heat: three snapshots in snapshots.xmf"
else
  failure "heat: snapshots.xmf lacks the snapshots"
fi

# --- Burgers 1D + t against its Cole-Hopf solution (tests/data/burgers_nu05_ref.csv) ---------
# At the benchmark's nu = 0.01/pi the shock is a few cells wide, and whether a network this
# small (width 20, depth 4, 2000 points: what CI affords) resolves it is chance: seeds 1-3 of
# the earlier settings ended at 0.03-0.6 against 0.08. At nu = 0.05/pi (the same equation,
# a smoother front; its own Cole-Hopf reference, make_burgers_ref.py --nu-pi 0.05 --dt 0.25)
# seeds 1-4 ended at 4.3e-3 to 8.8e-3 after 4000 iterations (2-core host): the bound is 3x
# the worst. The benchmark's nu is bench/pinn_accuracy_gpu.sh's (4.4e-4 on a GPU).
out="$work/burgers"
if run_ok burgers 1 "$cases/pinn_burgers1d.yaml" --out "$out" --set output.progress=none \
     --set params.nu=0.015915494309189534 \
     --set pinn.lbfgs.iterations=0 --set pinn.network.width=20 --set pinn.network.depth=4 --set pinn.points.interior=2000 \
     --set pinn.points.resample_every=500 --set pinn.adam.iterations=4000 --set pinn.adam.lr=1e-2 \
     --set pinn.adam.decay_every=500 --set pinn.log_every=1000 \
     --set output.snapshot_every.time=0.25; then
  e=$("$py" "$TESSERA_SOURCE/tests/scripts/pinn_compare.py" "$out" \
      "$TESSERA_SOURCE/tests/data/burgers_nu05_ref.csv" 2>&1)
  if below "$e" 0.03; then pass "burgers (nu 0.05/pi): relative L2 error against Cole-Hopf $e <= 0.03"
  else failure "burgers: error against Cole-Hopf: $e"; fi
fi
# a case without exact: the closing line gives no error (it printed "relative L2 error nan")
if log=$("$MPIEXEC" -n 1 "$TESSERA_BIN" run "$cases/pinn_burgers1d.yaml" --out "$work/burgers_short" \
           --set output.progress=none --set pinn.lbfgs.iterations=0 --set pinn.adam.iterations=20 \
           --set pinn.network.width=8 --set pinn.points.interior=200 2>&1); then
  done_line=$(echo "$log" | grep "^done:")
  case "$done_line" in
    *"it/s), loss "*"; output in"*) case "$done_line" in
        *nan*|*error*) failure "burgers without exact: closing line: $done_line" ;;
        *) pass "a case without exact: the closing line has no error figure ($done_line)" ;; esac ;;
    *) echo "$log" | tail -5; failure "burgers without exact: no closing line" ;;
  esac
  if "$py" -c "import json, sys; sys.exit(json.load(open(sys.argv[1]))['network']['path'] != 'host')" \
       "$work/burgers_short/report.json"; then pass "report.json: network.path is host on CPU ranks"
  else failure "report.json: network.path on CPU ranks is not host"; fi
else echo "$log" | tail -5; failure "burgers, 20 iterations: tessera run exited non-zero"; fi

fi

# --- restart: N iterations straight = N/2, restart, N/2 (the checkpoint at 3N/4 bitwise) ----
rs="--set grid.cells=[8,8] --set pinn.network.width=8 --set pinn.network.depth=2
    --set pinn.points.interior=100 --set pinn.points.resample_every=30 --set pinn.points.boundary=16
    --set pinn.adam.iterations=120 --set pinn.log_every=20 --set output.checkpoint_every=30
    --set output.keep=10 --set output.progress=none --set pinn.lbfgs.iterations=0"
run_ok straight 1 "$cases/pinn_heat2d.yaml" --out "$work/straight" $rs
run_ok first_half 1 "$cases/pinn_heat2d.yaml" --out "$work/halves" $rs --set pinn.adam.iterations=60
run_ok second_half 1 "$cases/pinn_heat2d.yaml" --out "$work/halves" $rs --restart latest
if h5diff -r "$work/straight/checkpoint_00000090.h5" "$work/halves/checkpoint_00000090.h5" \
     /pinn/theta /pinn/theta >/dev/null 2>&1 &&
   h5diff "$work/straight/checkpoint_00000090.h5" "$work/halves/checkpoint_00000090.h5" \
     /pinn/adam_v /pinn/adam_v >/dev/null 2>&1 &&
   h5diff "$work/straight/final.h5" "$work/halves/final.h5" /fields/u /fields/u >/dev/null 2>&1 &&
   cmp -s <(cut -d, -f1-6 "$work/straight/history.csv") <(cut -d, -f1-6 "$work/halves/history.csv"); then
  pass "restart: weights, moments, final field and loss history bitwise equal to the straight run"
else
  failure "restart: the restarted run differs from the straight one"
fi

# --- L-BFGS restarts: from Adam's end, and from inside L-BFGS (its pairs in the checkpoint) ---
run_ok lbfgs_straight 1 "$cases/pinn_heat2d.yaml" --out "$work/lb" $rs --set pinn.adam.iterations=60 \
  --set pinn.lbfgs.iterations=40 --set output.checkpoint_every=25
ok=1
for ck in 60 75; do
  mkdir -p "$work/lb$ck"
  run_ok "lbfgs_restart_$ck" 1 "$cases/pinn_heat2d.yaml" --out "$work/lb$ck" $rs \
    --set pinn.adam.iterations=60 --set pinn.lbfgs.iterations=40 --set output.checkpoint_every=25 \
    --restart "$work/lb/checkpoint_000000$ck.h5" || { ok=0; continue; }
  h5diff "$work/lb/final.h5" "$work/lb$ck/final.h5" /fields/u /fields/u >/dev/null 2>&1 &&
    h5diff "$work/lb/checkpoint_00000100.h5" "$work/lb$ck/checkpoint_00000100.h5" /pinn/theta \
      /pinn/theta >/dev/null 2>&1 &&
    cmp -s <(cut -d, -f1-7 "$work/lb/history.csv") <(cut -d, -f1-7 "$work/lb$ck/history.csv") ||
    ok=0
done
if [ $ok = 1 ] && h5dump -a lbfgs "$work/lb/checkpoint_00000075.h5" 2>/dev/null | grep -q "60, 20" &&
   ! h5dump -a lbfgs "$work/lb/checkpoint_00000060.h5" >/dev/null 2>&1; then
  pass "lbfgs: restarts at Adam's end (60) and inside L-BFGS (75, its pairs in the checkpoint) end bit for bit as the straight run"
else
  failure "lbfgs: a restart at Adam's end or inside L-BFGS differs from the straight run"
fi
# --set pinn.lbfgs.iterations on a restart: 75 of 60 + 40 continued as 60 + 20 (its end, 80, a
# checkpoint with L-BFGS's state), that continued as 60 + 40: bit for bit the straight 60 + 40;
# fewer than the checkpoint's iteration needs are refused, naming the keys
lbx="$rs --set pinn.adam.iterations=60 --set output.checkpoint_every=25"
mkdir -p "$work/lbx"
if run_ok lbfgs_fewer 1 "$cases/pinn_heat2d.yaml" --out "$work/lbx" $lbx      --set pinn.lbfgs.iterations=20 --restart "$work/lb/checkpoint_00000075.h5" &&
   run_ok lbfgs_more 1 "$cases/pinn_heat2d.yaml" --out "$work/lbx" $lbx      --set pinn.lbfgs.iterations=40 --restart latest &&
   h5dump -a lbfgs "$work/lbx/checkpoint_00000080.h5" 2>/dev/null | grep -q "60, 20" &&
   h5diff "$work/lb/final.h5" "$work/lbx/final.h5" /fields/u /fields/u >/dev/null 2>&1 &&
   h5diff "$work/lb/checkpoint_00000100.h5" "$work/lbx/checkpoint_00000100.h5" /pinn/theta \
     /pinn/theta >/dev/null 2>&1; then
  pass "lbfgs: a restart takes --set pinn.lbfgs.iterations (75 -> 80 as 60 + 20, then -> 100 as 60 + 40: bit for bit the straight 60 + 40)"
else
  failure "lbfgs: restarts with other pinn.lbfgs.iterations differ from the straight run"
fi
if log=$("$TESSERA_BIN" run "$cases/pinn_heat2d.yaml" --out "$work/lbx" $lbx \
           --set pinn.lbfgs.iterations=10 --restart latest 2>&1); then
  failure "lbfgs: a restart past its iterations was accepted"
elif echo "$log" | grep -q "past this run's 70 iterations (pinn.adam.iterations + pinn.lbfgs.iterations)"; then
  pass "lbfgs: a restart past pinn.adam.iterations + pinn.lbfgs.iterations is refused naming them"
else
  echo "$log" | tail -3; failure "lbfgs: the refusal of a restart past its iterations lacks why"
fi

# a checkpoint of another case names the keys that differ (it gave the two hashes), time.end
# with what it means to a PINN
log=$("$TESSERA_BIN" run "$cases/pinn_heat2d.yaml" --out "$work/lbx" $lbx --set time.end=0.2 \
        --restart latest 2>&1) && failure "another time.end: accepted" ||
  { grep -qF "is a checkpoint of another case; these keys differ (time.end is the time domain the network was trained on):" <<<"$log" &&
    grep -qF "  time.end: checkpoint 0.1, this case 0.2" <<<"$log" &&
    pass "another case's checkpoint: refused, naming time.end and its values" ||
    { echo "$log" | tail -3; failure "another case's checkpoint: the keys are not named"; }; }

# --- SIGTERM: a checkpoint, exit 4, and the continuation ends as the run that was not stopped --
# (the stopped run asks for far more iterations than it gets; its continuation and the straight
# run stop 500 after the stop: pinn.adam.iterations says where training ends, not where it goes)
sg="--set grid.cells=[8,8] --set pinn.network.width=8 --set pinn.network.depth=2
    --set pinn.points.boundary=16 --set pinn.log_every=50 --set output.progress=none"
"$TESSERA_BIN" run "$cases/pinn_poisson2d.yaml" --out "$work/sig_b" $sg \
  --set pinn.adam.iterations=100000000 >"$work/sig.log" 2>&1 &
pid=$!
sleep 2
kill -TERM $pid
wait $pid
rc=$?
at=$(sed -n 's/^checkpoint_0*\([0-9]*\)\.h5$/\1/p' "$work/sig_b/latest" 2>/dev/null)
if [ $rc -eq 4 ] && grep -q "stopped by SIGTERM after iteration" "$work/sig.log" &&
   [ -n "$at" ] && [ ! -e "$work/sig_b/final.h5" ]; then
  end=$((at + 500))
  run_ok sig_straight 1 "$cases/pinn_poisson2d.yaml" --out "$work/sig_a" $sg \
    --set pinn.adam.iterations=$end
  run_ok sig_continue 1 "$cases/pinn_poisson2d.yaml" --out "$work/sig_b" $sg \
    --set pinn.adam.iterations=$end --restart latest
  if h5diff "$work/sig_a/final.h5" "$work/sig_b/final.h5" /fields/u /fields/u >/dev/null 2>&1; then
    pass "SIGTERM: exit 4 with the checkpoint of iteration $at; continued to $end, the straight run's final field"
  else
    failure "SIGTERM: the continued run differs from the straight one"
  fi
else
  cat "$work/sig.log"; failure "SIGTERM: exit $rc (4 expected: did it end before the signal?)"
fi

# --- a loss that becomes NaN ----------------------------------------------------------------
log=$("$MPIEXEC" -n 1 "$TESSERA_BIN" run "$cases/pinn_heat2d.yaml" --out "$work/nan" $rs \
      --inject-fault kind=nan,step=70 2>&1)
rc=$?
if [ $rc -ne 0 ] && echo "$log" | grep -q "loss became NaN at iteration 70 in term pde" &&
   echo "$log" | grep -q "checkpoint_00000060.h5, is good" &&
   h5dump -a iteration "$work/nan/checkpoint_00000060.h5" >/dev/null 2>&1 &&
   [ -s "$work/nan/history.csv" ] && [ ! -e "$work/nan/final.h5" ]; then
  pass "nan: stops with the iteration and the term, names the good checkpoint, writes no final.h5"
else
  echo "$log" | tail -5; failure "nan: rc $rc"
fi
log=$("$MPIEXEC" -n 1 "$TESSERA_BIN" run "$cases/pinn_poisson2d.yaml" --out "$work/nan2" $small \
      --set 'source.u=sqrt(x - 0.5)' --set pinn.adam.iterations=10 2>&1)
# refused when the points are made, by key and point (it was the loss that became NaN at
# iteration 0, which said to lower pinn.adam.lr)
if [ $? -eq 2 ] && echo "$log" | grep -qF 'source.u: "sqrt(x - 0.5)" is nan at x = '; then
  pass "nan: a source that is NaN at some points is refused, named with a point"
else
  echo "$log" | tail -5; failure "nan: a NaN source"
fi

# --- bad input ------------------------------------------------------------------------------
refused() { # LABEL PATTERN CASE ARGS...: check refuses with PATTERN in the message
  local label=$1 pat=$2 case=$3
  shift 3
  local log
  if log=$("$TESSERA_BIN" check "$case" "$@" 2>&1); then
    failure "$label: accepted"
  elif echo "$log" | grep -q -- "$pat"; then
    pass "$label: $(echo "$log" | grep -- "$pat" | head -1 | cut -c1-150)"
  else
    echo "$log"; failure "$label: message lacks '$pat'"
  fi
}
# one case file runs with either method: each checks the other's keys and leaves them unused
"$TESSERA_BIN" check "$cases/heat2d.yaml" --set pinn.network.width=10 >/dev/null 2>&1 &&
  "$TESSERA_BIN" check "$cases/pinn_heat2d.yaml" --set method=explicit >/dev/null 2>&1 &&
  "$TESSERA_BIN" check "$cases/pinn_heat2d.yaml" --set time.scheme=rk4 --set time.dt=auto \
    --set time.cfl=0.5 >/dev/null 2>&1 &&
  pass "one case file, both methods: pinn: under explicit, time.scheme/dt/cfl under pinn" ||
  failure "a case with the other method's keys was refused"
refused "bad pinn key in an explicit case" "pinn.network.width" "$cases/heat2d.yaml" \
  --set pinn.network.width=0
refused "bad explicit key in a pinn case" "time.scheme: unknown value" \
  "$cases/pinn_heat2d.yaml" --set time.scheme=rk5
refused "steps in a pinn case" "time.steps: the explicit method's step count" \
  "$cases/pinn_heat2d.yaml" --set time.steps=10
refused "explicit-only model" "model: wave has no PINN form" "$cases/pinn_heat2d.yaml" \
  --set model=wave --set initial.v=0
refused "pinn-only model, explicit" "model: poisson is solved by method: pinn only" \
  "$cases/heat2d.yaml" --set model=poisson --set initial.u=0
refused "1-D explicit grid" "a 1-D grid is for method: pinn" "$cases/heat2d.yaml" \
  --set grid.cells=[64]
refused "time on a steady model" "model poisson is steady" "$cases/pinn_poisson2d.yaml" \
  --set time.end=1
refused "bad activation" "pinn.network.activation" "$cases/pinn_poisson2d.yaml" \
  --set pinn.network.activation=relu
refused "resample with cells" "pinn.points.resample_every: the cell centres" \
  "$cases/pinn_poisson2d.yaml" --set pinn.points.resample_every=10
refused "checkpoints by time" "method pinn checkpoints every N iterations" \
  "$cases/pinn_poisson2d.yaml" --set output.checkpoint_every.time=0.5
refused "snapshots by steps" "method pinn samples the network at times" \
  "$cases/pinn_heat2d.yaml" --set output.snapshot_every=10
refused "unknown pinn key" "unknown key 'pinn.adam.iters'" "$cases/pinn_poisson2d.yaml" \
  --set pinn.adam.iters=10
finish

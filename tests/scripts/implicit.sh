#!/usr/bin/env bash
# method: implicit (PETSc) on CPU ranks: observed orders in time against the exact solution of
# the semi-discrete heat equation (one Fourier mode: the spatial error is nil); the same final
# fields on 1 to 4 ranks and every partitioner to the solver's tolerance; a stiff case where
# the explicit method needs 1000 times the steps, within the discretisation error of the
# explicit result; -ksp_type/-pc_type from the case and the command line reaching the solver;
# misspelled PETSc options refused; a diverged solve reported with nothing written; refusals;
# the default preconditioners; checkpoints written in the background, restarts across rank
# counts, a signal, --walltime, and tessera supervise recovering a run that lost a rank.
# Skipped (77) in a build without PETSc.
set -u
. "$(dirname "$0")/lib.bash"
"$TESSERA_BIN" info 2>/dev/null | grep -q '^PETSc: *[0-9]' || { echo "built without PETSc: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# one thread: small grids, and CI runs two tests at a time on its 2 cores (spinning OpenMP
# threads of oversubscribed ranks cost 60 times)
export OMP_NUM_THREADS=1
py=/usr/bin/python3
[ -x "$py" ] || py=python3
field() { $py -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval('r'+sys.argv[2]))" "$@"; }
quiet="--set output.progress=none"

# --- order in time: heat, one mode of the discrete Laplacian (cell-centred Dirichlet makes
# sin(pi x) sin(pi y) an exact eigenvector with eigenvalue -8 sin^2(pi h/2)/h^2), so the error
# against exp(lambda t) is the scheme's alone; solver tolerance 1e-13 ----------------------
cat >"$work/order.yaml" <<'YAML'
model: heat
method: implicit
grid: {cells: [16, 16]}
params: {kappa: 1.0, hh: 0.0625}
initial: {u: "sin(pi*x)*sin(pi*y)"}
boundary: {default: {type: dirichlet, value: 0}}
time: {scheme: beuler, dt: 0.01, end: 0.1}
exact: {u: "exp(-8*kappa*t*pow(sin(pi*hh/2)/hh, 2))*sin(pi*x)*sin(pi*y)"}
output: {progress: none}
YAML
# (the orders and the stiff case are numerics, not memory: not under the sanitizers,
# tests/sanitize.sh, where the stiff case's 10,240 explicit steps alone take a minute)
if [ -z "${TSR_SANITIZED:-}" ]; then
order() { # SCHEME MIN: errors at dt and dt/2 (each run is mostly start-up); order >= MIN
  local s=$1 min=$2 e=()
  for dt in 0.01 0.005; do
    run_ok "order $s dt $dt" 1 "$work/order.yaml" --out "$work/ord" --set time.scheme=$s \
      --set time.dt=$dt -ksp_rtol 1e-13 -ksp_atol 1e-16 || return
    e+=("$(field "$work/ord/report.json" "['fields']['u']['error_l2']")")
  done
  local p
  p=$($py -c "import math,sys; e=[float(v) for v in sys.argv[1:]]; print('%.3f' % math.log2(e[0]/e[1]))" "${e[@]}")
  if $py -c "import sys; sys.exit(0 if min(map(float, sys.argv[1].split())) >= float(sys.argv[2]) else 1)" "$p" "$min"; then
    pass "order $s: observed $p >= $min (errors ${e[*]})"
  else
    failure "order $s: observed $p < $min (errors ${e[*]})"
  fi
}
order beuler 0.95
order cn 1.9
order bdf2 1.9
order ark_imex 2.8 # PETSc's default ARKIMEX, 3 (third order)
fi

# --- the same fields on 1-4 ranks and every partitioner: Allen-Cahn (nonlinear, Newton) in
# 2D and Gray-Scott in 3D with mixed boundaries; SNES and KSP to 1e-12 relative, so the
# fields agree to 1e-9 of their size whatever the preconditioner's aggregates --------------
cat >"$work/ac.yaml" <<'YAML'
model: allen_cahn
method: implicit
grid: {cells: [24, 20], periodic: [true, false]}
params: {eps: 0.05, gamma: 1.0}
initial: {u: "0.6*sin(2*pi*x)*cos(3*y) + 0.2*cos(5*x*y)"}
boundary: {ylo: {type: neumann, value: "0.1*x"}, yhi: {type: dirichlet, value: "0.3"}}
time: {scheme: bdf2, dt: 0.01, steps: 8}
output: {progress: none}
petsc: {snes_rtol: 1e-12, snes_atol: 1e-14, ksp_rtol: 1e-13, ksp_atol: 1e-16}
YAML
cat >"$work/gs.yaml" <<'YAML'
model: gray_scott
method: implicit
grid: {cells: [10, 9, 8], periodic: [false, true, false]}
params: {Du: 0.01, Dv: 0.005, F: 0.04, k: 0.06}
initial: {u: "1 - 0.5*exp(-20*((x-0.5)*(x-0.5) + (y-0.5)*(y-0.5)))", v: "0.25*exp(-20*((x-0.5)*(x-0.5)+(z-0.4)*(z-0.4)))"}
boundary: {default: {type: neumann, value: 0}, zhi: {type: dirichlet, value: {u: 1, v: 0}}}
time: {scheme: beuler, dt: 0.5, steps: 4}
output: {progress: none}
petsc: {snes_rtol: 1e-12, snes_atol: 1e-14, ksp_rtol: 1e-13, ksp_atol: 1e-16}
YAML
same() { # LABEL A B: final.h5 of runs A and B agree to 1e-9 of the field's size
  local r
  if r=$($py - "$1" "$2" <<'PY'
import sys, h5py, numpy as np
a, b = (h5py.File(p + "/final.h5", "r") for p in sys.argv[1:3])
worst = 0.0
for k in a["fields"]:
    x, y = a["fields"][k][...], b["fields"][k][...]
    worst = max(worst, float(np.abs(x - y).max() / max(np.abs(x).max(), 1e-300)))
print("%.2e" % worst)
sys.exit(0 if worst <= 1e-9 else 1)
PY
  ); then pass "$3: equal to 1e-9 ($r)"; else failure "$3: differ by $r"; fi
}
for m in ac gs; do
  run_ok "$m np1" 1 "$work/$m.yaml" --out "$work/${m}_1" || continue
  for run in 2:rcb 3:slabs 4:rcb; do # (each run is mostly start-up: a few, not every pair)
    np=${run%:*} part=${run#*:}
    run_ok "$m np$np $part" $np "$work/$m.yaml" --out "$work/${m}_$np$part" \
      --set decomposition.partition=$part && same "$work/${m}_1" "$work/${m}_$np$part" "$m: $np ranks, $part against 1 rank"
  done
  run_ok "$m grid" 4 "$work/$m.yaml" --out "$work/${m}_grid" --set "decomposition.ranks=[2,2$([ $m = gs ] && echo ,1)]" &&
    same "$work/${m}_1" "$work/${m}_grid" "$m: 4 ranks, grid 2x2 against 1 rank"
done

# --- stiff: heat driven to its steady state (source 2 pi^2 sin sin, from 0); the explicit
# method's stability limit makes it take 1000 times the steps of BDF2 at dt 0.1 -----------
cat >"$work/stiff.yaml" <<'YAML'
model: heat
grid: {cells: [48, 48]}
params: {kappa: 1.0}
initial: {u: "0"}
source: {u: "2*pi*pi*sin(pi*x)*sin(pi*y)"}
boundary: {default: {type: dirichlet, value: 0}}
time: {end: 1.0}
exact: {u: "(1 - exp(-2*pi*pi*t))*sin(pi*x)*sin(pi*y)"}
output: {progress: none}
YAML
if [ -z "${TSR_SANITIZED:-}" ]; then
if run_ok "stiff explicit" 1 "$work/stiff.yaml" --out "$work/stiff_e" &&
   run_ok "stiff implicit" 1 "$work/stiff.yaml" --out "$work/stiff_i" --set method=implicit \
     --set time.scheme=bdf2 --set time.dt=0.1; then
  if r=$($py - "$work/stiff_e" "$work/stiff_i" <<'PY'
import sys, json, h5py, numpy as np
e, i = sys.argv[1:3]
re, ri = (json.load(open(p + "/report.json")) for p in (e, i))
ue, ui = (h5py.File(p + "/final.h5", "r")["fields"]["u"][...] for p in (e, i))
ratio = re["steps"] / ri["steps"]
diff = float(np.abs(ue - ui).max())
disc = re["fields"]["u"]["error_linf"]  # the explicit result's own (spatial) error
print("explicit %d steps, implicit %d (ratio %.0f); |implicit - explicit| %.2e, explicit's error %.2e"
      % (re["steps"], ri["steps"], ratio, diff, disc))
sys.exit(0 if ratio >= 1000 and diff <= disc else 1)
PY
  ); then pass "stiff: $r"; else failure "stiff: $r"; fi
fi
fi

ck_start=$(date +%s.%N)
# --- checkpoints and restart: N steps straight = N/2, a restart on another rank count and
# partitioner, N/2; KSP to 1e-13 relative, so they agree to 1e-9 of the field's size (what
# "same" asserts). BDF2's history (the states of the two steps before) is in the checkpoint
# and put back into TSBDF: without it PETSc starts BDF again (a half step of backward Euler),
# which this test shows differs by far more than the solver's tolerance -------------------
cat >"$work/ck.yaml" <<'YAML'
model: heat
method: implicit
grid: {cells: [16, 12, 10]}
params: {kappa: 1.0}
initial: {u: "sin(pi*x)*sin(pi*y)*sin(pi*z) + 0.3*x*y"}
boundary: {default: {type: dirichlet, value: 0}, xhi: {type: neumann, value: "y"}}
time: {scheme: bdf2, dt: 0.005, steps: 8}
output: {progress: none, checkpoint_every: 4}
petsc: {ksp_rtol: 1e-13, ksp_atol: 1e-16}
YAML
for run in beuler:1:3:slabs bdf2:2:4:rcb; do
  IFS=: read -r s a b part <<<"$run"
  run_ok "ck $s np$a" $a "$work/ck.yaml" --out "$work/ck_$s" --set time.scheme=$s &&
    run_ok "ck $s restart np$b" $b "$work/ck.yaml" --out "$work/ckr_$s" --set time.scheme=$s \
      --set decomposition.partition=$part --restart "$work/ck_$s/checkpoint_00000004.h5" &&
    same "$work/ck_$s" "$work/ckr_$s" "restart $s: 8 steps on $a ranks = 4 + restart on $b ranks ($part) + 4"
done
# the checkpoint was written in the background by the explicit method's writer, from a copy of
# the state and BDF's history made at step 4 (the restart above equal to 1e-9 says it was
# step 4's, not a later step's)
[ -f "$work/ck_bdf2/report.json" ] &&
  [ "$(field "$work/ck_bdf2/report.json" "['checkpoints']['count'], r['checkpoints']['async']")" = "(1, True)" ] &&
  pass "bdf2 checkpoint written by the writer thread (report.json checkpoints: 1, async)" ||
  failure "bdf2 checkpoint: not one background write ($(field "$work/ck_bdf2/report.json" "['checkpoints']" 2>&1 | tail -1))"
[ -f "$work/ck_bdf2/checkpoint_00000004.h5" ] &&
  $py - "$work/ck_bdf2/checkpoint_00000004.h5" "$work/nohist.h5" <<'PY'
import shutil, sys, h5py
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r+") as f:
    assert f.attrs["implicit_history"] == 2 and "u_prev1" in f["fields"]
    f.attrs["implicit_history"] = 0.0
PY
if log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/ck.yaml" --out "$work/ckn" --restart "$work/nohist.h5" 2>&1) &&
   grep -q "holds no BDF history" <<<"$log" &&
   r=$($py - "$work/ck_bdf2" "$work/ckn" <<'PY'
import sys, h5py, numpy as np
a, b = (h5py.File(p + "/final.h5", "r")["fields"]["u"][...] for p in sys.argv[1:3])
d = float(np.abs(a - b).max() / np.abs(a).max())
print("%.2e" % d)
sys.exit(0 if d > 1e-6 else 1)
PY
); then pass "restart bdf2 without its history: said, and differs by $r (> 1e-6: the history is what makes it equal)"
else failure "restart bdf2 without history: ${r:-run failed}"; echo "$log" | tail -3; fi
# adaptive: TS's next step and BDF's history and times go on
# (snapshots by simulated time: after the adaptive step that crosses each multiple of 0.005)
sed 's/^time: .*/time: {scheme: bdf2, dt: 0.002, end: 0.04, adaptive: true, rtol: 1e-3}/; s/checkpoint_every: 4}/checkpoint_every: 6, keep: 100, snapshot_every: {time: 0.005}}/' \
  "$work/ck.yaml" >"$work/cka.yaml"
run_ok "ck adaptive np2" 2 "$work/cka.yaml" --out "$work/cka" &&
  run_ok "ck adaptive restart np3" 3 "$work/cka.yaml" --out "$work/ckar" \
    --restart "$work/cka/checkpoint_00000006.h5" &&
  [ "$(field "$work/cka/report.json" "['steps']")" = "$(field "$work/ckar/report.json" "['steps']")" ] &&
  same "$work/cka" "$work/ckar" "restart adaptive bdf2: the same $(field "$work/cka/report.json" "['steps']") steps, 2 ranks = 6 + restart on 3 ranks"
if r=$($py - "$work/cka" "$work/ckar" <<'PY'
import glob, math, sys, h5py
def snaps(d):
    out = {}
    for f in sorted(glob.glob(d + "/snapshot_*.h5")):
        with h5py.File(f, "r") as h:
            out[int(h.attrs["step"])] = float(h.attrs["time"])
    return out
a, b = snaps(sys.argv[1]), snaps(sys.argv[2])
T, steps = 0.005, sorted(a)
times = [a[s] for s in steps]
# one snapshot at 0, then one per multiple of T, each the first step at or past it
assert times[0] == 0.0 and len(times) == 9, times
for k, t in enumerate(times[1:], 1):
    assert math.floor(t / T + 1e-9) == k, (k, t)
# the step before each did not reach its multiple: the uninterrupted run's steps are all
# written between, so the restart (same steps) writes the same ones after step 6
after = {s: t for s, t in a.items() if s > 6}
assert sorted(after) == sorted(s for s in b if s > 6), (sorted(after), sorted(b))
assert all(abs(after[s] - b[s]) <= 1e-9 * after[s] for s in after)
print("steps %s at times %s" % (steps, ", ".join("%.4g" % t for t in times)))
PY
); then pass "adaptive snapshots by time: $r; the restart writes the same after step 6"
else failure "adaptive snapshots by time: $r"; fi
# adaptive progress goes by t against time.end: the steps are TS's to choose, so the monitor
# lines name no step count (they said "step 40/160" of a run that took 62) and the bar shows
# the fraction of time.end
log=$("$TESSERA_BIN" run "$work/cka.yaml" --out "$work/ckp" --set output.progress=bar \
      --set output.monitor_every=5 --set output.checkpoint_every=none 2>&1 | tr '\r' '\n' |
      sed 's/\x1b\[K//g')
if grep -qE '^step 5 t=[^ ]+ dt=' <<<"$log" && ! grep -qE '^step [0-9]+/' <<<"$log" &&
   grep -qE '^\[#{30}\] 100% step [0-9]+ t=4\.0000e-02 of 0\.04 ETA 00:00' <<<"$log"; then
  pass "adaptive progress: monitor lines without a step count, the bar by t of time.end"
else echo "$log" | grep -E '^step|%' | head -5; failure "adaptive progress"; fi
# final.h5 is a checkpoint too: 4 steps, then continued to 8 on 3 ranks = 8 straight
run_ok "ck to 4" 1 "$work/ck.yaml" --out "$work/ckf" --set time.steps=4 &&
  run_ok "ck continued to 8" 3 "$work/ck.yaml" --out "$work/ckf" --restart latest &&
  same "$work/ck_bdf2" "$work/ckf" "final.h5 of 4 steps continued to 8 on 3 ranks = 8 straight"
# a signal: rank 1 signals itself after step 3; the run stops after the next step (the poll
# posted a step earlier) with a checkpoint and exit 4; the continuation on 3 ranks = straight
d=$work/cks
"$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/ck.yaml" --out "$d" --set output.checkpoint_every=100 \
  --inject-fault rank=1,step=3,kind=signal >"$d.log" 2>&1; rc=$?
if [ $rc = 4 ] && grep -q "tessera: stopped by SIGTERM after step" "$d.log" &&
   [ -f "$d/$(cat "$d/latest")" ] && [ ! -e "$d/final.h5" ]; then
  pass "SIGTERM: exit 4, checkpoint $(cat "$d/latest"), no final.h5"
  run_ok "signal restart" 3 "$work/ck.yaml" --out "$d" --restart latest &&
    same "$work/ck_bdf2" "$d" "SIGTERM: continued on 3 ranks = uninterrupted"
else tail -3 "$d.log"; failure "SIGTERM: rc $rc"; fi
# tessera supervise: rank 0 of 2 damages the newest checkpoint (step 6) and exits, as a node
# that dies mid-write; supervise relaunches with --restart latest, which skips the damaged file
# for checkpoint 4 (and its BDF history): the result = uninterrupted. (Not under the
# sanitizers: the recovery is the explicit method's, tested there by faults.sh.)
if [ -z "${TSR_SANITIZED:-}" ]; then
d=$work/cksv
"$TESSERA_BIN" supervise -- "$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/ck.yaml" --out "$d" \
  --set output.checkpoint_every=2 --inject-fault rank=0,step=6,kind=corrupt >"$d.log" 2>&1; rc=$?
if [ $rc = 0 ] && grep -q "attempt 1 failed with exit code 1 (rank 0 exited" "$d.log" &&
   grep -q "using the older '$d/checkpoint_00000004.h5' (step 4)" "$d.log" &&
   grep -q "attempt 2/4 succeeded" "$d.log"; then
  same "$work/ck_bdf2" "$d" "supervise: a rank lost after damaging checkpoint 6, relaunched from 4 = uninterrupted"
else tail -5 "$d.log"; failure "supervise: rc $rc"; fi
fi
# --walltime: a long run stops before its limit with a checkpoint, exit 4
d=$work/ckw
"$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/ck.yaml" --out "$d" --set time.steps=1000000 \
  --set output.checkpoint_every=100000 --walltime 3 >"$d.log" 2>&1; rc=$?
[ $rc = 4 ] && grep -q "stopped by the wall-time limit" "$d.log" && [ -f "$d/$(cat "$d/latest")" ] &&
  pass "--walltime 3: $(grep -o 'stopped by .*after step [0-9]*' "$d.log")" ||
  { tail -3 "$d.log"; failure "--walltime: rc $rc"; }
# a checkpoint continues only with the method that wrote it, --restart-force or not
refused() { # LABEL WANT ARGS...: exit 2 with WANT
  local label=$1 want=$2 log rc
  shift 2
  log=$("$MPIEXEC" -n 1 "$TESSERA_BIN" run "$@" 2>&1); rc=$?
  [ $rc = 2 ] && grep -qF -- "$want" <<<"$log" && pass "$label: refused" ||
    { echo "$log" | tail -3; failure "$label: rc $rc"; }
}
sed '/^method:/d; /^petsc:/d; s/^time: .*/time: {scheme: rk2, dt: 1e-4, steps: 8}/' "$work/ck.yaml" >"$work/ckx.yaml"
refused "implicit checkpoint, method explicit" "was written by method implicit (scheme bdf2) and this case's method is explicit" \
  "$work/ckx.yaml" --out "$work/ckx" --restart "$work/ck_bdf2/checkpoint_00000004.h5" --restart-force
run_ok "explicit run" 1 "$work/stiff.yaml" --out "$work/cke" --set time.end=0.001 --set output.checkpoint_every=2 &&
  refused "explicit checkpoint, method implicit" "was written by method explicit and this case's method is implicit" \
    "$work/stiff.yaml" --out "$work/cke" --set method=implicit --set time.dt=0.1 --restart latest --restart-force

echo "checkpoint, restart and stop checks: $($py -c "import sys,time; print('%.1f s' % (time.time() - float(sys.argv[1])))" "$ck_start")"

# --- the default preconditioner: GAMG for heat (CG), BoomerAMG for the others (GMRES) where
# PETSc has hypre (tessera info says), GAMG without it; report.json names it ---------------
hypre=$("$TESSERA_BIN" info 2>/dev/null | grep -q '^PETSc:.*hypre yes' && echo yes || echo no)
want_other=$([ $hypre = yes ] && echo "gmres hypre boomeramg" || echo "gmres gamg -")
pcs() { field "$1/report.json" "['implicit']['ksp_type'] + ' ' + r['implicit']['pc_type'] + ' ' + r['implicit'].get('pc_hypre_type', '-')"; }
for run in ck_bdf2:"cg gamg -" ac_1:"$want_other" gs_1:"$want_other"; do
  d=${run%%:*} want=${run#*:}
  [ -f "$work/$d/report.json" ] || { failure "default pc: $d did not run"; continue; }
  got=$(pcs "$work/$d")
  [ "$got" = "$want" ] && pass "default solver of $d (hypre $hypre): $got" ||
    failure "default solver of $d (hypre $hypre): $got, not $want"
done

# --- PETSc options reach the solver: the case's, and the command line's over them -------------
run_ok "options from the case" 1 "$work/ac.yaml" --out "$work/opt1" --set petsc.ksp_type=bcgs \
  --set petsc.pc_type=jacobi &&
  [ "$(field "$work/opt1/report.json" "['implicit']['ksp_type'] + ' ' + r['implicit']['pc_type']")" = "bcgs jacobi" ] &&
  pass "petsc: ksp_type bcgs, pc_type jacobi reach the solver (report.json)" ||
  failure "petsc: options of the case did not reach the solver"
log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/ac.yaml" --out "$work/opt2" $quiet \
      --set petsc.ksp_type=bcgs -ksp_type gmres -pc_type bjacobi -ksp_view 2>&1)
if grep -q "type: gmres" <<<"$log" && grep -q "type: bjacobi" <<<"$log" &&
   [ "$(field "$work/opt2/report.json" "['implicit']['ksp_type']")" = gmres ]; then
  pass "command line -ksp_type gmres -pc_type bjacobi win over the case (-ksp_view, report.json)"
else
  failure "command-line options did not reach the solver"; echo "$log" | tail -5
fi

# --- failures: exit code, message, nothing written --------------------------------------------
# LABEL CODE WANT ARGS...: tessera exits CODE with WANT in its message, no output dir; on 2
# ranks, or np=1 before it: one rank without the launcher (which takes about 2 s to end a job
# that failed)
expect() {
  local label=$1 code=$2 want=$3
  local out="$work/fail_$label"
  shift 3
  local log rc
  if [ "${np:-2}" = 1 ]; then log=$("$TESSERA_BIN" run "$@" --out "$out" $quiet 2>&1)
  else log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$@" --out "$out" $quiet 2>&1); fi
  rc=$?
  if [ $rc -ne "$code" ]; then failure "$label: exit $rc, not $code"; echo "$log" | tail -3
  elif ! grep -qF -- "$want" <<<"$log"; then failure "$label: message lacks '$want'"; echo "$log" | tail -3
  elif [ -e "$out" ]; then failure "$label: left $out behind"
  elif [ "$(grep -c '^tessera: ' <<<"$log")" -ne 1 ]; then failure "$label: not one message"; echo "$log"
  else pass "$label (exit $rc): $(grep '^tessera' <<<"$log" | cut -c1-160)"; fi
}
expect misspelled_cmdline 2 "-ksp_tpye: no PETSc object of this run read the option" "$work/ac.yaml" -ksp_tpye gmres
printf 'petsc:\n  pc_gamg_treshold: 0.02\n' >"$work/typo.yaml"
cat "$work/order.yaml" "$work/typo.yaml" >"$work/typo_case.yaml"
expect misspelled_case 2 "typo_case.yaml:11:3: petsc.pc_gamg_treshold: no PETSc object" "$work/typo_case.yaml"
# Allen-Cahn with an absurd step: shift I - J is indefinite, the linear solves fail
expect diverged 2 "the implicit solve failed in step 1 (from t = 0 with dt = 1e+06): TS DIVERGED_NONLINEAR_SOLVE" \
  "$work/ac.yaml" --set time.dt=1e6 -snes_max_it 3
expect petsc_with_explicit 2 "PETSc options are for method: implicit" "$work/stiff.yaml" -ksp_type cg
expect petsc_before_case 2 "PETSc options (method implicit) go after the case file" -ksp_type cg "$work/ac.yaml"
expect backend_cuda 2 "method implicit solves on CPU ranks" "$work/ac.yaml" --backend cuda
# values PETSc refuses are the user's input, named with PETSc's reason (an "internal error",
# exit 1)
np=1 expect bad_type_case 2 \
  "--set petsc.ksp_type=bogus: petsc.ksp_type: PETSc refused the value 'bogus': Unknown type" \
  "$work/ac.yaml" --set petsc.ksp_type=bogus
np=1 expect bad_number_cmdline 2 \
  "command line: -ksp_rtol abc: PETSc refused the value: Argument out of range: Input string abc" \
  "$work/ac.yaml" -ksp_rtol abc
# the time plan is the case's: TS options that would end the run elsewhere than time.end (it
# said "done" at t = 0.01 with -ts_dt, or at 0.033 with -ts_adapt_type basic) are refused,
# from the command line and from the case (with its line, by tessera check too)
np=1 expect ts_dt_cmdline 2 "command line: -ts_dt: tessera sets this from the case: time.dt" \
  "$work/ac.yaml" -ts_dt 0.001
np=1 expect ts_adapt_fixed 2 "command line: -ts_adapt_type: tessera sets this from the case: time.adaptive: true" \
  "$work/ac.yaml" -ts_adapt_type basic
printf 'petsc:\n  ts_max_time: 1\n' >"$work/owned.yaml"
cat "$work/order.yaml" "$work/owned.yaml" >"$work/owned_case.yaml"
log=$("$TESSERA_BIN" check "$work/owned_case.yaml" 2>&1); rc=$?
[ $rc = 2 ] && grep -qF "owned_case.yaml:11:3: petsc.ts_max_time: tessera sets this from the case: time.end" <<<"$log" &&
  pass "check: petsc.ts_max_time in the case refused with its line" ||
  { echo "$log" | tail -3; failure "check: petsc.ts_max_time (rc $rc)"; }
# PETSc failing with the user's solver choice is input, with the options and where each came
# from (it was an "internal error", exit 1): an explicit TS type; PETSc's own ILU on 2 ranks
np=1 expect explicit_ts_type 2 "-ts_type euler (command line)" \
  "$work/ac.yaml" -ts_type euler
expect ilu_two_ranks 2 "Could not locate a solver type for factorization type ILU and matrix type mpiaij; on more than one rank PETSc factors with a parallel package only: use -pc_type bjacobi" \
  "$work/ac.yaml" -pc_type ilu
# initial values that are not finite are the case's (it said lower time.dt)
np=1 expect initial_not_finite 2 'initial.u: "log(x-0.5)" is nan at x = ' "$work/ac.yaml" \
  --set 'initial.u=log(x-0.5)'
# more unknowns than PETSc's indices number: tessera check refuses them as the run does
log=$("$TESSERA_BIN" check "$work/ac.yaml" --set 'grid.cells=[60000, 60000]' 2>&1); rc=$?
[ $rc = 2 ] && grep -q "unknowns (cells x 1 component), more than this PETSc's" <<<"$log" &&
  pass "check: more unknowns than PETSc's indices (exit 2)" ||
  { echo "$log" | tail -3; failure "check: PETSc's index limit (rc $rc)"; }

finish

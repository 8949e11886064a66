#!/usr/bin/env bash
# Checkpoints that HDF5 still opens but that tessera did not write that way (damaged on disk or
# altered; tests/support/h5_damage.c makes them through HDF5's API), and files that are not
# checkpoints at all: a restart from one is refused with exit 2 and a message naming the file
# (no crash, no hang, no raw HDF5 error stack), and `--restart latest` skips a damaged newest
# checkpoint for the one before where it can. Methods explicit (one file and parts), pinn,
# parareal and implicit (where PETSc is built in). Found by an audit (session 37): a string
# array read into one string's buffer (abort), attributes used unchecked (dt 0, a negative
# iteration: runs that end "done" with the wrong result, or never end), a FIFO (a hang).
set -u
. "$TESSERA_SOURCE/tests/scripts/lib.bash"
: "${TSR_H5_DAMAGE:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
D=$TSR_H5_DAMAGE

cat >"$work/heat.yaml" <<'EOF'
name: dheat
model: heat
grid: {cells: [32, 32], lo: [0, 0], hi: [1, 1]}
params: {kappa: 1.0}
initial: {u: "sin(pi*x)*sin(pi*y)"}
boundary: {default: {type: dirichlet, value: 0}}
time: {scheme: ssp_rk3, dt: auto, cfl: 0.9, steps: 40}
output: {progress: none, checkpoint_every: 10, keep: 5}
EOF
cat >"$work/pinn.yaml" <<'EOF'
name: dpinn
model: poisson
method: pinn
grid: {cells: [16, 16], lo: [0, 0], hi: [1, 1]}
source: {u: "2*pi*pi*sin(pi*x)*sin(pi*y)"}
boundary: {default: {type: dirichlet, value: 0}}
pinn:
  network: {width: 8, depth: 2, activation: tanh}
  points: {interior: cells, boundary: 32, seed: 1}
  adam: {iterations: 40, lr: 1.0e-3}
  log_every: 10
output: {progress: none, checkpoint_every: 10, keep: 5}
EOF
cat >"$work/para.yaml" <<'EOF'
name: dpara
model: heat
grid: {cells: [32, 32], lo: [0, 0], hi: [1, 1]}
params: {kappa: 1.0}
initial: {u: "sin(pi*x)*sin(pi*y)"}
boundary: {default: {type: dirichlet, value: 0}}
time: {scheme: ssp_rk3, dt: auto, steps: 48}
decomposition: {time_slices: 4}
parareal: {max_iterations: 4, tol: 1e-300, slices_per_rank: 4}
output: {progress: none, checkpoint_every: 1, keep: 5}
EOF
cat >"$work/impl.yaml" <<'EOF'
name: dimpl
model: allen_cahn
method: implicit
grid: {cells: [32, 32], periodic: true}
params: {eps: 0.01, gamma: 1.0}
initial: {u: "0.8*sin(6*pi*x)*sin(4*pi*y) + 0.1*cos(22*pi*x*y)"}
time: {scheme: bdf2, dt: 1e-3, steps: 8}
output: {progress: none, checkpoint_every: 2, keep: 5}
EOF

# the reference runs, whose checkpoints are damaged below
ref() { # NAME NP CASE ARGS...
  local name=$1 np=$2 case=$3
  shift 3
  run_ok "reference $name" "$np" "$work/$case.yaml" --out "$work/ref_$name" "$@"
}
ref heat 1 heat
ref parts 2 heat --set output.io=parts
ref pinn 1 pinn
ref para 1 para
petsc=0
"$TESSERA_BIN" info 2>/dev/null | grep -q '^PETSc: *[0-9]' && petsc=1
[ $petsc = 1 ] && ref impl 1 impl

n=0
# launch NP ARGS...: tessera on NP ranks; one rank without mpiexec (a singleton), since Open
# MPI's mpiexec takes about 2 s more to end after a rank exits non-zero
launch() {
  local np=$1
  shift
  if [ "$np" = 1 ]; then timeout -k 10 60 "$TESSERA_BIN" "$@"
  else timeout -k 10 60 "$MPIEXEC" -n "$np" "$TESSERA_BIN" "$@"
  fi
}
# refused LABEL NP CASE REF FILE WANT PREP...: copies reference REF to a directory of its own,
# runs PREP there (h5_damage's arguments after IN OUT, or a shell command after 'sh') on FILE,
# restarts from FILE, and expects exit 2 within 60 s, the file named, WANT in the message and
# none of HDF5's own error stack
refused() {
  local label=$1 np=$2 case=$3 ref=$4 file=$5 want=$6
  shift 6
  local dir=$work/t$((n += 1)) log rc
  cp -r "$work/ref_$ref" "$dir"
  if [ "$1" = sh ]; then (cd "$dir" && eval "$2")
  else "$D" "$work/ref_$ref/$file" "$dir/$file" "$@" || { failure "$label: h5_damage $*"; return; }
  fi
  log=$(launch "$np" run "$work/$case.yaml" --out "$dir" --restart "$dir/$file" 2>&1)
  rc=$?
  if [ $rc = 2 ] && echo "$log" | grep -qF "$dir/$file" && echo "$log" | grep -qF -- "$want" &&
     ! echo "$log" | grep -qE 'HDF5-DIAG|#[0-9]{3}: '; then
    pass "$label: exit 2, '$want'"
  else
    echo "$log" | tail -8
    failure "$label: rc $rc (2 expected, the file named, '$want', no HDF5 stack)"
  fi
}
# skipped LABEL NP CASE REF FILE WANT_FROM PREP...: as refused, with --restart latest, and
# expects the run to end well from the checkpoint WANT_FROM after saying why FILE was skipped
skipped() {
  local label=$1 np=$2 case=$3 ref=$4 file=$5 from=$6
  shift 6
  local dir=$work/t$((n += 1)) log rc
  cp -r "$work/ref_$ref" "$dir"
  rm -f "$dir/final.h5"
  "$D" "$work/ref_$ref/$file" "$dir/$file" "$@" || { failure "$label: h5_damage $*"; return; }
  log=$(launch "$np" run "$work/$case.yaml" --out "$dir" --restart latest 2>&1)
  rc=$?
  if [ $rc = 0 ] && echo "$log" | grep -qF "skipping '$dir/$file'" &&
     echo "$log" | grep -qF "using the older '$dir/$from'"; then
    pass "$label: skipped, restarted from $from"
  else
    echo "$log" | tail -8
    failure "$label: rc $rc (0 expected, $file skipped for $from)"
  fi
}

c=checkpoint_00000030.h5
# explicit: attributes of another shape or kind, or that disagree with each other
refused "case_hash as 5 strings" 1 heat heat $c "one fixed-length string" \
  set-attr case_hash strarr 0123456789abcdef0123456789abcdef0123456789abcdef01234 b c d e
refused "dt as a string" 1 heat heat $c "does not hold numbers" set-attr dt str 0.001
refused "dt 0" 1 heat heat $c "a dt > 0" set-attr dt f64 0
refused "dt nan" 1 heat heat $c "a dt > 0" set-attr dt f64 nan
refused "dt that is not the run's" 1 heat heat $c "is not its step x dt" set-attr dt f64 1e-4
refused "step 20 in the file of step 30" 1 heat heat $c "is not its step x dt" set-attr step i64 20
refused "u as integers" 1 heat heat $c "is not floating point" reshape-dset /fields/u int
skipped "latest: step -1" 1 heat heat $c checkpoint_00000020.h5 set-attr step i64 -1
skipped "latest: u not finite" 1 heat heat $c checkpoint_00000020.h5 reshape-dset /fields/u nan
# files that are not checkpoints
refused "a FIFO" 1 heat heat $c "not a regular file" sh "rm $c && mkfifo $c"
refused "a directory" 1 heat heat $c "not a regular file" sh "rm $c && mkdir $c"
refused "a missing file" 1 heat heat $c "No such file" sh "rm $c"
# a part of another type (HDF5 converted it)
refused "part of integers" 2 heat parts $c "extent and type" \
  sh "\"\$D\" ../ref_parts/${c%.h5}.part0001.h5 ${c%.h5}.part0001.h5 reshape-dset /fields/u int"
# pinn
refused "pinn: method as 5 strings" 1 pinn pinn $c "not a checkpoint of method pinn" \
  set-attr method strarr pinn b c d e
refused "pinn: 3-D history" 1 pinn pinn $c "a dataset is missing, of the wrong size" \
  reshape-dset /pinn/history shape 3 10 50
refused "pinn: theta as integers" 1 pinn pinn $c "a dataset is missing, of the wrong size" \
  reshape-dset /pinn/theta int
refused "pinn: iteration -5" 1 pinn pinn $c "no iteration >= 0" set-attr iteration i64a -5
refused "pinn: iteration as a string" 1 pinn pinn $c "no iteration >= 0" set-attr iteration str 30
refused "pinn: theta not finite" 1 pinn pinn $c "parameters or Adam moments hold a non-finite" \
  reshape-dset /pinn/theta nan
# parareal: the iteration it was written after; latest goes back to the iteration before
p=parareal_0003.h5
skipped "parareal: latest: iteration 99" 1 para para $p parareal_0002.h5 set-attr parareal i64 4 99
refused "parareal: iteration -1" 1 para para $p "this run's iterations are 1 to 4" \
  set-attr parareal i64 4 -1
refused "parareal: iteration 99" 1 para para $p "this run's iterations are 1 to 4" \
  set-attr parareal i64 4 99
# implicit: TS's next step and BDF's history
if [ $petsc = 1 ]; then
  i=checkpoint_00000006.h5
  refused "implicit: next dt 0" 1 impl impl $i "do not describe a step" \
    set-attr implicit_next_dt f64 0
  refused "implicit: BDF order 99" 1 impl impl $i "do not describe a step" \
    set-attr implicit_bdf_k f64 99
  refused "implicit: a history time after the state's" 1 impl impl $i "do not describe a step" \
    set-attr implicit_prev_time0 f64 1
  refused "implicit: time 0.5" 1 impl impl $i "is not its step x dt" set-attr time f64 0.5
  refused "implicit: history of integers" 1 impl impl $i "not a valid checkpoint of method implicit" \
    reshape-dset /fields/u_prev0 int
fi
finish

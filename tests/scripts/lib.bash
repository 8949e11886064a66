# Helpers for the end-to-end scripts (sourced). TESSERA_BIN, MPIEXEC and TESSERA_SOURCE come
# from CTest's environment.
: "${TESSERA_BIN:?}" "${TESSERA_SOURCE:?}"
MPIEXEC=${MPIEXEC:-mpiexec}
npass=0
nfail=0
pass() { npass=$((npass + 1)); echo "ok   $*"; }
failure() { nfail=$((nfail + 1)); echo "FAIL $*"; }
# run_ok LABEL NP CASE ARGS...: runs tessera, records a failure when it exits non-zero.
run_ok() {
  local label=$1 np=$2 case=$3
  shift 3
  local log
  if ! log=$("$MPIEXEC" -n "$np" "$TESSERA_BIN" run "$case" "$@" 2>&1); then
    echo "$log" | tail -20
    failure "$label: tessera run exited non-zero"
    return 1
  fi
  return 0
}
finish() {
  echo "$npass passed, $nfail failed"
  [ "$nfail" -eq 0 ] && [ "$npass" -gt 0 ]
}
# Checks in parallel (GPU scripts: each run is mostly start-up, so several share a GPU well).
# spawn NAME CMD ARGS...: runs CMD ARGS in a subshell with its own log and tally under $work,
# at most GPU_TEST_JOBS (default 4) at a time; gather waits for them all and prints each log
# and adds up its tally, in spawn order (a check that did not finish is a failure).
spawn_names=()
spawn() {
  local name=$1
  shift
  while [ "$(jobs -rp | wc -l)" -ge "${GPU_TEST_JOBS:-4}" ]; do wait -n; done
  spawn_names+=("$name")
  ( npass=0 nfail=0; "$@"; echo "$npass $nfail" >"$work/$name.tally" ) >"$work/$name.log" 2>&1 &
}
gather() {
  local name p f
  wait
  for name in "${spawn_names[@]}"; do
    cat "$work/$name.log"
    if [ -f "$work/$name.tally" ] && read -r p f <"$work/$name.tally"; then
      npass=$((npass + p)) nfail=$((nfail + f))
    else
      failure "$name: its check did not finish"
    fi
  done
  spawn_names=()
}
# heat_case FILE NX NY: the 2D heat case of the recovery scripts (a Neumann side, SSP-RK3,
# 12 steps, a checkpoint every 3 with the last 3 kept)
heat_case() {
  cat >"$1" <<YAML
model: heat
grid: {cells: [$2, $3], lo: [0, -1], hi: [2, 1]}
params: {kappa: 0.7}
initial: {u: "sin(pi*x)*cos(0.5*pi*y) + 0.3*x*y"}
boundary: {ylo: {type: neumann, value: "x"}}
time: {scheme: ssp_rk3, dt: auto, steps: 12}
output: {checkpoint_every: 3, keep: 3, progress: none}
YAML
}

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

#!/usr/bin/env bash
# ParaView opens what tessera writes: small 2D and 3D runs on 1 and 2 ranks, double and single
# precision (and float32 snapshots of a double run), checkpoints in one file and in parts, are
# read under xvfb-run by pvpython through each of ParaView's XDMF readers (final.xmf,
# snapshots.xmf and the checkpoints) and compared bit for bit with h5py; the series' times are
# the files'; a PNG is rendered from each run (paraview_check.py). Skipped (exit 77) only where
# pvpython is not installed (scripts/setup.sh installs it).
set -u
. "$(dirname "$0")/lib.bash"
if ! command -v pvpython >/dev/null; then
  echo "SKIP: pvpython not found (apt-get install paraview python3-paraview xvfb xauth" \
    "python3-h5py, or bash scripts/setup.sh)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# fields that differ under a swap of axes, on grids longer in x than in y (and z)
cat >"$work/wave2d.yaml" <<'YAML'
model: wave
grid: {cells: [24, 20], lo: [0, -1], hi: [1, 1]}
initial: {u: "sin(pi*x)*(y + 1) + 0.25*x*x", v: "x - 2*y*y + 0.5"}
time: {steps: 10}
output: {progress: none, snapshot_every: 4, checkpoint_every: 5}
YAML
cat >"$work/heat3d.yaml" <<'YAML'
model: heat
grid: {cells: [12, 10, 8], lo: [0, -1, 0.5], hi: [1, 1, 1.3]}
initial: {u: "sin(pi*x)*(y + 1) + 0.5*z*x + 0.1*y*z"}
boundary: {zlo: {type: neumann, value: "x"}}
time: {steps: 9}
output: {progress: none, snapshot_every: 3, checkpoint_every: 4}
YAML
runs=()
add_run() { # NAME NP CASE ARGS...: a run into $work/NAME, checked below
  local name=$1 np=$2 case=$3
  shift 3
  run_ok "$name" "$np" "$work/$case" --out "$work/$name" "$@" && runs+=("$work/$name")
}
add_run 2d_double_np1 1 wave2d.yaml
add_run 2d_single_np2_parts 2 wave2d.yaml --set precision=single --set output.io=parts
add_run 3d_double_np2_parts 2 heat3d.yaml --set output.io=parts \
  --set output.snapshot_precision=single
add_run 3d_single_np1 1 heat3d.yaml --set precision=single
for r in "${runs[@]}"; do # the parts runs must have made parts, or they test nothing new
  case $r in
  *parts) ls "$r" | grep -q '\.part0001\.h5$' && pass "$(basename "$r"): parts written" ||
    failure "$(basename "$r"): no checkpoint parts" ;;
  esac
done
if command -v xvfb-run >/dev/null; then
  # -noreset: an X server resets when its last client leaves, and ParaView, which connects more
  # than once, then fails now and then with "bad X server connection" (a third of the runs here)
  if xvfb-run -a -s "-noreset -screen 0 1024x768x24" pvpython --force-offscreen-rendering \
    "$TESSERA_SOURCE/tests/scripts/paraview_check.py" "${runs[@]}" >"$work/pv.log" 2>&1; then
    pass "ParaView reads ${#runs[@]} runs as h5py does, and renders them"
  else
    failure "ParaView's view of the runs (paraview_check.py)"
  fi
  # ParaView logs its own errors (a dataset it cannot read) without failing the script
  grep -v '^ ' "$work/pv.log" | grep -E 'FAIL|ERR|Error|Traceback' | head -20
  grep -E '^ |^/' "$work/pv.log"
  ! grep -qE 'ERR\||Error' "$work/pv.log" && pass "ParaView logged no error" ||
    failure "ParaView logged errors"
else
  failure "xvfb-run not found: install xvfb and xauth (bash scripts/setup.sh)"
fi
finish

#!/usr/bin/env bash
# GPU end-to-end (label gpu): CUDA graphs of whole steps (gpu.graphs) give the bits of plain
# launches. Every example case (cases/, on a small grid for a few steps) and every bitwise test
# case (tests/cases/bw_*: time-dependent boundary values and sources, every scheme) runs with
# gpu.graphs on and off, in double and single precision, and final.h5 must be bitwise
# identical; report.json must say the graphs ran (every step but the first replayed) or not.
# A stale stage time in a replayed graph shows here: the bw_ cases' boundaries and sources
# depend on t. With GPU_RANKS=2 (label gpu2) the same on 2 GPUs, where the NCCL exchange is
# inside the graph, and against 1 GPU.
set -u
. "$TESSERA_SOURCE/tests/scripts/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ranks=${GPU_RANKS:-1}
. "$TESSERA_SOURCE/tests/gpu/fields.bash"

# report_says DIR MODE STEPS: report.json has gpu_graphs MODE and gpu_graph_steps STEPS
report_says() {
  python3 - "$1/report.json" "$2" "$3" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ok = r.get("gpu_graphs") == sys.argv[2] and r.get("gpu_graph_steps") == int(sys.argv[3])
if not ok:
    print(f"  report: gpu_graphs={r.get('gpu_graphs')} gpu_graph_steps={r.get('gpu_graph_steps')}, "
          f"want {sys.argv[2]} and {sys.argv[3]}")
sys.exit(0 if ok else 1)
PY
}

steps_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["steps"])' "$1/report.json"; }

# compare NAME CASE ARGS...: graphs on and off on $ranks GPUs, double and single
compare() {
  local name=$1 case=$2
  shift 2
  for prec in double single; do
    local tag="$name $prec np$ranks" on="$work/$name-$prec-on" off="$work/$name-$prec-off"
    run_ok "$tag graphs on" "$ranks" "$case" --out "$on" --backend cuda --set precision=$prec \
      --set gpu.graphs=on "$@" || continue
    run_ok "$tag graphs off" "$ranks" "$case" --out "$off" --backend cuda --set precision=$prec \
      --set gpu.graphs=off "$@" || continue
    local n
    n=$(steps_of "$on")
    if report_says "$on" on $((n - 1)) && report_says "$off" off 0; then
      pass "$tag: report says graphs replayed $((n - 1)) of $n steps, and none when off"
    else
      failure "$tag: report.json on graphs"
    fi
    if same_fields "$on/final.h5" "$off/final.h5" 0; then
      pass "$tag: graphs on bitwise identical to graphs off ($n steps)"
    else
      failure "$tag: graphs on differ from graphs off"
    fi
    [ "$ranks" = 1 ] && continue
    run_ok "$tag np1 graphs on" 1 "$case" --out "$on-1" --backend cuda --set precision=$prec \
      --set gpu.graphs=on "$@" || continue
    if same_fields "$on-1/final.h5" "$on/final.h5" 0; then
      pass "$tag: graphs on $ranks GPUs bitwise identical to 1 GPU"
    else
      failure "$tag: graphs on $ranks GPUs differ from 1 GPU"
    fi
  done
}

# cases GPU_TEST_JOBS at a time (spawn and gather: tests/scripts/lib.bash)
for case in "$TESSERA_SOURCE"/tests/cases/bw_*.yaml; do
  spawn "$(basename "$case" .yaml)" compare "$(basename "$case" .yaml)" "$case"
done
# the explicit method's examples on small grids: a fixed small dt (stable for every one of them
# there) and nine or ten steps (the implicit and PINN examples have no step graphs)
for case in "$TESSERA_SOURCE"/cases/*.yaml; do
  grep -q '^method: *\(implicit\|pinn\)' "$case" && continue
  name=$(basename "$case" .yaml)
  if grep -q 'cells: \[[0-9]*, [0-9]*, [0-9]*\]' "$case"; then cells="[12, 10, 9]"; else cells="[24, 20]"; fi
  spawn "$name" compare "$name" "$case" --set "grid.cells=$cells" --set time.dt=1e-4 --set time.end=9e-4
done
# host work between replays: snapshots every 2 steps and checkpoints every 3 read the state
# the graphs wrote; monitors every step
case=$TESSERA_SOURCE/tests/cases/bw_heat2d.yaml
spawn bw_heat2d-output compare bw_heat2d-output "$case" --set output.snapshot_every=2 \
  --set output.checkpoint_every=3 --set output.monitor_every=1
gather
# a capture that fails on one rank (the last): every rank falls back to plain launches, rank 0
# warns once, the run succeeds with the bits of plain launches and report.json says fallback
out=$work/fallback
if log=$("$MPIEXEC" -n "$ranks" "$TESSERA_BIN" run "$case" --out "$out" --backend cuda \
          --set gpu.graphs=on --inject-fault "rank=$((ranks - 1)),step=3,kind=graph" 2>&1); then
  nwarn=$(grep -c 'warning: gpu.graphs: capturing a step into a CUDA graph failed' <<<"$log")
  if [ "$nwarn" = 1 ] && grep -q 'fails to capture the step to 3' <<<"$log"; then
    pass "failed capture on rank $((ranks - 1)): one warning naming the cause"
  else
    echo "$log" | tail -5; failure "failed capture: $nwarn warnings (want 1 naming the cause)"
  fi
  report_says "$out" fallback 1 && pass "failed capture: report says fallback after 1 replayed step" ||
    failure "failed capture: report.json"
  if same_fields "$out/final.h5" "$work/bw_heat2d-double-off/final.h5" 0; then
    pass "failed capture: bitwise identical to graphs off"
  else
    failure "failed capture: differs from graphs off"
  fi
else
  echo "$log" | tail -10; failure "a failed capture failed the run"
fi
finish

#!/usr/bin/env bash
# The decomposed PINN on 1 and 2 GPUs, in one job (issue 18's speed goals), its baseline in the
# same run:
#  1. weak scaling: cases/pinn_heat2d.yaml with the same work per rank (network, interior,
#     boundary and initial points, iterations) on 1 rank and on 2 ranks, as 2 boxes in space
#     (the grid and domain doubled along x) and as 2 time slabs trained at once (time.end
#     doubled); efficiency = steady-state it/s on 2 ranks / on 1 (goal >= 0.95; a published
#     claim: 0.85 at 2 GPUs). Steady state: from the first log point (after the CUDA graph's
#     capture and the first chunk) to the end, from report.json's history (iteration and
#     training seconds of the slowest rank at each log point). On GPUs also with gpu.graphs:
#     off on 1 and 2 ranks (what replaying the iteration as one CUDA graph gives).
#  2. time to an error: cases/pinn_front1d.yaml (a sharp front swinging across the domain) on
#     1 rank with one network, and on 2 ranks as 2 boxes, 2 time slabs trained at once and 2
#     causal time slabs (the same points in all, PS_TTA_ITERS iterations in all): the training
#     seconds until the relative L2 error (report.json's history, every log point) first drops
#     to PS_TARGET, and the final error.
# Usage, from the repository root:
#   bench/pinn_scaling.sh [OUTDIR]          (default /tmp/pinn_scaling)
# Environment: BACKEND (cuda, the default: one rank per GPU; host: CPU ranks at tiny sizes),
# TESSERA (default build-gpu/tessera, with BACKEND=host build-host/tessera), MPIEXEC (default
# mpiexec; every run goes through it, -n 1 or -n 2), MPIEXEC_FLAGS (more launcher options),
# PYTHON, PS_PARTS (weak, tta or all: the default), and the sizes below (PS_*). Prints a table
# and the ratios last; OUTDIR gets each run's directory and log, summary.json, and from it
# (bench/pinn_scaling_plot.py) pinn_scaling_weak.csv, .md and .png (and _tta.* for part 2): the
# CSV, table and plot that bench/scaling.py writes for the classical method; the PNGs only
# where python has matplotlib. Exits non-zero when a run fails or its figures are missing or
# not finite.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-/tmp/pinn_scaling}
backend=${BACKEND:-cuda}
case $backend in
  cuda) tess=${TESSERA:-$root/build-gpu/tessera} ;;
  host) tess=${TESSERA:-$root/build-host/tessera}
        export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} ;;
  *) echo "pinn_scaling: BACKEND must be cuda or host, not '$backend'" >&2; exit 2 ;;
esac
[ -x "$tess" ] || { echo "pinn_scaling: no tessera binary at $tess: build it or set TESSERA" >&2; exit 2; }
mpiexec=${MPIEXEC:-mpiexec}
py=${PYTHON:-python3}
parts=${PS_PARTS:-all}
# Sizes. GPU: 64^2 cells x 16 time levels = 65,536 interior points a rank (about 2.5 ms an
# iteration on an H100), width 64 depth 4; the time-to-error case at its own size. Host: tiny.
if [ "$backend" = cuda ]; then
  n=${PS_CELLS:-64} times=${PS_TIMES:-16} width=${PS_WIDTH:-64} depth=${PS_DEPTH:-4}
  iters=${PS_ITERS:-4000} logev=${PS_LOG:-500} bnd=${PS_BOUNDARY:-1024} ini=${PS_INITIAL:-4096}
  prof=${PS_PROFILE:-200}
  t_cells=${PS_TTA_CELLS:-256} t_times=${PS_TTA_TIMES:-64} t_width=${PS_TTA_WIDTH:-64}
  t_depth=${PS_TTA_DEPTH:-4} t_iters=${PS_TTA_ITERS:-30000} t_log=${PS_TTA_LOG:-250}
  target=${PS_TARGET:-1e-2}
else
  n=${PS_CELLS:-16} times=${PS_TIMES:-4} width=${PS_WIDTH:-16} depth=${PS_DEPTH:-2}
  iters=${PS_ITERS:-400} logev=${PS_LOG:-100} bnd=${PS_BOUNDARY:-64} ini=${PS_INITIAL:-256}
  prof=${PS_PROFILE:-50}
  t_cells=${PS_TTA_CELLS:-32} t_times=${PS_TTA_TIMES:-8} t_width=${PS_TTA_WIDTH:-32}
  t_depth=${PS_TTA_DEPTH:-3} t_iters=${PS_TTA_ITERS:-1000} t_log=${PS_TTA_LOG:-50}
  target=${PS_TARGET:-0.3}
fi
mkdir -p "$out"
rm -f "$out"/*.log "$out/summary.json"
fail=0

# run NAME RANKS CASE [--set ...]: one job under the launcher; its wall seconds into NAME.wall
run() {
  local name=$1 np=$2 case=$3
  shift 3
  rm -rf "${out:?}/$name"
  local t0 t1
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  if ! $mpiexec ${MPIEXEC_FLAGS:-} -n "$np" "$tess" run "$case" --out "$out/$name" \
       --backend "$backend" --set output.progress=lines "$@" >"$out/$name.log" 2>&1; then
    tail -5 "$out/$name.log"
    echo "pinn_scaling: run $name failed (log: $out/$name.log)" >&2
    fail=1
  fi
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{printf "%.3f\n", $2 - $1}' >"$out/$name.wall"
  printf '%-14s %d rank(s): %s s  %s\n' "$name" "$np" "$(cat "$out/$name.wall")" \
    "$(grep '^done:' "$out/$name.log" | tail -1)"
}

if [ "$parts" = all ] || [ "$parts" = weak ]; then
  heat=$root/cases/pinn_heat2d.yaml
  # per rank: n x n cells x `times` levels, 4 x bnd boundary points (the faces' shares), ini
  # initial points; Adam only (a fixed count of equal iterations); profile: TSR_PINN_PROFILE after
  common=(--set pinn.network.width="$width" --set pinn.network.depth="$depth"
          --set pinn.points.times="$times" --set pinn.adam.iterations="$iters"
          --set pinn.lbfgs.iterations=0 --set pinn.log_every="$logev")
  one=(--set grid.cells="[$n,$n]" --set pinn.points.boundary="$bnd" --set pinn.points.initial="$ini")
  # 2 boxes: the grid and the domain doubled along x; each box keeps half of each x-long face
  # (so 2 bnd a face), the whole of one y face, and half the initial points (so 2 ini)
  space=(--set grid.cells="[$((2 * n)),$n]" --set grid.hi="[2,1]" --set decomposition.ranks="[2,1]"
         --set pinn.points.boundary="$((2 * bnd))" --set pinn.points.initial="$((2 * ini))")
  # 2 slabs: [0, 0.2], each slab `times` levels of its own half; the faces' points are shared
  # out by time too (so 2 bnd); slab 0 alone has the initial points, slab 1 the slab face
  slabs=(--set grid.cells="[$n,$n]" --set time.end=0.2 --set decomposition.time_slices=2
         --set pinn.slabs=all --set pinn.points.boundary="$((2 * bnd))" --set pinn.points.initial="$ini")
  export TSR_PINN_PROFILE=$prof
  run w1 1 "$heat" "${common[@]}" "${one[@]}"
  run w2_space 2 "$heat" "${common[@]}" "${space[@]}"
  run w2_slabs 2 "$heat" "${common[@]}" "${slabs[@]}"
  if [ "$backend" = cuda ]; then
    run w1_plain 1 "$heat" "${common[@]}" "${one[@]}" --set gpu.graphs=off
    run w2_space_plain 2 "$heat" "${common[@]}" "${space[@]}" --set gpu.graphs=off
  fi
  unset TSR_PINN_PROFILE
fi

if [ "$parts" = all ] || [ "$parts" = tta ]; then
  front=$root/cases/pinn_front1d.yaml
  # the same points in all runs: t_cells x t_times interior points over [0, 1] (a slab: half
  # the levels), the case's boundary and initial points shared out
  tc=(--set grid.cells="[$t_cells]" --set pinn.network.width="$t_width"
      --set pinn.network.depth="$t_depth" --set pinn.log_every="$t_log")
  run t1 1 "$front" "${tc[@]}" --set pinn.points.times="$t_times" --set pinn.adam.iterations="$t_iters"
  run t2_space 2 "$front" "${tc[@]}" --set pinn.points.times="$t_times" \
    --set pinn.adam.iterations="$t_iters"
  run t2_slabs 2 "$front" "${tc[@]}" --set pinn.points.times="$((t_times / 2))" \
    --set pinn.adam.iterations="$t_iters" --set decomposition.time_slices=2 --set pinn.slabs=all
  # causal: iterations per slab, so half as many (the same in all)
  run t2_causal 2 "$front" "${tc[@]}" --set pinn.points.times="$((t_times / 2))" \
    --set pinn.adam.iterations="$((t_iters / 2))" --set decomposition.time_slices=2 \
    --set pinn.slabs=causal
fi

device=$backend
if [ "$backend" = cuda ] && command -v nvidia-smi >/dev/null 2>&1; then
  device=$(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | sed 's/^ *//' | paste -sd ';')
elif [ "$backend" = host ]; then
  device="host: $(getconf _NPROCESSORS_ONLN) cores, $(uptime | sed 's/.*load average: //') load"
fi

"$py" - "$out" "$backend" "$device" "$target" "$parts" <<'EOF' || fail=1
import json, math, os, sys
out, backend, device, target, parts = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
unit = "GPU" if backend == "cuda" else "rank"
bad = []

reports = {}  # every run's report.json, into summary.json (one file to bring back)

def load(name):
    p = f"{out}/{name}/report.json"
    if not os.path.exists(p):
        return None
    r = json.load(open(p))
    reports[name] = dict(r)
    r["wall"] = float(open(f"{out}/{name}.wall").read()) if os.path.exists(f"{out}/{name}.wall") else None
    return r

def col(r, name):
    c = r["history_columns"].index(name)
    return [h[c] for h in r["history"]]

def steady(r):
    """it/s from the first log point to the last (the capture and first chunk left out)."""
    it, sec = col(r, "iteration"), col(r, "seconds")
    if len(it) < 2 or sec[-1] <= sec[0]:
        return None
    return (it[-1] - it[0]) / (sec[-1] - sec[0])

def points(r):
    """Points of each rank's batch, and its interior and boundary points (not the initial
    ones, which a later time slab has at its slab face instead, nor the interfaces)."""
    core = lambda terms: sum(t["points"] for t in terms
                             if t["name"] not in ("interface", "slab initial", "initial"))
    if "subdomains" in r:
        return [s["points"] for s in r["subdomains"]], [core(s["terms"]) for s in r["subdomains"]]
    return [sum(t["points"] for t in r["terms"])], [core(r["terms"])]

summary = {"backend": backend, "device": device, "published_claim_2gpu": 0.85, "goal": 0.95}
if parts in ("all", "weak"):
    names = ["w1", "w2_space", "w2_slabs"] + (["w1_plain", "w2_space_plain"] if backend == "cuda" else [])
    runs = {}
    for nm in names:
        r = load(nm)
        if r is None or not math.isfinite(r.get("loss", float("nan"))):
            bad.append(f"{nm}: no report or a loss that is not finite")
            continue
        tot, core = points(r)
        b = r.get("breakdown")
        runs[nm] = {"ranks": r["ranks"], "it_per_s": r["iterations_per_second"],
                    "it_per_s_steady": steady(r), "iterations": r["iterations"],
                    "train_seconds": r["train_seconds"], "setup_seconds": r["setup_seconds"],
                    "wall_seconds": r["wall"], "points_per_rank": tot, "interior_boundary_points": core,
                    "gpu_graphs": r.get("gpu_graphs"), "graph_iterations": r.get("gpu_graph_iterations"),
                    "compute_ms_rank0": 1e3 * sum(b[k] for k in ("forward", "loss", "backward", "adam")) if b else None,
                    "interface_values_ms_rank0": 1e3 * b["interface_values"] if b and "interface_values" in b else None,
                    "exchange_ms_rank0": 1e3 * b["exchange"] if b and "exchange" in b else None}
    summary["weak"] = {"runs": runs}
    base = runs.get("w1")
    print(f"\nweak scaling, heat 2D + t, the same work per {unit} ({device}):")
    print(f"{'run':15s} {unit + 's':>5s} {'points/rank':>18s} {'it/s':>9s} {'steady':>9s} "
          f"{'ms/it':>7s} {'compute':>8s} {'values':>7s} {'exchange':>8s} {'graphs':>9s} {'efficiency':>10s}")
    eff = {}
    for nm, q in runs.items():
        ref = runs.get("w1_plain" if nm.endswith("_plain") else "w1")
        e = None
        if ref and q["it_per_s_steady"] and ref["it_per_s_steady"]:
            e = q["it_per_s_steady"] / ref["it_per_s_steady"]
            if q["ranks"] > 1:
                eff[nm] = e
        # the points outside interfaces must be the baseline's: the premise of weak scaling
        if ref and q["ranks"] > 1 and any(c != ref["interior_boundary_points"][0] for c in q["interior_boundary_points"]):
            bad.append(f"{nm}: interior + boundary points per rank {q['interior_boundary_points']} differ "
                       f"from one rank's {ref['interior_boundary_points'][0]}")
        s = q["it_per_s_steady"]
        pts = "/".join(str(p) for p in q["points_per_rank"])
        ms = lambda v: f"{v:.3f}" if v is not None else "-"
        print(f"{nm:15s} {q['ranks']:5d} {pts:>18s} {q['it_per_s']:9.1f} {s or 0:9.1f} "
              f"{1e3 / s if s else 0:7.3f} {ms(q['compute_ms_rank0']):>8s} "
              f"{ms(q['interface_values_ms_rank0']):>7s} {ms(q['exchange_ms_rank0']):>8s} "
              f"{str(q['gpu_graphs'] or '-'):>9s} {e if e is not None else float('nan'):10.3f}")
    summary["weak"]["efficiency"] = eff
    if "w1" in runs and "w1_plain" in runs and runs["w1_plain"]["it_per_s_steady"]:
        summary["weak"]["graph_gain_1"] = runs["w1"]["it_per_s_steady"] / runs["w1_plain"]["it_per_s_steady"]
    if "w2_space" in runs and "w2_space_plain" in runs and runs["w2_space_plain"]["it_per_s_steady"]:
        summary["weak"]["graph_gain_2_space"] = runs["w2_space"]["it_per_s_steady"] / runs["w2_space_plain"]["it_per_s_steady"]
    for nm, e in eff.items():
        layout = {"w2_space": "2 boxes", "w2_slabs": "2 time slabs (all)",
                  "w2_space_plain": "2 boxes, gpu.graphs off on 1 and 2"}[nm]
        print(f"efficiency 1 -> 2 {unit}s, {layout}: {e:.3f} (goal 0.95: {'met' if e >= 0.95 else 'not met'}; "
              f"against the published claim of 0.85: {e - 0.85:+.3f})")
    # what the exchange costs: the iteration's time beyond its own phases (each timed alone, rank
    # 0's: the batch's compute and the interface values), less the same excess on one rank (the
    # phases timed one by one against one graph's replay), against the exchange timed alone
    hidden = {}
    for nm in [k for k in runs if runs[k]["ranks"] > 1]:
        q, ref = runs[nm], runs.get("w1_plain" if nm.endswith("_plain") else "w1")
        if not (ref and q["it_per_s_steady"] and ref["it_per_s_steady"] and q["compute_ms_rank0"]
                and ref["compute_ms_rank0"] and q["exchange_ms_rank0"] is not None):
            continue
        t1, t2 = 1e3 / ref["it_per_s_steady"], 1e3 / q["it_per_s_steady"]
        exposed = (t2 - q["compute_ms_rank0"] - q["interface_values_ms_rank0"]) - (t1 - ref["compute_ms_rank0"])
        x = q["exchange_ms_rank0"]
        h = min(1.0, max(0.0, 1.0 - exposed / x)) if x > 0 else None
        hidden[nm] = {"extra_ms": t2 - t1, "exchange_ms": x, "exposed_ms": exposed, "hidden_fraction": h}
        print(f"{nm}: {t2 - t1:.3f} ms an iteration more than 1 {unit}: batch compute "
              f"{q['compute_ms_rank0'] - ref['compute_ms_rank0']:+.3f} ms (its interface points), interface values "
              f"{q['interface_values_ms_rank0']:.3f} ms, exchange alone {x:.3f} ms of which about "
              f"{max(0.0, exposed):.3f} ms shows (estimate: {100 * h if h is not None else float('nan'):.0f}% hidden)")
    summary["weak"]["exchange"] = hidden

if parts in ("all", "tta"):
    label = {"t1": f"1 {unit}, one network", "t2_space": f"2 {unit}s, 2 boxes",
             "t2_slabs": f"2 {unit}s, 2 time slabs (all)", "t2_causal": f"2 {unit}s, 2 causal time slabs"}
    tta = {}
    for nm in label:
        r = load(nm)
        if r is None:
            bad.append(f"{nm}: no report")
            continue
        it, sec, err = col(r, "iteration"), col(r, "seconds"), col(r, "error_l2")
        hit = next((i for i in range(len(it)) if err[i] is not None and err[i] <= target), None)
        fe = r.get("rel_l2_error")
        if fe is None or not math.isfinite(fe):
            bad.append(f"{nm}: final error not finite")
        tta[nm] = {"label": label[nm], "ranks": r["ranks"], "seconds_to_target": sec[hit] if hit is not None else None,
                   "iterations_to_target": it[hit] if hit is not None else None, "final_error": fe,
                   "iterations": r["iterations"], "train_seconds": r["train_seconds"],
                   "it_per_s": r["iterations_per_second"], "wall_seconds": r["wall"],
                   "gpu_graphs": r.get("gpu_graphs")}
    # the same for a ladder of errors (the first history row at or below each)
    ladder = sorted({0.3, 0.1, 3e-2, 1e-2, 3e-3, 1e-3, target}, reverse=True)
    for nm in tta:
        r = load(nm)
        it, sec, err = col(r, "iteration"), col(r, "seconds"), col(r, "error_l2")
        tta[nm]["seconds_to"] = {f"{e:g}": next((sec[i] for i in range(len(it))
                                                if err[i] is not None and err[i] <= e), None)
                                 for e in ladder}
    summary["time_to_error"] = {"case": "pinn_front1d", "target": target, "runs": tta}
    print(f"\ntraining seconds to each relative L2 error, cases/pinn_front1d.yaml ('-': not reached):")
    print(f"{'':32s}" + "".join(f"{e:>9g}" for e in ladder))
    for nm, q in tta.items():
        print(f"{q['label']:32s}" + "".join(f"{q['seconds_to'][f'{e:g}']:9.2f}" if q["seconds_to"][f"{e:g}"] is not None
                                            else f"{'-':>9s}" for e in ladder))
    print(f"\ntime to a relative L2 error <= {target:g} (PS_TARGET), cases/pinn_front1d.yaml (training seconds):")
    ref = tta.get("t1", {}).get("seconds_to_target")
    parts_txt = []
    for nm, q in tta.items():
        s = q["seconds_to_target"]
        txt = f"{s:.2f} s (iteration {q['iterations_to_target']:.0f})" if s is not None else "not reached"
        ratio = f", {ref / s:.2f}x the one network's speed" if s and ref and nm != "t1" else ""
        print(f"  {q['label']:30s}: {txt}{ratio}; final error {q['final_error']:.3e} after "
              f"{q['iterations']} iterations, {q['train_seconds']:.2f} s training, {q['it_per_s']:.1f} it/s, "
              f"{q['wall_seconds'] or 0:.1f} s job")
        parts_txt.append(f"{q['label']}: " + (f"{s:.2f} s" if s is not None else "not reached")
                         + (f" ({ref / s:.2f}x)" if s and ref and nm != "t1" else ""))
        if s and ref and nm != "t1":
            q["speedup_vs_t1"] = ref / s
    print(f"summary: to err<={target:g} (x: the one network's time / this): " + "; ".join(parts_txt))
    print(f"(1 {unit} with decomposition: not possible in this version, one rank per GPU)" if backend == "cuda" else "")

summary["failures"] = bad
summary["reports"] = reports
json.dump(summary, open(f"{out}/summary.json", "w"), indent=2)
for b in bad:
    print("pinn_scaling: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
echo "summary: $out/summary.json"
# the CSV, markdown tables and PNGs (as bench/scaling.py writes them for the classical method):
# $out/pinn_scaling_weak.{csv,md,png} and _tta.*; a python with matplotlib where there is one
plot_py=$py
"$plot_py" -c "import matplotlib" 2>/dev/null || { [ -x /usr/bin/python3 ] && plot_py=/usr/bin/python3; }
if [ -f "$out/summary.json" ]; then
  "$plot_py" "$root/bench/pinn_scaling_plot.py" "$out/summary.json" --out "$out/pinn_scaling" >/dev/null ||
    { echo "pinn_scaling: the tables and plots could not be written" >&2; fail=1; }
  ls "$out"/pinn_scaling_* 2>/dev/null | sed 's/^/  /'
fi
exit $fail

#!/usr/bin/env bash
# The PINN engine against PyTorch on the same GPU, in one call (issue 17's speed goals):
# cases/pinn_poisson2d.yaml (Poisson 2D, width 64, depth 4, 65,536 interior points, Adam, fp32)
# trained by tessera and by bench/pinn_torch.py (eager, one CUDA graph per iteration,
# torch.compile). Reports iterations/s and their ratios, the time to a relative L2 error of
# 1e-3, and tessera's iteration breakdown (forward, loss, backward, Adam) with the GEMMs' FLOP
# rate. Usage, on a GPU machine from the repository root after building build-gpu/:
#   bench/pinn_gpu.sh [OUTDIR]        (default $OUT or /tmp/pinn_gpu)
# Prints a table last; OUTDIR gets tessera's report.json files, torch.jsonl and summary.json.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-${OUT:-/tmp/pinn_gpu}}
tess=${TESSERA:-$root/build-gpu/tessera}
py=${PYTHON:-python3}
mkdir -p "$out"
case=$root/cases/pinn_poisson2d.yaml
fail=0

# throughput: 3000 iterations (the first hundreds include the graph's capture), then 200
# iterations timed phase by phase (TSR_PINN_PROFILE)
TSR_PINN_PROFILE=200 "$tess" run "$case" --out "$out/speed" --set pinn.adam.iterations=3000 \
  --set pinn.log_every=1000 --set output.progress=none >"$out/speed.log" 2>&1 || fail=1
# to an error of 1e-3: the case as it is, the error every 100 iterations
"$tess" run "$case" --out "$out/full" --set pinn.log_every=100 --set output.progress=lines \
  >"$out/full.log" 2>&1 || fail=1
cp "$out/speed/report.json" "$out/tessera_speed.json" 2>/dev/null
cp "$out/full/report.json" "$out/tessera_full.json" 2>/dev/null
rm -f "$out/torch.jsonl"
"$py" "$root/bench/pinn_torch.py" --mode all --iters 1000 --json "$out/torch.jsonl" \
  >"$out/torch.log" 2>&1 || fail=1
"$py" "$root/bench/pinn_torch.py" --mode graph --to-error 1e-3 --json "$out/torch_to_error.jsonl" \
  >>"$out/torch.log" 2>&1 || fail=1

"$py" - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
speed = json.load(open(f"{out}/tessera_speed.json"))
full = json.load(open(f"{out}/tessera_full.json"))
torch = [json.loads(l) for f in ("torch.jsonl", "torch_to_error.jsonl")
         for l in open(f"{out}/{f}") if l.strip()]
def t(mode, to_error=False):
    for r in torch:
        if r.get("mode") == mode and bool(r.get("to_error")) == to_error:
            return r
    return None
cols = full["history_columns"]
ie, isec = cols.index("error_l2"), cols.index("seconds")
hit = next((h for h in full["history"] if h[ie] is not None and h[ie] <= 1e-3), None)
ts = speed["iterations_per_second"]
rows = [("tessera", ts, None)]
for m in ("eager", "graph", "compile"):
    r = t(m)
    if r is None: continue
    ips = r.get("it_per_s")
    rows.append((f"torch {m}", ips, r.get("refused")))
summary = {"device": (t("eager") or {}).get("device"), "tessera_it_per_s": ts,
           "breakdown": speed.get("breakdown"),
           "tessera_to_1e-3": {"iterations": hit[0], "seconds": hit[isec]} if hit else None,
           "tessera_final_error": full["rel_l2_error"], "tessera_final_iterations": full["iterations"]}
print(f"device: {summary['device']}")
print(f"{'run':16s} {'it/s':>10s} {'tessera x':>10s}")
for name, ips, refused in rows:
    if ips:
        print(f"{name:16s} {ips:10.1f} {ts / ips:10.2f}")
        summary[f"ratio_vs_{name.replace(' ', '_')}"] = ts / ips
    else:
        print(f"{name:16s} {'refused':>10s}  {str(refused)[:60]}")
tt = t("graph", True)
if hit:
    print(f"tessera to 1e-3: {hit[0]:.0f} iterations, {hit[isec]:.2f} s (training time)")
else:
    print(f"tessera did not reach 1e-3 (final {full['rel_l2_error']:.3e} after {full['iterations']})")
if tt:
    print(f"torch graph to 1e-3: {tt.get('iterations')} iterations, {tt.get('seconds'):.2f} s")
    summary["torch_graph_to_1e-3"] = {"iterations": tt.get("iterations"), "seconds": tt.get("seconds")}
b = speed.get("breakdown")
if b:
    tot = b["forward"] + b["loss"] + b["backward"] + b["adam"]
    print("breakdown per iteration: " + ", ".join(
        f"{k} {1e3 * b[k]:.3f} ms ({100 * b[k] / tot:.0f}%)" for k in ("forward", "loss", "backward", "adam")))
    print(f"GEMM flops {b['gemm_flops'] / 1e9:.2f} GFLOP/iteration, "
          f"{b['gemm_flop_rate_forward_backward'] / 1e12:.2f} TFLOP/s over forward + backward")
json.dump(summary, open(f"{out}/summary.json", "w"), indent=2)
EOF
exit $fail

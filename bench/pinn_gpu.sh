#!/usr/bin/env bash
# The PINN engine against PyTorch on the same GPU, in one call (issue 17's speed goals):
# cases/pinn_poisson2d.yaml (Poisson 2D, width 64, depth 4, 65,536 interior points, Adam, fp32)
# trained by tessera, once on each of the network's device paths (kernels/net.h: the fused
# kernels, the cuBLAS products, and the layers path, a kernel per layer with its chain rule),
# and by bench/pinn_torch.py (eager, one CUDA graph per iteration, the graph with TF32
# products, torch.compile). Reports iterations/s and their ratios, the time to a relative L2
# error of 1e-3 (not with PINN_GPU_QUICK=1), and tessera's iteration breakdown (forward, loss,
# backward, Adam) with the network products' FLOP rate. Usage, on a GPU machine from the
# repository root after building build-gpu/:
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

# throughput, for each of the network's device paths (kernels/net.h: TSR_NET_FUSED=1 the fused
# kernels, 0 the cuBLAS products, 2 the layers path): 3000 iterations (the first hundreds
# include the graph's capture), then 200 iterations timed phase by phase (TSR_PINN_PROFILE)
for path in fused cublas layers; do
  f=1; [ $path = cublas ] && f=0; [ $path = layers ] && f=2
  TSR_NET_FUSED=$f TSR_PINN_PROFILE=200 "$tess" run "$case" --out "$out/speed_$path" \
    --set pinn.adam.iterations=3000 --set pinn.log_every=1000 --set output.progress=none \
    >"$out/speed_$path.log" 2>&1 || fail=1
  cp "$out/speed_$path/report.json" "$out/tessera_speed_$path.json" 2>/dev/null
done
# to an error of 1e-3: the case as it is (the default path), the error every 100 iterations;
# PINN_GPU_QUICK=1 skips this and PyTorch's run to 1e-3 (throughput only)
quick=${PINN_GPU_QUICK:-0}
rm -f "$out/torch.jsonl" "$out/torch_tf32.jsonl" "$out/torch_to_error.jsonl" "$out/tessera_full.json"
if [ "$quick" != 1 ]; then
  "$tess" run "$case" --out "$out/full" --set pinn.log_every=100 --set output.progress=lines \
    >"$out/full.log" 2>&1 || fail=1
  cp "$out/full/report.json" "$out/tessera_full.json" 2>/dev/null
fi
"$py" "$root/bench/pinn_torch.py" --mode all --iters 1000 --json "$out/torch.jsonl" \
  >"$out/torch.log" 2>&1 || fail=1
# the graphed PyTorch with TF32 products (its fastest configuration on fp32 data)
"$py" "$root/bench/pinn_torch.py" --mode graph --tf32 --iters 1000 --json "$out/torch_tf32.jsonl" \
  >>"$out/torch.log" 2>&1 || fail=1
if [ "$quick" != 1 ]; then
  "$py" "$root/bench/pinn_torch.py" --mode graph --to-error 1e-3 \
    --json "$out/torch_to_error.jsonl" >>"$out/torch.log" 2>&1 || fail=1
fi

"$py" - "$out" <<'EOF' || fail=1
import json, os, sys
out = sys.argv[1]
def load(f):
    return json.load(open(f"{out}/{f}")) if os.path.exists(f"{out}/{f}") else None
speed = {p: load(f"tessera_speed_{p}.json") for p in ("fused", "cublas", "layers")}
full = load("tessera_full.json")
torch = []
for f in ("torch.jsonl", "torch_tf32.jsonl", "torch_to_error.jsonl"):
    if os.path.exists(f"{out}/{f}"):
        torch += [dict(json.loads(l), tf32=f == "torch_tf32.jsonl")
                  for l in open(f"{out}/{f}") if l.strip()]
def t(mode, to_error=False, tf32=False):
    for r in torch:
        if r.get("mode") == mode and bool(r.get("to_error")) == to_error and r["tf32"] == tf32:
            return r
    return None
rows = []
for p in ("fused", "cublas", "layers"):
    if speed[p]:
        rows.append((f"tessera {p}", speed[p]["iterations_per_second"], None))
for m in ("eager", "graph", "compile"):
    r = t(m)
    if r is not None:
        rows.append((f"torch {m}", r.get("it_per_s"), r.get("refused")))
r = t("graph", tf32=True)
if r is not None:
    rows.append(("torch graph tf32", r.get("it_per_s"), r.get("refused")))
summary = {"device": (t("eager") or {}).get("device"),
           "tessera_it_per_s": {p: speed[p]["iterations_per_second"] for p in speed if speed[p]},
           "breakdown": {p: speed[p].get("breakdown") for p in speed if speed[p]}}
print(f"device: {summary['device']}")
ref = [(n, v) for n, v, _ in rows if n.startswith("tessera") and v]
print(f"{'run':18s} {'it/s':>10s} " + " ".join(f"{n + ' x':>16s}" for n, _ in ref))
for name, ips, refused in rows:
    if ips:
        print(f"{name:18s} {ips:10.1f} " + " ".join(f"{v / ips:16.2f}" for _, v in ref))
        for n, v in ref:
            if n != name:
                summary[f"ratio_{n.replace(' ', '_')}_vs_{name.replace(' ', '_')}"] = v / ips
    else:
        print(f"{name:18s} {'refused':>10s}  {str(refused)[:60]}")
if full:
    cols = full["history_columns"]
    ie, isec = cols.index("error_l2"), cols.index("seconds")
    hit = next((h for h in full["history"] if h[ie] is not None and h[ie] <= 1e-3), None)
    summary["tessera_to_1e-3"] = {"iterations": hit[0], "seconds": hit[isec]} if hit else None
    summary["tessera_final_error"] = full["rel_l2_error"]
    summary["tessera_final_iterations"] = full["iterations"]
    if hit:
        print(f"tessera to 1e-3: {hit[0]:.0f} iterations, {hit[isec]:.2f} s (training time)")
    else:
        print(f"tessera did not reach 1e-3 (final {full['rel_l2_error']:.3e} after {full['iterations']})")
tt = t("graph", True)
if tt:
    print(f"torch graph to 1e-3: {tt.get('iterations')} iterations, {tt.get('seconds'):.2f} s")
    summary["torch_graph_to_1e-3"] = {"iterations": tt.get("iterations"), "seconds": tt.get("seconds")}
for p in ("fused", "cublas", "layers"):
    b = speed[p] and speed[p].get("breakdown")
    if b:
        tot = b["forward"] + b["loss"] + b["backward"] + b["adam"]
        print(f"{p} breakdown per iteration: " + ", ".join(
            f"{k} {1e3 * b[k]:.3f} ms ({100 * b[k] / tot:.0f}%)" for k in ("forward", "loss", "backward", "adam")))
        print(f"{p}: network products {b['gemm_flops'] / 1e9:.2f} GFLOP/iteration, "
              f"{b['gemm_flop_rate_forward_backward'] / 1e12:.2f} TFLOP/s over forward + backward")
json.dump(summary, open(f"{out}/summary.json", "w"), indent=2)
if not all(speed.values()):
    sys.exit("a tessera throughput run gave no report")
EOF
exit $fail

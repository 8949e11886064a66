#!/usr/bin/env bash
# GPU end-to-end (label gpu; GPU_RANKS ranks, one GPU each): the rebalancer on the CUDA
# backend. Its timed steps are issued plainly between CUDA graph replays, its work counts come
# from the device, its timing from events: none of it may change a bit, so the moving ignition
# front rebalanced (graphs on and off) equals the run without rebalancing. debug.slowdown
# repeats a rank's kernels: the compute time its events measure grows by the factor (within
# 20%). On 2 GPUs the slowed rank's cells move to the other and a restart keeps them.
set -u
. "$TESSERA_SOURCE/tests/scripts/lib.bash"
. "$TESSERA_SOURCE/tests/gpu/fields.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
np=${GPU_RANKS:-1}
front=$work/front.yaml
sed -e 's/snapshot_every: 50/progress: none/' "$TESSERA_SOURCE/cases/ignition3d.yaml" >"$front"
echo "rebalance: {every: 20, window: 10, threshold: 0.05, enabled: true}" >>"$front"
run_ok "front, not rebalanced" "$np" "$front" --out "$work/f0" --backend cuda \
  --set rebalance.enabled=false
for graphs in on off; do
  run_ok "front, rebalanced, graphs $graphs" "$np" "$front" --out "$work/f-$graphs" \
    --backend cuda --set "gpu.graphs=$graphs" &&
    { same_fields "$work/f0/final.h5" "$work/f-$graphs/final.h5" &&
      pass "graphs $graphs: rebalanced front = not rebalanced" ||
      failure "graphs $graphs: fields differ"; }
done
python3 - "$work/f-on/report.json" <<'PY' && pass "decisions with measured device times" || failure "no device times"
import json, sys
rb = json.load(open(sys.argv[1]))["rebalance"]
print("decisions", rb["decisions"], "migrations", rb["migrations"], "compute per step", rb["last_compute_per_step"])
assert rb["decisions"] > 5 and all(t > 0 for t in rb["last_compute_per_step"])
PY
heat=$work/heat.yaml
cat >"$heat" <<'YAML'
model: heat
grid: {cells: [192, 160, 128]}
initial: {u: "x*(1 - x)*y + z*z"}
boundary: {default: {type: dirichlet, value: "x + y - z"}}
time: {scheme: ssp_rk2, dt: auto, steps: 200}
rebalance: {every: 100, window: 50, threshold: 0.05}
debug: {slowdown: {rank: 0, factor: 3, steps: [1, 1000]}}
output: {progress: none}
YAML
for f in 1 3; do
  run_ok "heat, slowdown $f" 1 "$heat" --out "$work/s$f" --backend cuda \
    --set rebalance.enabled=true --set debug.slowdown.factor=$f
done
python3 - "$work/s1/report.json" "$work/s3/report.json" <<'PY' && pass "slowdown 3: rank 0's measured compute x3 (+-20%)" || failure "slowdown factor"
import json, sys
t1, t3 = (json.load(open(p))["rebalance"]["last_compute_per_step"][0] for p in sys.argv[1:])
print("rank 0 compute per step: %.4g s, slowed 3x: %.4g s (ratio %.3f)" % (t1, t3, t3 / t1))
assert 2.4 < t3 / t1 < 3.6
PY
if [ "$np" -ge 2 ]; then
  run_ok "2 GPUs, one slowed" "$np" "$heat" --out "$work/two" --backend cuda --set time.steps=300 \
    --set debug.slowdown.rank=1 --set debug.slowdown.factor=2 --set output.checkpoint_every=150 &&
    python3 - "$work/two/report.json" <<'PY' && pass "2 GPUs: cells leave the slowed GPU" || failure "2 GPUs: no migration"
import json, sys
r = json.load(open(sys.argv[1]))
c = [b["cells"] for b in r["boxes"]]
print("cells per rank", c, "history", r["rebalance"]["history"])
assert c[1] < 0.7 * c[0]
PY
  run_ok "2 GPUs, not rebalanced" "$np" "$heat" --out "$work/two0" --backend cuda \
    --set time.steps=300 --set rebalance.enabled=false &&
    { same_fields "$work/two/final.h5" "$work/two0/final.h5" && pass "2 GPUs: bitwise" ||
      failure "2 GPUs: fields differ"; }
  run_ok "2 GPUs, restart" "$np" "$heat" --out "$work/two" --backend cuda --set time.steps=300 \
    --set debug.slowdown.rank=1 --set debug.slowdown.factor=2 \
    --restart "$work/two/checkpoint_00000150.h5" &&
    { same_fields "$work/two/final.h5" "$work/two0/final.h5" && pass "2 GPUs: restart bitwise" ||
      failure "2 GPUs: restart differs"; }
fi
finish

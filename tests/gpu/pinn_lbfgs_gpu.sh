#!/usr/bin/env bash
# GPU end-to-end (label gpu): the decomposed PINN with L-BFGS on the CUDA backend, in fp64
# against the same ranks on the CPU (issue 18). 2 ranks on one GPU (CUDA_VISIBLE_DEVICES=0:
# more ranks than GPUs, so they share it and exchange over MPI through host memory), Poisson
# in 2 boxes, 40 Adam + 20 L-BFGS iterations: report.json says ranks_per_gpu 2 and no CUDA
# graph, and every history row's loss is the CPU ranks' within 1e-6 (relative); on 2 GPUs (one
# rank each, NCCL) the same; 4 causal time slabs of heat on one GPU with L-BFGS per slab finish
# with the CPU ranks' error within 1e-5. A restart inside the GPU run's L-BFGS ends as the
# straight GPU run, bit for bit; where it does not, restart_diagnosis prints where they part.
set -u
. "$TESSERA_SOURCE/tests/scripts/lib.bash"
. "$TESSERA_SOURCE/tests/gpu/fields.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cases=$TESSERA_SOURCE/cases
py=/usr/bin/python3
[ -x "$py" ] || py=python3
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
p="--set grid.cells=[16,16] --set pinn.network.width=16 --set pinn.network.depth=2
   --set pinn.points.boundary=32 --set pinn.weights.boundary=10 --set pinn.adam.lr=1e-2
   --set pinn.adam.iterations=40 --set pinn.lbfgs.iterations=20 --set pinn.log_every=5
   --set precision=double --set output.progress=none --set output.checkpoint_every=50"
# same_losses A B TOL: every history row's loss of A within TOL (relative) of B's
same_losses() {
  "$py" - "$1" "$2" "$3" <<'PY'
import csv, sys
a, b, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
ra = [(int(r["iteration"]), float(r["loss"])) for r in csv.DictReader(open(a + "/history.csv"))]
rb = [(int(r["iteration"]), float(r["loss"])) for r in csv.DictReader(open(b + "/history.csv"))]
assert [i for i, _ in ra] == [i for i, _ in rb], "rows differ"
worst = max(abs(x - y) / max(abs(y), 1e-300) for (_, x), (_, y) in zip(ra, rb))
print("largest relative difference of the loss: %.2e" % worst)
sys.exit(0 if worst <= tol else 1)
PY
}
# same_rows A B: every history row of A (a restarted run) that B also has holds the same loss
# terms, error and mismatch to the last digit printed (all but the seconds)
same_rows() {
  "$py" - "$1" "$2" <<'PY'
import csv, sys
def rows(p):
    return {r["iteration"]: {k: v for k, v in r.items() if k != "seconds"}
            for r in csv.DictReader(open(p + "/history.csv"))}
a, b = rows(sys.argv[1]), rows(sys.argv[2])
common = [i for i in a if i in b]
bad = [i for i in common if a[i] != b[i]]
print("%d rows in common, %d differ%s" % (len(common), len(bad), (": first " + bad[0]) if bad else ""))
sys.exit(0 if common and not bad else 1)
PY
}
# Where a restart parts from the straight run (printed, no verdict): a second straight run
# against the first (do two straight runs on a shared GPU agree?), and both traced
# (TSR_PINN_TRACE=1: per rank and L-BFGS iteration the loss terms, the step and digests of the
# parameters, the pairs and the interface values sent and received): the first line after the
# checkpoint that differs names what parted first.
restart_diagnosis() {
  local t=$work/trace
  mkdir -p "$t/r"
  CUDA_VISIBLE_DEVICES=0 run_ok shared_again 2 "$cases/pinn_poisson2d.yaml" --out "$t/again" \
    --backend cuda $p &&
    { same_fields "$work/shared/final.h5" "$t/again/final.h5" >/dev/null &&
        echo "diagnosis: two straight runs on the shared GPU agree bit for bit" ||
        echo "diagnosis: two straight runs on the shared GPU differ: not the restart, the runs"; }
  CUDA_VISIBLE_DEVICES=0 TSR_PINN_TRACE=1 "$MPIEXEC" -n 2 "$TESSERA_BIN" run \
    "$cases/pinn_poisson2d.yaml" --out "$t/s" --backend cuda $p >/dev/null 2>"$t/s.err" &&
    cp "$t/s/checkpoint_00000050.h5" "$t/r/" &&
    CUDA_VISIBLE_DEVICES=0 TSR_PINN_TRACE=1 "$MPIEXEC" -n 2 "$TESSERA_BIN" run \
      "$cases/pinn_poisson2d.yaml" --out "$t/r" --backend cuda $p \
      --restart "$t/r/checkpoint_00000050.h5" >/dev/null 2>"$t/r.err" ||
    { echo "diagnosis: the traced runs failed"; tail -5 "$t/s.err" "$t/r.err"; return; }
  "$py" - "$t/s.err" "$t/r.err" <<'PY'
import re, sys
def lines(path):
    out = {}
    for l in open(path):
        m = re.match(r"pinn-trace lbfgs (\w+) it=(\d+) rank=(\d+) (.*)", l.strip())
        if m: out[(m.group(1), int(m.group(2)), int(m.group(3)))] = m.group(4)
    return out
s, r = lines(sys.argv[1]), lines(sys.argv[2])
def field(v, k): return dict(x.split("=", 1) for x in v.split())[k]
for (kind, it, rank), v in sorted(r.items()):
    if kind == "begin":
        w = s.get(("step", it, rank), "")
        same = w and all(field(v, k) == field(w, k) for k in ("theta", "state", "pairs"))
        print("diagnosis: rank %d at %d: the restored L-BFGS state %s the straight run's" %
              (rank, it, "is" if same else "is NOT"))
for rank in sorted({k[2] for k in r}):
    steps = sorted(it for kind, it, rk in r if kind == "step" and rk == rank)
    for it in steps:
        a, b = s.get(("step", it, rank)), r[("step", it, rank)]
        if a != b:
            print("diagnosis: rank %d parts first at L-BFGS iteration %d" % (rank, it))
            print("  straight:", a)
            print("  restart: ", b)
            diff = [k for k in ("terms", "step", "theta", "state", "sent", "recv")
                    if not a or field(a, k) != field(b, k)]
            print("  differing:", ", ".join(diff))
            break
    else:
        print("diagnosis: rank %d: every traced L-BFGS iteration after the restart agrees" % rank)
PY
}

run_ok cpu 2 "$cases/pinn_poisson2d.yaml" --out "$work/cpu" --backend host $p
if CUDA_VISIBLE_DEVICES=0 run_ok shared 2 "$cases/pinn_poisson2d.yaml" --out "$work/shared" \
     --backend cuda $p; then
  if "$py" -c "
import json, sys; r = json.load(open(sys.argv[1]))
sys.exit(0 if r['ranks_per_gpu'] == 2 and r['gpu_graphs'] == 'off' else 1)" "$work/shared/report.json" &&
     same_losses "$work/shared" "$work/cpu" 1e-6; then
    pass "2 ranks sharing one GPU (MPI through host memory), Adam then L-BFGS: the CPU ranks' losses"
  else failure "2 ranks sharing one GPU: report or losses differ from the CPU ranks'"; fi
  # a restart inside L-BFGS (checkpoint 50: Adam's 40 and 10 of L-BFGS) ends as the straight run
  mkdir -p "$work/sr" && cp "$work/shared/checkpoint_00000050.h5" "$work/sr/"
  CUDA_VISIBLE_DEVICES=0 run_ok shared_restart 2 "$cases/pinn_poisson2d.yaml" --out "$work/sr" \
    --backend cuda $p --restart "$work/sr/checkpoint_00000050.h5" &&
    { same_fields "$work/shared/final.h5" "$work/sr/final.h5" >/dev/null &&
      same_rows "$work/sr" "$work/shared" &&
      pass "shared GPU: a restart inside L-BFGS ends bit for bit as the straight run (fields and every loss after it)" ||
      { failure "shared GPU: the restart inside L-BFGS differs"; restart_diagnosis; }; }
fi
if [ "$ngpu" -ge 2 ]; then
  run_ok nccl 2 "$cases/pinn_poisson2d.yaml" --out "$work/nccl" --backend cuda $p &&
    { same_losses "$work/nccl" "$work/cpu" 1e-6 &&
      pass "2 ranks on 2 GPUs (NCCL), Adam then L-BFGS: the CPU ranks' losses" ||
      failure "2 ranks on 2 GPUs: losses differ from the CPU ranks'"; }
fi
c="--set grid.cells=[12,12] --set pinn.network.width=16 --set pinn.network.depth=2
   --set pinn.points.times=4 --set pinn.points.boundary=32 --set pinn.points.initial=144
   --set pinn.adam.iterations=30 --set pinn.lbfgs.iterations=10 --set pinn.log_every=10
   --set precision=double --set output.progress=none --set decomposition.time_slices=4
   --set pinn.slabs=causal"
run_ok causal_cpu 4 "$cases/pinn_heat2d.yaml" --out "$work/ccpu" --backend host $c &&
  CUDA_VISIBLE_DEVICES=0 run_ok causal_gpu 4 "$cases/pinn_heat2d.yaml" --out "$work/cgpu" \
    --backend cuda $c &&
  { "$py" -c "
import json, sys
a, b = (json.load(open(p + '/report.json')) for p in sys.argv[1:3])
print('errors', a['rel_l2_error'], b['rel_l2_error'])
sys.exit(0 if abs(a['rel_l2_error'] - b['rel_l2_error']) <= 1e-5 * b['rel_l2_error'] and a['ranks_per_gpu'] == 4 else 1)
" "$work/cgpu" "$work/ccpu" &&
    pass "4 causal slabs on one GPU with L-BFGS per slab: the CPU ranks' error" ||
    failure "4 causal slabs on one GPU: the error differs from the CPU ranks'"; }
finish

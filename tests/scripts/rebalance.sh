#!/usr/bin/env bash
# The rebalancer on CPU ranks (issue 16): with one of 4 ranks slowed 3x (debug.slowdown) cells
# leave it and the measured imbalance falls below the threshold; when the slowdown ends the
# partition moves back; a case without imbalance never migrates; the moving ignition front
# migrates as it moves; and every run's final fields are bitwise equal to the same run without
# rebalancing, across a checkpoint/restart that keeps the rebalanced boxes too.
#
# Timing on this machine: CI's has 2 cores for the 4 ranks, so a rank's measured compute
# includes its share of a core (ranks stepping at once share one), and a window's imbalance
# varies by about 0.1 from that alone. The slowed case asserts the best decision after the
# migration; the moving front's imbalance is printed, not asserted (README, Rebalancing).
#
# TSR_TIMING_CHECKS=0 (tests/sanitize.sh, where two tests share the cores and ASan slows each
# rank by its own measure) leaves out the checks on measured times: the runs, migrations and
# bitwise comparisons stay.
set -u
. "$(dirname "$0")/lib.bash"
timing=${TSR_TIMING_CHECKS:-1}
[ "$timing" = 1 ] || echo "note: TSR_TIMING_CHECKS=0: the checks on measured times are not made"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
same() { # LABEL A B: final fields bitwise equal
  if h5diff -q "$2" "$3" /fields /fields >/dev/null 2>&1; then pass "$1"
  else h5diff -r "$2" "$3" /fields /fields 2>&1 | head -5; failure "$1"; fi
}
# check LABEL PYTHON REPORT: a Python assertion on report.json (as r) passes
check() {
  [ "$timing" = 1 ] || [ "${4:-}" = always ] || return 0
  if python3 - "$3" <<EOF; then pass "$1"; else failure "$1"; fi
import json, sys
r = json.load(open(sys.argv[1]))
rb = r.get("rebalance")
def cells(b): return (b[3] - b[0]) * (b[4] - b[1]) * (b[5] - b[2])
def imb(t): m = sum(t) / len(t); return max(t) / m - 1
$2
EOF
}

slow=$work/slow.yaml
cat >"$slow" <<'YAML'
model: heat
grid: {cells: [768, 768]}
params: {kappa: 1.0}
initial: {u: "sin(pi*x)*sin(pi*y) + x*y"}
boundary: {default: {type: dirichlet, value: "x*y"}}
time: {scheme: ssp_rk2, steps: 1200}
rebalance: {every: 200, window: 200, threshold: 0.15}
debug: {slowdown: {rank: 1, factor: 3, steps: [1, 700]}}
output: {progress: lines, monitor_every: 1200}
YAML
# under the sanitizers (tests/sanitize.sh: timing checks off) a smaller grid takes the same
# paths: the migrations, the checkpoints of rebalanced boxes, the restarts
[ -n "${TSR_SANITIZED:-}" ] && sed -i 's/cells: \[768, 768\]/cells: [256, 256]/' "$slow"

# --- one slowed rank ------------------------------------------------------------------------
if "$MPIEXEC" -n 4 "$TESSERA_BIN" run "$slow" --out "$work/slow" \
     --set output.checkpoint_every=300 >"$work/slow.log" 2>&1 ||
   { tail -20 "$work/slow.log"; failure "slowed rank: tessera run exited non-zero"; false; }; then
  check "report.json names the history columns; every migration predicted a saving above its cost" '
assert rb["history_columns"] == ["step", "imbalance", "predicted", "migrated", "saving_s",
                                 "migration_cost_s"], rb["history_columns"]
moved = [h for h in rb["history"] if h[3]]
assert len(moved) == rb["migrations"] == len(rb["events"]), (len(moved), rb["migrations"])
for h in moved:
    assert h[4] > h[5] > 0, h' "$work/slow/report.json" always
  check "the first decision moves cells off the slowed rank (its box < 60% of the others')" '
e = rb["events"][0]
assert e["step"] == 200, e["step"]
c = [cells(b) for b in e["boxes"]]
others = (c[0] + c[2] + c[3]) / 3
print("cells after the first migration:", c)
assert c[1] < 0.6 * others, c' "$work/slow/report.json"
  check "after rebalancing the measured imbalance is below 0.25 while the slowdown lasts" '
e = rb["events"][0]
during = [h[1] for h in rb["history"] if 200 < h[0] <= 700]
print("imbalance before %.3f; measured at the decisions after it while slowed:" % imb(e["compute_per_step_before"]), during)
assert imb(e["compute_per_step_before"]) > 0.4
# 0.25, not the case threshold of 0.15: on 4 ranks sharing 2 cores a balanced window measures
# up to about 0.15 from the sharing alone (README, Rebalancing); before it was 0.6-1.0
assert min(during) < 0.25, during' "$work/slow/report.json"
  # After the slowdown rank 1 holds about a third of the others' cells and is 3x faster: the
  # imbalance it leaves is about 0.2 (1 / (0.75 + 0.25 / 3) - 1), near the case's 0.15 on CI's 2
  # cores, where 4 ranks' windows measure up to 0.15 from the sharing alone, and its saving over
  # the 200 steps left is near the cost of a migration on a loaded machine. So the check is on
  # the decision: one whose window lies after the slowdown (step >= 900) and measures more than
  # 0.15 gives rank 1 cells back, or its log line says the saving does not repay a migration.
  NOGAIN=$(grep -c "does not repay a migration" "$work/slow.log")
  export NOGAIN
  check "when the slowdown ends, a decision that measures the imbalance moves cells back to rank 1 (or says why not)" '
import os
c = [b["cells"] for b in r["boxes"]]
slowed = [cells(b) for b in [x for x in rb["events"] if x["step"] <= 700][-1]["boxes"]]
post = [h for h in rb["history"] if h[0] >= 900]
print("decisions after the slowdown [step, imbalance, predicted, migrated]:", post)
print("cells per rank while slowed:", slowed, "at the end:", c)
for h in post:
    if h[1] <= 0.15:
        print("step %d measured %.3f: below the threshold" % (h[0], h[1]))
    elif h[3]:
        assert c[1] > 1.1 * slowed[1], c
    else:
        assert int(os.environ["NOGAIN"]) > 0, "measured above 0.15, did not migrate, said no reason"
        print("step %d: the predicted saving did not repay a migration (its log line)" % h[0])' \
    "$work/slow/report.json"
fi
run_ok "the same without rebalancing" 4 "$slow" --out "$work/plain" --set rebalance.enabled=false \
  --set output.progress=none &&
  same "slowed rank: final fields equal with and without rebalancing" \
    "$work/slow/final.h5" "$work/plain/final.h5"

# --- restart: the checkpoint keeps the rebalanced boxes ------------------------------------
if [ -f "$work/slow/checkpoint_00000300.h5" ]; then
  if log=$("$MPIEXEC" -n 4 "$TESSERA_BIN" run "$slow" --out "$work/slow" \
           --restart "$work/slow/checkpoint_00000300.h5" --set output.progress=lines 2>&1); then
    echo "$log" | grep -q "restart: continuing on the boxes" &&
      pass "a restart on 4 ranks continues on the checkpoint's rebalanced boxes" ||
      { echo "$log" | head -5; failure "restart did not take the checkpoint's boxes"; }
    same "restarted from a rebalanced checkpoint: bitwise equal" "$work/slow/final.h5" \
      "$work/plain/final.h5"
  else
    echo "$log" | tail -5; failure "restart from the rebalanced checkpoint"
  fi
  run_ok "restart on 3 ranks" 3 "$slow" --out "$work/slow" \
    --restart "$work/slow/checkpoint_00000300.h5" --set output.progress=none &&
    same "restarted on 3 ranks (a fresh partition): bitwise equal" "$work/slow/final.h5" \
      "$work/plain/final.h5"
else
  failure "no checkpoint at step 300"
fi

# --- no imbalance: no migration -------------------------------------------------------------
[ "$timing" = 1 ] && run_ok "no slowdown" 4 "$slow" --out "$work/even" --set debug.slowdown.factor=1 \
  --set rebalance.threshold=1.0 --set output.progress=none --set time.steps=700 &&
  check "an even run decides every 200 steps and never migrates (threshold 1.0)" '
assert rb["decisions"] == 3, rb["decisions"]
assert rb["migrations"] == 0 and rb["events"] == []' "$work/even/report.json"

# --- the moving front -----------------------------------------------------------------------
front=$work/front.yaml
sed -e 's/snapshot_every: 50/progress: none/' "$TESSERA_SOURCE/cases/ignition2d.yaml" >"$front"
cat >>"$front" <<'YAML'
rebalance: {every: 20, window: 20, threshold: 0.3}
YAML
run_ok "ignition front, rebalanced" 4 "$front" --out "$work/front" &&
  run_ok "ignition front, not rebalanced" 4 "$front" --out "$work/front0" \
    --set rebalance.enabled=false &&
  same "moving front: final fields equal with and without rebalancing" \
    "$work/front/final.h5" "$work/front0/final.h5"
check "moving front: it migrates as the front moves" '
ev = rb["events"]
print("migrations at steps", [e["step"] for e in ev])
print("imbalance measured at each decision:", ["%d: %.3f" % (h[0], h[1]) for h in rb["history"]])
assert len(ev) >= 2' "$work/front/report.json"

# --- bad input ------------------------------------------------------------------------------
bad=$work/bad.yaml
sed -e 's/every: 200/every: 0/' "$slow" >"$bad"
if log=$("$MPIEXEC" -n 1 "$TESSERA_BIN" check "$bad" 2>&1); then failure "rebalance.every: 0 accepted"
else echo "$log" | grep -q "bad.yaml:7:.*rebalance.every" && pass "rebalance.every: 0 refused at file:line" ||
  { echo "$log"; failure "rebalance.every message"; }; fi
finish

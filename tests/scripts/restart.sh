#!/usr/bin/env bash
# Checkpoint/restart: a run restarted from a checkpoint on another decomposition ends bitwise
# equal to an uninterrupted run; `latest` falls back past a damaged checkpoint; a checkpoint of
# another case is refused with the keys that differ, continued with --restart-force, and
# refused even then on another grid; the checkpoint layout (chunked Fletcher32 datasets per
# component, attributes); a restart continues the snapshot series. Checkpoints are written by a
# background thread (the default) except where a leg says otherwise: background and synchronous
# checkpoints hold the same data, and a background write that fails (full disk) stops the run
# with a message naming the file while the previous checkpoint stays good. Checkpoints of
# several chunks written rank by rank (chunks inside a rank's box built by tessera, chunks
# across boxes merged by HDF5) equal a 1-rank checkpoint, restart bitwise and catch a flipped byte.
# A case text over 64 KiB is checkpointed and restarts.
set -u
. "$(dirname "$0")/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/heat2d.yaml" <<'YAML'
model: heat
grid: {cells: [40, 34], lo: [0, -1], hi: [2, 1], periodic: [true, false]}
params: {kappa: 0.7, a: 0.3}
initial: {u: "sin(pi*x)*cos(0.5*pi*y) + a*x*y"}
source: {u: "a*sin(t + x)*y"}
boundary: {ylo: {type: dirichlet, value: "a*sin(3*t)*cos(pi*x)"}, yhi: {type: neumann, value: "0.1*t + x"}}
time: {scheme: rk4, dt: auto, steps: 12}
output: {checkpoint_every: 3, keep: 3}
YAML
cat >"$work/wave3d.yaml" <<'YAML'
model: wave
grid: {cells: [10, 12, 11], periodic: true}
initial: {u: "exp(-30*(pow(x - 0.5, 2) + pow(y - 0.5, 2) + pow(z - 0.5, 2)))", v: "0"}
time: {scheme: ssp_rk3, dt: auto, steps: 12}
output: {checkpoint_every: 3, keep: 3}
YAML
# a model whose cells sub-step their reaction (the count from the state alone: nothing else to
# checkpoint)
cat >"$work/ignition2d.yaml" <<'YAML'
model: ignition
grid: {cells: [30, 26], periodic: [false, true]}
params: {kappa: 1e-3, A: 10, delta: 0.01}
initial: {u: "1/(1 + exp((x - 0.3 - 0.1*sin(2*pi*y))/0.05))"}
boundary: {default: {type: neumann, value: 0}}
time: {scheme: ssp_rk2, dt: auto, steps: 12}
output: {checkpoint_every: 3, keep: 3}
YAML
same() { # same LABEL A B: final fields bitwise equal
  if h5diff -q "$2" "$3" /fields /fields >/dev/null 2>&1; then pass "$1"
  else h5diff -r "$2" "$3" /fields /fields 2>&1 | head -5; failure "$1"; fi
}
for name in heat2d wave3d ignition2d; do
  case=$work/$name.yaml ref=$work/$name-ref out=$work/$name-ckpt
  run_ok "$name np1" 1 "$case" --out "$ref" || continue
  # the checkpointing leg writes rank by rank (output.io: serial), the serial-HDF5 builds' path,
  # and the restart below reads those files back in parallel
  run_ok "$name np2 checkpointing" 2 "$case" --out "$out" --set output.io=serial || continue
  # keep 3 of 3, 6, 9 (none at the last step); latest names the newest
  [ "$(ls "$out" | grep -c '^checkpoint_.*\.h5$')" = 3 ] && [ -f "$out/checkpoint_00000003.h5" ] &&
    [ -f "$out/checkpoint_00000009.h5" ] && [ "$(cat "$out/latest")" = checkpoint_00000009.h5 ] &&
    pass "$name: checkpoints 3, 6, 9 and latest" || { ls "$out"; failure "$name: checkpoint files"; }
  rm "$out/final.h5"
  run_ok "$name restart 6 np3 slabs" 3 "$case" --out "$out" --restart "$out/checkpoint_00000006.h5" \
    --set decomposition.partition=slabs && same "$name: restart from 6 on 3 ranks (slabs) = uninterrupted" "$ref/final.h5" "$out/final.h5"
  # damage the newest: latest falls back to 6
  truncate -s 2000 "$out/checkpoint_00000009.h5"
  rm "$out/final.h5"
  if log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$out" --restart latest 2>&1); then
    if echo "$log" | grep -q "using the older '$out/checkpoint_00000006.h5'"; then pass "$name: latest falls back to 6"
    else echo "$log" | head; failure "$name: fallback message"; fi
    same "$name: restart from fallback = uninterrupted" "$ref/final.h5" "$out/final.h5"
  else echo "$log" | tail; failure "$name: --restart latest with a damaged newest"; fi
done
out=$work/heat2d-ckpt
# flipped data bytes: the checksum catches them
f=$out/checkpoint_00000006.h5
cp "$f" "$work/bad.h5"
size=$(stat -c %s "$work/bad.h5")
printf '\x55\x55\x55\x55\x55\x55\x55\x55' | dd of="$work/bad.h5" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/heat2d.yaml" --out "$work/bad" --restart "$work/bad.h5" 2>&1); rc=$?
if [ $rc = 2 ] && echo "$log" | grep -q "checksum error"; then pass "damaged data: checksum error, exit 2"
else echo "$log" | tail -3; failure "damaged data: rc $rc"; fi
# another case (a changed param) is refused, naming the key, with exit 2
sed 's/kappa: 0.7/kappa: 0.8/' "$work/heat2d.yaml" >"$work/other.yaml"
refused() { # LABEL MESSAGE NP ARGS...: exit 2 and the message
  local label=$1 msg=$2 np=$3 log rc
  shift 3
  log=$("$MPIEXEC" -n "$np" "$TESSERA_BIN" run "$@" 2>&1); rc=$?
  if [ $rc = 2 ] && echo "$log" | grep -qF -- "$msg"; then pass "$label: exit 2"
  else echo "$log" | grep -v '^ *$' | tail -5; failure "$label: rc $rc"; fi
}
refused "other case refused" "params.kappa: checkpoint 0.7, this case 0.8" 2 "$work/other.yaml" \
  --out "$work/other" --restart "$f"
refused "other case: what to do" "pass --restart-force to continue anyway" 1 "$work/other.yaml" \
  --out "$work/other" --restart "$f"
refused "other --set refused" "params.a: checkpoint 0.3, this case 0.4" 1 "$work/heat2d.yaml" \
  --out "$work/other" --restart "$f" --set params.a=0.4
# latest does not fall back past a checkpoint of another case: an older one is no better
# (the newest here is final.h5 of the restart above, a checkpoint of its step 12)
refused "other case, latest" "checkpoint $out/final.h5 was written by a different case; these keys differ:" \
  1 "$work/other.yaml" --out "$out" --restart latest
# a comment, the name or an output key edited in the file: the same case, said and continued
{ cat "$work/heat2d.yaml"; echo "# run again"; } | sed 's/keep: 3/keep: 2/' >"$work/edited.yaml"
if log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/edited.yaml" --out "$work/edited" --restart "$f" 2>&1); then
  echo "$log" | grep -q "the case text differs from the checkpoint's, but no key that determines the solution does" &&
    pass "edited comment and output.keep: continues, said" || failure "edited: message"
  same "edited: = uninterrupted" "$work/heat2d-ref/final.h5" "$work/edited/final.h5"
else echo "$log" | tail -3; failure "edited comment: refused"; fi
# --restart-force continues, and rank 0 warns with the keys (a param that leaves dt alone: a
# run goes on with the dt it started with, and kappa would change dt: auto)
sed 's/a: 0.3/a: 0.5/' "$work/heat2d.yaml" >"$work/forced.yaml"
if log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$work/forced.yaml" --out "$work/forced" --restart "$f" --restart-force 2>&1); then
  [ "$(echo "$log" | grep -c 'warning: --restart-force: continuing from')" = 1 ] &&
    echo "$log" | grep -qF "  params.a: checkpoint 0.3, this case 0.5" &&
    pass "--restart-force: continues, one warning naming the key" || { echo "$log" | head -5; failure "--restart-force: warning"; }
  # the state after 6 steps with a = 0.3 and 6 with a = 0.5: not the uninterrupted run's
  h5diff -q "$work/heat2d-ref/final.h5" "$work/forced/final.h5" /fields /fields >/dev/null 2>&1 &&
    failure "--restart-force: a = 0.5 had no effect" || pass "--restart-force: goes on with this case's a"
else echo "$log" | tail -3; failure "--restart-force: rc $?"; fi
refused "--restart-force with another dt" "has dt = " 1 "$work/other.yaml" --out "$work/other" --restart "$f" --restart-force
# another grid: refused even with --restart-force, before any field is read
refused "other grid with --restart-force" "holds a 2D grid of 40x34 cells and this case has 2D 20x34 (grid.cells); a checkpoint continues only on the grid it was written on, --restart-force or not" \
  2 "$work/heat2d.yaml" --out "$work/other" --restart "$f" --set "grid.cells=[20, 34]" --restart-force
refused "other dimension" "holds a 2D grid of 40x34 cells and this case has 3D 40x34x2" 1 "$work/heat2d.yaml" \
  --out "$work/other" --restart "$f" --set "grid.cells=[40, 34, 2]" --set "grid.lo=[0, -1, 0]" \
  --set "grid.hi=[2, 1, 1]" --set "grid.periodic=[true, false, false]" --restart-force
refused "--restart-force alone" "--restart-force goes with --restart" 1 "$work/heat2d.yaml" --out "$work/other" --restart-force
[ ! -e "$work/other" ] && pass "refusals leave no output directory" || failure "refusals left $work/other"

# the layout of a checkpoint: per component a chunked dataset with Fletcher32, and the
# attributes a restart and a reader need
w=$work/wave3d-ckpt/checkpoint_00000006.h5
for comp in u v; do
  hdr=$(h5dump -p -H -d /fields/$comp "$w" 2>&1)
  echo "$hdr" | grep -q "DATASPACE  SIMPLE { ( 11, 12, 10 )" && echo "$hdr" | grep -q CHUNKED &&
    echo "$hdr" | grep -q FLETCHER32 && echo "$hdr" | grep -q H5T_IEEE_F64LE &&
    pass "checkpoint /fields/$comp: float64 [11][12][10], chunked, Fletcher32" ||
    { echo "$hdr" | head -20; failure "checkpoint /fields/$comp layout"; }
done
attrs=$(h5dump -A -H "$w" | grep -o 'ATTRIBUTE "[a-z_]*"' | tr -d '"' | awk '{print $2}' | sort | paste -sd' ' -)
[ "$attrs" = "boxes case_hash case_text cells dt hi lo rebalance_counts rebalance_seconds step tessera_version time" ] &&
  pass "checkpoint attributes: $attrs" || failure "checkpoint attributes: $attrs"
h5dump -a /case_text "$w" | grep -q "model: wave" && h5dump -a /step "$w" | grep -q "(0): 6$" &&
  h5dump -a /case_hash "$w" | grep -Eq '"[0-9a-f]{16}"' && pass "checkpoint case_text, step, case_hash" ||
  failure "checkpoint attribute values"

# a restart continues the snapshot series: entries up to the checkpoint stay, later ones (of
# the longer first run) go, files and entries, the new ones follow; contents equal an uninterrupted run's
s=$work/series
run_ok "series" 1 "$work/heat2d.yaml" --out "$s" --set output.snapshot_every=2 --set output.checkpoint_every=4 &&
  cp "$s/snapshot_00000006.h5" "$work/snap6.h5" &&
  run_ok "series restart at 4" 2 "$work/heat2d.yaml" --out "$s" --restart "$s/checkpoint_00000004.h5" \
    --set output.snapshot_every=3 && {
  python3 "$TESSERA_SOURCE/tests/scripts/xdmf_check.py" "$s/snapshots.xmf" 0,2,4,6,9,12 8 &&
    pass "series after a restart at 4 with every 3: 0 2 4 | 6 9 12" || failure "series after the restart"
  [ ! -e "$s/snapshot_00000010.h5" ] && ! grep -q snapshot_00000010 "$s/snapshots.xmf" &&
    pass "series: the first run's snapshot 10 is gone, file and entry" || failure "series: stale snapshot 10"
  same "series: snapshot 6 after the restart = the first run's" "$work/snap6.h5" "$s/snapshot_00000006.h5"
  # restarting at 8, where no snapshot was listed, with none to come: 9 and 12 go at once
  run_ok "series restart at 8" 1 "$work/heat2d.yaml" --out "$s" --restart "$s/checkpoint_00000008.h5" \
    --set output.snapshot_every=100 &&
    python3 "$TESSERA_SOURCE/tests/scripts/xdmf_check.py" "$s/snapshots.xmf" 0,2,4,6 8 &&
    [ "$(cd "$s" && ls snapshot_*.h5 | paste -sd' ' -)" = "snapshot_00000000.h5 snapshot_00000002.h5 snapshot_00000004.h5 snapshot_00000006.h5" ] &&
    pass "series after a restart at 8 with none to come: 0 2 4 6 (9 and 12 deleted)" || failure "series after the second restart"
}

# background (default) and synchronous checkpoints of one run: the same data
case=$work/heat2d.yaml
if run_ok "heat2d async" 2 "$case" --out "$work/async" && run_ok "heat2d sync" 2 "$case" --out "$work/sync" --set output.checkpoint_async=false; then
  grep -q '"async": true' "$work/async/report.json" && grep -q '"async": false' "$work/sync/report.json" &&
    pass "report.json: checkpoints async true / false" || { grep -A3 checkpoints "$work/async/report.json"; failure "report.json checkpoints.async"; }
  for s in 3 6 9; do
    f=checkpoint_0000000$s.h5
    if h5diff -q "$work/async/$f" "$work/sync/$f" /fields /fields >/dev/null 2>&1; then pass "step $s: background = synchronous checkpoint"
    else h5diff -r "$work/async/$f" "$work/sync/$f" /fields /fields 2>&1 | head -5; failure "step $s: background != synchronous"; fi
  done
fi
# a full disk under a background write: checkpoint 6's temporary file leads to /dev/full. The run
# stops at the next checkpoint with a message naming the file, exits non-zero and does not hang;
# latest still names checkpoint 3, from which the run restarts and ends bitwise equal.
# (ranks in turn: the MPI-IO path's handling of a full disk is a separate matter)
full=$work/full
mkdir -p "$full" && ln -s /dev/full "$full/checkpoint_00000006.h5.tmp"
log=$(timeout 120 "$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$full" --set output.io=serial 2>&1); rc=$?
if [ $rc != 0 ] && [ $rc != 124 ] && echo "$log" | grep -q "checkpoint '$full/checkpoint_00000006.h5' was not written (background write)" &&
  echo "$log" | grep -qi "no space left on device"; then pass "full disk in a background write: clear error, rc $rc"
else echo "$log" | grep -v '^step' | tail -5; failure "full disk in a background write: rc $rc"; fi
[ "$(cat "$full/latest")" = checkpoint_00000003.h5 ] && [ ! -e "$full/checkpoint_00000006.h5" ] && [ ! -e "$full/final.h5" ] &&
  pass "full disk: latest still names checkpoint 3, nothing else written" || { ls -l "$full"; failure "full disk: files left"; }
# the run fails in the step loop (the solution blows up) while a checkpoint is being written in
# the background (one every step): the writer is joined, the error is the loop's, no hang
log=$(timeout 120 "$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$work/blowup" --set time.dt=2 \
  --set time.steps=400 --set output.checkpoint_every=1 --set output.keep=1 --set output.monitor_every=1 2>&1); rc=$?
if [ $rc = 2 ] && echo "$log" | grep -q "became non-finite"; then pass "failure beside a background write: exit 2, no hang"
else echo "$log" | grep -v '^step' | tail -3; failure "failure beside a background write: rc $rc"; fi
run_ok "restart after the full disk" 2 "$case" --out "$full" --restart latest &&
  same "restart from checkpoint 3 after the full disk = uninterrupted" "$work/heat2d-ref/final.h5" "$full/final.h5"
# checkpoints of several chunks written rank by rank (io/output_chunks.c): 2400 x 1000 cells
# make 8 chunks of 600 x 500; rcb on 3 ranks gives [0,800)x[0,1000), [800,2400)x[0,500) and
# [800,2400)x[500,1000), so the chunks of x in [0,600) and [1200,2400) lie inside one rank's
# box (built, checksummed and stored by tessera) and those of x in [600,1200) straddle boxes
# (merged through HDF5's filter). The file holds what a 1-rank checkpoint holds, in the same layout, restarts
# bitwise, and a byte flipped near the end of the file (in one of the chunks written last) is
# caught by its checksum.
big=$work/big2d.yaml
cat >"$big" <<'YAML'
model: heat
grid: {cells: [2400, 1000], periodic: [true, false]}
params: {kappa: 0.5}
initial: {u: "sin(2*pi*x)*cos(pi*y) + 0.3*x*y"}
boundary: {ylo: {type: dirichlet, value: "0"}, yhi: {type: neumann, value: "0.1"}}
time: {scheme: euler, dt: auto, steps: 4}
output: {checkpoint_every: 2, keep: 2}
YAML
c=checkpoint_00000002.h5
if run_ok "big2d np1" 1 "$big" --out "$work/big1" &&
  run_ok "big2d np3 rcb, ranks in turn" 3 "$big" --out "$work/big3" --set output.io=serial; then
  boxes=$(python3 -c 'import json, sys
print(" ".join("%d,%d-%d,%d" % tuple(b["lo"] + b["hi"]) for b in json.load(open(sys.argv[1]))["boxes"]))' "$work/big3/report.json")
  [ "$boxes" = "0,0-800,1000 800,0-2400,500 800,500-2400,1000" ] && pass "big2d: rcb boxes on 3 ranks: $boxes" ||
    failure "big2d: rcb boxes $boxes (the chunks this leg means to test depend on them)"
  hdr=$(h5dump -p -H -d /fields/u "$work/big3/$c" 2>&1)
  echo "$hdr" | grep -q "CHUNKED ( 500, 600 )" && echo "$hdr" | grep -q FLETCHER32 &&
    pass "big2d checkpoint: chunks of 500 x 600, Fletcher32" || { echo "$hdr" | head -20; failure "big2d checkpoint layout"; }
  if h5diff -q "$work/big1/$c" "$work/big3/$c" /fields /fields >/dev/null 2>&1; then
    pass "big2d: checkpoint of 3 ranks in turn = checkpoint of 1 rank (all checksums verified)"
  else h5diff -r "$work/big1/$c" "$work/big3/$c" /fields /fields 2>&1 | head -5; failure "big2d: checkpoints differ"; fi
  rm -f "$work/big3/final.h5"
  run_ok "big2d restart on 2 ranks" 2 "$big" --out "$work/big3" --restart "$work/big3/$c" &&
    same "big2d: restart from the 3-rank checkpoint = uninterrupted" "$work/big1/final.h5" "$work/big3/final.h5"
  cp "$work/big3/$c" "$work/big_bad.h5"
  size=$(stat -c %s "$work/big_bad.h5")
  printf '\x55' | dd of="$work/big_bad.h5" bs=1 seek=$((size - 1000000)) conv=notrunc 2>/dev/null
  log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$big" --out "$work/big_badrun" --restart "$work/big_bad.h5" 2>&1); rc=$?
  if [ $rc = 2 ] && echo "$log" | grep -q "checksum error"; then pass "big2d: a byte flipped near the file's end: checksum error, exit 2"
  else echo "$log" | tail -3; failure "big2d: flipped byte: rc $rc"; fi
fi

# 'latest' cannot be updated (a directory of that name): the run stops at the first checkpoint
# saying the file itself was written and how to continue from it, which works
lt=$work/latestdir
mkdir -p "$lt/latest" && : >"$lt/latest/keep"
log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$lt" 2>&1); rc=$?
if [ $rc = 1 ] && echo "$log" | grep -qF "checkpoint '$lt/checkpoint_00000003.h5' was written (background write) but 'latest' could not be pointed at it" &&
  echo "$log" | grep -qF "itself is complete: once the cause is fixed, continue from it with --restart $lt/checkpoint_00000003.h5"; then
  pass "latest not updatable: exit 1, the checkpoint named as written, with how to continue"
else echo "$log" | grep -v '^step' | tail -5; failure "latest not updatable: rc $rc"; fi
run_ok "restart from the checkpoint latest missed" 2 "$case" --out "$work/latestdir2" --restart "$lt/checkpoint_00000003.h5" &&
  same "restart from the checkpoint latest missed = uninterrupted" "$work/heat2d-ref/final.h5" "$work/latestdir2/final.h5"

# a run started over where an earlier run's checkpoints lie is refused, leaving them as they
# were: it replaced latest and kept the earlier run's newer steps over its own (output.keep);
# a final.h5 alone is overwritten (rerunning a case into its directory)
d=$work/heat2d-ref
before=$(ls -l --time-style=+%s.%N "$d" | md5sum)
log=$("$TESSERA_BIN" run "$work/heat2d.yaml" --out "$d" 2>&1); rc=$?
if [ $rc = 2 ] && grep -qF "output directory '$d' holds the checkpoints of an earlier run (latest names checkpoint_00000009.h5): a run started over there would replace latest" <<<"$log" &&
   grep -qF "continue that run with --restart latest, start this one in another directory (--out DIR), or remove them first (rm $d/latest $d/checkpoint_*.h5)" <<<"$log" &&
   [ "$(ls -l --time-style=+%s.%N "$d" | md5sum)" = "$before" ]; then
  pass "a fresh run where checkpoints lie: refused (exit 2), the directory untouched"
else echo "$log" | tail -3; failure "a fresh run where checkpoints lie: rc $rc"; fi
rm "$d"/latest "$d"/checkpoint_*.h5
run_ok "a fresh run over final.h5 alone" 1 "$work/heat2d.yaml" --out "$d" --set output.checkpoint_every=none &&
  same "a fresh run over final.h5 alone: the same result" "$work/heat2d-ckpt/final.h5" "$d/final.h5"

# a case file of over 64 KiB (comments, here): its text, an attribute of every checkpoint, is
# stored whole (dense attribute storage), and the restart reads it back and accepts it
long=$work/long.yaml
{ cat "$work/heat2d.yaml"; for i in $(seq 1 1100); do
    echo "# a long comment line, $i of 1100, to make the case text longer than 64 KiB ......"; done; } >"$long"
if run_ok "long case: checkpoints" 1 "$long" --out "$work/long" &&
   run_ok "long case: restart" 2 "$long" --out "$work/long-r" --restart "$work/long/checkpoint_00000006.h5"; then
  same "long case ($(wc -c <"$long") bytes): restart from 6 = uninterrupted" "$work/long/final.h5" "$work/long-r/final.h5"
fi
finish

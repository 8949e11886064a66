#!/usr/bin/env bash
# time.fuse (deep halos: ghosts fuse x stages x radius deep, one exchange per fuse steps) keeps
# every bit (DESIGN.md principle 2): each bitwise test case, with its own scheme and with forward
# Euler, run with fuse 2, 3 and 4 on 1 to FUSE_RANKS ranks and every partitioner must give the
# bits of the same case exchanging every stage on 1 rank. The layouts rotate over the cases, so
# each fuse meets every rank count, partitioner, model and boundary type; a layout whose boxes
# are thinner than the ghosts is refused, with the largest fuse that fits, and the run falls
# back to fewer ranks. Environment: BACKEND (host; cuda on the GPU machines, label gpu),
# FUSE_RANKS (4; the GPUs there).
set -u
. "$TESSERA_SOURCE/tests/scripts/lib.bash"
. "$TESSERA_SOURCE/tests/gpu/fields.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
backend=${BACKEND:-host}
maxnp=${FUSE_RANKS:-4}
parts=(rcb slabs grid)
cases=("$TESSERA_SOURCE"/tests/cases/bw_*.yaml)
# under the sanitizers (tests/sanitize.sh): four cases, 2D and 3D, every boundary type
[ -n "${TSR_SANITIZED:-}" ] &&
  cases=("$TESSERA_SOURCE"/tests/cases/bw_{heat2d,wave3d,gray_scott2d,ignition3d}.yaml)
i=0
# grid_of NP DIM: an explicit process grid of NP ranks
grid_of() {
  case "$1:$2" in
    2:2) echo "[1,2]" ;; 3:2) echo "[3,1]" ;; 4:2) echo "[2,2]" ;;
    2:3) echo "[1,2,1]" ;; 3:3) echo "[1,1,3]" ;; *) echo "[2,2,1]" ;;
  esac
}
# check_case CASE I: its own scheme with fuse 2 and 3, forward Euler with fuse 4, each on the
# layout that number I + 1, I + 2, ... picks (comparisons on several ranks go to $work/multi)
check_case() {
  local case=$1 i=$2 name dim=2 scheme ref f np p out log rc
  name=$(basename "$case" .yaml)
  grep -q 'cells: \[[0-9]*, [0-9]*, [0-9]*\]' "$case" && dim=3
  for scheme in own euler; do
    set -- --backend "$backend"
    # on GPUs the steps run as CUDA graphs on every rank count (one per place in a block)
    [ "$backend" = cuda ] && set -- "$@" --set gpu.graphs=on
    [ $scheme = euler ] && set -- "$@" --set time.scheme=euler
    ref="$work/$name-$scheme"
    run_ok "$name $scheme np1" 1 "$case" --out "$ref" "$@" || continue
    fuses="2 3"
    [ $scheme = euler ] && fuses="4 6"
    # the sanitizers' four cases: fuse 3 with forward Euler's shallower ghosts, so that it
    # meets several ranks there too
    [ -n "${TSR_SANITIZED:-}" ] && { fuses=2; [ $scheme = euler ] && fuses="3 4"; }
    for f in $fuses; do
      i=$((i + 1))
      np=$((1 + i % maxnp)) p=${parts[$((i % 3))]}
      while :; do
        out="$work/$name-$scheme-f$f-np$np"
        lay=(--set decomposition.partition="$p")
        [ "$p" = grid ] && lay=(--set decomposition.ranks="$(grid_of "$np" $dim)")
        [ "$np" = 1 ] && lay=()
        # no monitor inside a block, so that forward Euler's blocks run as time tiles
        log=$("$MPIEXEC" -n "$np" "$TESSERA_BIN" run "$case" --out "$out" "$@" \
              --set time.fuse=$f --set output.monitor_every=1000 "${lay[@]}" 2>&1)
        rc=$?
        [ $rc = 2 ] && [ "$np" -gt 1 ] && grep -q "time.fuse: $f steps .* use time.fuse: [0-9]* or less" <<<"$log" &&
          { np=$((np - 1)); continue; }
        break
      done
      if [ $rc = 2 ] && grep -q "time.fuse: $f steps .* use time.fuse: [0-9]* or less" <<<"$log" &&
         [ ! -e "$out/final.h5" ]; then
        pass "$name $scheme fuse $f: refused on 1 rank too (a periodic axis thinner than the ghosts)"
      elif [ $rc != 0 ]; then
        echo "$log" | tail -5
        failure "$name $scheme fuse $f np$np ${p}: tessera exited $rc"
      elif same_fields "$ref/final.h5" "$out/final.h5" 0 >/dev/null; then
        pass "$name $scheme fuse $f np$np ${p}: bitwise identical to an exchange every stage on 1 rank"
        [ "$np" -gt 1 ] && echo "$f" >>"$work/multi"
        tiles=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["time_tiles"]["passes"])' "$out/report.json")
        [ "${tiles:-0}" -gt 0 ] && echo "$f $np" >>"$work/tiles"
        [ "${tiles:-0}" -gt 0 ] && [ $scheme = own ] && grep -q 'scheme: ssp_' "$case" &&
          echo "$f $np" >>"$work/ssp"
        [ "${tiles:-0}" -gt 0 ] && [ $scheme = own ] && grep -q 'scheme: rk4' "$case" &&
          echo "$f $np" >>"$work/rk4"
      else
        same_fields "$ref/final.h5" "$out/final.h5" 0
        failure "$name $scheme fuse $f np$np ${p}: final fields differ"
      fi
    done
  done
}
# on GPUs the runs are mostly start-up: several cases at once (spawn, tests/scripts/lib.bash)
for case in "${cases[@]}"; do
  if [ "$backend" = cuda ]; then spawn "$(basename "$case" .yaml)" check_case "$case" $i
  else check_case "$case" $i; fi
  i=$((i + 3))
done
[ "$backend" = cuda ] && gather
# every fuse was compared on several ranks, not only where the layouts fell back to one
want=3
[ "$maxnp" -lt 4 ] && want=2
[ -n "${TSR_SANITIZED:-}" ] && want=1
[ "$maxnp" -lt 2 ] && want=0
for f in 2 3 4; do
  m=$(grep -cx "$f" "$work/multi" 2>/dev/null)
  if [ "${m:-0}" -ge $want ]; then pass "fuse $f: ${m:-0} comparisons on several ranks"
  else failure "fuse $f: only ${m:-0} comparisons on several ranks (want $want)"; fi
done
# time tiles (forward Euler, no time-dependent face value or source: several steps a pass
# over memory) were among those compared, with fuse 4 (passes of 3) and 6 (passes of 5), on
# one rank and on several
want=4
[ -n "${TSR_SANITIZED:-}" ] && want=2
t1=$(grep -c " 1$" "$work/tiles" 2>/dev/null) tn=$(grep -vc " 1$" "$work/tiles" 2>/dev/null)
[ "$maxnp" -lt 2 ] && tn=$want
if [ "${t1:-0}" -ge 1 ] && [ "${tn:-0}" -ge 1 ] && [ $(( ${t1:-0} + ${tn:-0} )) -ge $want ]; then
  pass "time tiles: ${t1:-0} runs on 1 rank and ${tn:-0} on several took passes of several steps"
else failure "time tiles: ${t1:-0} runs on 1 rank and ${tn:-0} on several took passes (want $want)"; fi
# the SSP schemes' passes (a step's stages as levels of a pass, the base kept on chip) were
# among them too: bw_wave3d and bw_advection_diffusion3d (SSP-RK3) on every backend, the SSP-RK2
# cases on CPU ranks
# took_passes NAME FILE: FILE's lines "fuse ranks" name runs that took passes; at least one on
# 1 rank and one on several (where FUSE_RANKS allows several)
took_passes() {
  local r1 rn several
  r1=$(grep -c " 1$" "$2" 2>/dev/null) rn=$(grep -vc " 1$" "$2" 2>/dev/null)
  several="${rn:-0} on several"
  [ "$maxnp" -lt 2 ] && rn=1 several="none on several (FUSE_RANKS $maxnp)"
  if [ "${r1:-0}" -ge 1 ] && [ "${rn:-0}" -ge 1 ]; then
    pass "$1 time tiles: ${r1:-0} runs on 1 rank and $several took passes"
  else failure "$1 time tiles: ${r1:-0} runs on 1 rank and ${rn:-0} on several took passes (want 1 each)"; fi
}
took_passes SSP "$work/ssp"
# single precision (float32 fields, double arithmetic): 2D passes on both backends (GPUs since
# session 22: passes of 3 for every model) keep the bits of fuse 1 on 1 rank: fuse 3 where
# nothing is exchanged (a pass a block), fuse 4 (a step and a pass of 3) on 1 rank with a
# periodic axis and on several; faces and sources made constant in t, so that passes run
np=$((maxnp < 2 ? 1 : 2))
set -f # the expressions below hold '*'
for run in "bw_advection_diffusion2d 3:1 boundary.default.value=0.1" \
           "bw_heat2d 4:1 4:$np source.u=a*sin(x)*y boundary.ylo.value=a*cos(pi*x) boundary.yhi.value=x" \
           "bw_gray_scott2d 4:1 4:$np"; do
  read -r name lays <<<"$run"
  sp=(--backend "$backend" --set precision=single --set time.scheme=euler --set output.monitor_every=1000)
  [ "$backend" = cuda ] && sp+=(--set gpu.graphs=on)
  for w in $lays; do [[ $w == *=* ]] && sp+=(--set "$w"); done
  case=$TESSERA_SOURCE/tests/cases/$name.yaml ref=$work/$name-single
  run_ok "$name single fuse 1" 1 "$case" --out "$ref" "${sp[@]}" || continue
  for fk in $lays; do
    [[ $fk == *=* ]] && continue
    f=${fk%%:*} k=${fk#*:} out=$work/$name-single-$f-$k
    run_ok "$name single fuse $f np$k" "$k" "$case" --out "$out" "${sp[@]}" --set time.fuse=$f || continue
    tiles=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["time_tiles"]["passes"])' "$out/report.json")
    if same_fields "$ref/final.h5" "$out/final.h5" 0 >/dev/null && [ "${tiles:-0}" -gt 0 ]; then
      pass "$name single fuse $f np$k: $tiles passes, bitwise identical to fuse 1"
    else
      same_fields "$ref/final.h5" "$out/final.h5" 0
      failure "$name single fuse $f np$k: final fields differ or no pass ran (${tiles:-no} passes)"
    fi
  done
done
set +f
# RK4's passes (a step's four stages as levels, the base and the running sum acc kept on chip;
# one step a pass): bw_allen_cahn3d and bw_ignition3d above, whose faces do not depend on t
# (CPU ranks: 3D fp64; GPUs: Allen-Cahn, not ignition); and 2D, bw_heat2d with its faces and
# source made constant in t and twice the cells along y (boxes of 2 ranks as wide as fuse 3's
# 12 ghosts), fp64 and fp32 (acc rounded to float after each stage, as the stage-by-stage path
# stores it), fuse 3 on 1 rank (a periodic axis: a step that exchanges, then passes of one
# step) and on 2: each the bits of fuse 1
set -f # the expressions below hold '*'
for prec in double single; do
  rk=(--backend "$backend" --set precision=$prec --set output.monitor_every=1000
      --set "grid.cells=[23,34]" --set "source.u=a*sin(x)*y"
      --set "boundary.ylo.value=a*cos(pi*x)" --set boundary.yhi.value=x)
  case=$TESSERA_SOURCE/tests/cases/bw_heat2d.yaml ref=$work/rk4-$prec
  run_ok "bw_heat2d rk4 $prec fuse 1" 1 "$case" --out "$ref" "${rk[@]}" || continue
  for k in 1 $([ "$np" -gt 1 ] && echo "$np"); do
    out=$work/rk4-$prec-$k lay=()
    [ "$k" -gt 1 ] && lay=(--set "decomposition.ranks=[1,$k]")
    run_ok "bw_heat2d rk4 $prec fuse 3 np$k" "$k" "$case" --out "$out" "${rk[@]}" "${lay[@]}" \
      --set time.fuse=3 || continue
    tiles=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["time_tiles"]["passes"])' "$out/report.json")
    if same_fields "$ref/final.h5" "$out/final.h5" 0 >/dev/null && [ "${tiles:-0}" -gt 0 ]; then
      pass "bw_heat2d rk4 $prec fuse 3 np$k: $tiles passes, bitwise identical to fuse 1"
      echo "3 $k" >>"$work/rk4"
    else
      same_fields "$ref/final.h5" "$out/final.h5" 0
      failure "bw_heat2d rk4 $prec fuse 3 np$k: final fields differ or no pass ran (${tiles:-no} passes)"
    fi
  done
done
set +f
took_passes RK4 "$work/rk4"
# 3D fp32 one-step passes of SSP-RK2 and SSP-RK3 (GPUs: since session 30 the levels sit on chip
# in double, and both pay; CPU ranks step 3D fp32 stage by stage): fuse 2 on 1 rank, where
# nothing is exchanged every step a pass, the bits of fuse 1
for scheme in ssp_rk2 ssp_rk3; do
  s3=(--backend "$backend" --set precision=single --set time.scheme=$scheme
      --set output.monitor_every=1000)
  case=$TESSERA_SOURCE/tests/cases/bw_heat3d.yaml ref=$work/s3-$scheme-1 out=$work/s3-$scheme-2
  run_ok "bw_heat3d $scheme single fuse 1" 1 "$case" --out "$ref" "${s3[@]}" || continue
  run_ok "bw_heat3d $scheme single fuse 2" 1 "$case" --out "$out" "${s3[@]}" --set time.fuse=2 ||
    continue
  tiles=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["time_tiles"]["passes"])' "$out/report.json")
  want=0
  [ "$backend" = cuda ] && want=1
  if same_fields "$ref/final.h5" "$out/final.h5" 0 >/dev/null && [ "${tiles:-0}" -ge $want ]; then
    pass "bw_heat3d $scheme single fuse 2: ${tiles:-0} passes, bitwise identical to fuse 1"
  else
    same_fields "$ref/final.h5" "$out/final.h5" 0
    failure "bw_heat3d $scheme single fuse 2: final fields differ or no pass ran on GPUs (${tiles:-no} passes)"
  fi
done
# outputs inside a block land on their steps: snapshots every 4 steps and checkpoints every 6
# with fuse 5 on 2 ranks (forward Euler: blocks of time tiles that end at them) hold the bits of
# those of fuse 1 on 1 rank; a restart from the fused
# run's checkpoint at step 6 with fuse 3 ends with the same bits; a rebalancing run (a slowed
# rank, decisions every 5 steps, so blocks end there) too
case=$TESSERA_SOURCE/tests/cases/bw_heat3d.yaml
io=(--backend "$backend" --set output.snapshot_every=4 --set output.checkpoint_every=6
    --set output.keep=10 --set output.monitor_every=1000)
[ "$backend" = cuda ] && io+=(--set gpu.graphs=on)
if run_ok "outputs fuse 1" 1 "$case" --out "$work/io1" "${io[@]}" &&
   run_ok "outputs fuse 5" $np "$case" --out "$work/io4" "${io[@]}" --set time.fuse=5; then
  ok=1 n=0
  for f in "$work"/io1/snapshot_*.h5 "$work"/io1/checkpoint_*.h5; do
    n=$((n + 1))
    same_fields "$f" "$work/io4/$(basename "$f")" 0 >/dev/null || { ok=0; echo "  differs: $(basename "$f")"; }
  done
  # (where a backend has no time tiles for the case, max_steps is 0: it steps stage by stage)
  [ $ok = 1 ] && [ $n -ge 5 ] && grep -Eq '"(passes": *[1-9]|max_steps": 0)' "$work/io4/report.json" &&
    pass "outputs fuse 5 np$np: $n snapshots and checkpoints identical to fuse 1, with time tiles" ||
    failure "outputs fuse 5 np$np: snapshots or checkpoints differ from fuse 1 ($n files), or no time tile"
  ck=$(ls "$work"/io4/checkpoint_*6.h5 2>/dev/null | head -1)
  if [ -n "$ck" ] && run_ok "restart fuse 3" $np "$case" --out "$work/io3" --backend "$backend" \
       --restart "$ck" --set time.fuse=3; then
    same_fields "$work/io1/final.h5" "$work/io3/final.h5" 0 >/dev/null &&
      pass "restart at step 6 with fuse 3: the uninterrupted run's bits" ||
      failure "restart at step 6 with fuse 3: final fields differ"
  else failure "restart fuse 3: no checkpoint at step 6 or the run failed"; fi
fi
if [ "$np" = 2 ]; then
  rb=(--backend "$backend" --set rebalance.every=5 --set rebalance.window=2 --set rebalance.threshold=0.01
      --set "debug.slowdown={rank: 1, factor: 3, steps: [1, 100]}")
  if run_ok "rebalance fuse 2" 2 "$case" --out "$work/rb2" "${rb[@]}" --set time.fuse=2; then
    grep -q '"migrations": *[1-9]' "$work/rb2/report.json" &&
      same_fields "$work/io1/final.h5" "$work/rb2/final.h5" 0 >/dev/null &&
      pass "rebalancing with fuse 2: the bits of fuse 1 on 1 rank" ||
      failure "rebalancing with fuse 2: final fields differ, or no migration"
  fi
fi
# time.fuse: auto measures 1, 2, 4, 8 (those that fit) on the run's first steps, with their
# time tiles (forward Euler, a source that does not depend on t: 4 and 8 take passes), and goes
# on with the fastest: the same bits, and report.json says what it measured and chose
cat >"$work/auto.yaml" <<YAML
model: heat
grid: {cells: [24, 24, 24], periodic: [true, true, true]}
params: {kappa: 1.0}
initial: {u: "sin(2*pi*x)*sin(2*pi*y)*cos(2*pi*z)"}
source: {u: "x"}
time: {scheme: euler, dt: auto, steps: 300}
backend: $backend
output: {progress: none}
YAML
# check_auto REPORT CANDIDATES GHOST: fuse_auto measured CANDIDATES, every one but fuse 1 with
# passes of time tiles where the backend has them for the case (max_steps), and chose one
check_auto() {
  python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
a, want, tiles = r["fuse_auto"], json.loads(sys.argv[2]), r["time_tiles"]["max_steps"] >= 3
passes = [(p > 0) == (tiles and s in (3, 4, 5, 7, 8)) for s, p in zip(a["candidates"], a["passes"])]
ok = a["candidates"] == want and len(a["seconds_per_step"]) == len(want) and \
     all(t > 0 for t in a["seconds_per_step"]) and a["chosen"] in a["candidates"] and \
     all(passes) and len(passes) == len(want) and r["fuse"] == a["chosen"] and \
     r["ghost_width"] == int(sys.argv[3]) and "measured" in a["why"]
print("  fuse_auto:", a)
sys.exit(0 if ok else 1)
PY
}
# on one rank without periodic axes nothing is exchanged: the odd fuses up to the longest pass
# (this 3D fp64 case: 1, 3, 5 on CPU ranks, 1, 3 on GPUs), each block one pass
auto_np1=(--set grid.periodic=[false,false,false] --set time.steps=400)
want1="[1, 3, 5]"
[ "$backend" = cuda ] && want1="[1, 3]"
if run_ok "auto ref" 1 "$work/auto.yaml" --out "$work/auto1" &&
   run_ok "auto np$np" $np "$work/auto.yaml" --out "$work/auto2" --set time.fuse=auto; then
  same_fields "$work/auto1/final.h5" "$work/auto2/final.h5" 0 >/dev/null &&
    pass "auto np$np: the bits of fuse 1" || failure "auto np$np: final fields differ"
  check_auto "$work/auto2/report.json" "[1, 2, 4, 8]" 8 &&
    pass "auto np$np: report.json says what it measured (4 and 8 with time tiles) and chose" ||
    failure "auto np$np: report.json's fuse_auto"
fi
if run_ok "auto ref, no exchange" 1 "$work/auto.yaml" --out "$work/auto3" "${auto_np1[@]}" &&
   run_ok "auto, no exchange" 1 "$work/auto.yaml" --out "$work/auto4" "${auto_np1[@]}" --set time.fuse=auto; then
  same_fields "$work/auto3/final.h5" "$work/auto4/final.h5" 0 >/dev/null &&
    pass "auto without exchanges: the bits of fuse 1" || failure "auto without exchanges: final fields differ"
  check_auto "$work/auto4/report.json" "$want1" 1 &&
    pass "auto without exchanges: measured $want1, each above 1 in passes" ||
    failure "auto without exchanges: report.json's fuse_auto"
fi
# SSP-RK3 without exchanges: a pass is one step (its three stages), so fuse 1 takes none and
# fuse 2 two a block; auto measures those two, and the bits are fuse 1's
if run_ok "auto ssp_rk3 ref, no exchange" 1 "$work/auto.yaml" --out "$work/auto5" "${auto_np1[@]}" \
     --set time.scheme=ssp_rk3 &&
   run_ok "auto ssp_rk3, no exchange" 1 "$work/auto.yaml" --out "$work/auto6" "${auto_np1[@]}" \
     --set time.scheme=ssp_rk3 --set time.fuse=auto; then
  same_fields "$work/auto5/final.h5" "$work/auto6/final.h5" 0 >/dev/null &&
    python3 - "$work/auto6/report.json" <<'PY' &&
import json, sys
r = json.load(open(sys.argv[1]))
a = r["fuse_auto"]
print("  fuse_auto:", a)
sys.exit(0 if a["candidates"] == [1, 2] and a["passes"][0] == 0 and a["passes"][1] > 0 else 1)
PY
    pass "auto ssp_rk3 without exchanges: measured fuse 1 and 2 (passes of one step), fuse 1's bits" ||
    failure "auto ssp_rk3 without exchanges: final fields differ or report.json's fuse_auto"
fi
for why in "no face of any box is exchanged and no time tiles (the source depends on t):1:--set grid.periodic=[false,false,false] --set source.u=sin(t)" \
           "too few steps to measure:$np:--set time.steps=40"; do
  IFS=: read -r want k opt <<<"$why"
  if run_ok "auto: $want" "$k" "$work/auto.yaml" --out "$work/auto-$k" --set time.fuse=auto $opt &&
     grep -qF "\"why\": \"$want" "$work/auto-$k/report.json" && grep -q '"fuse": 1,' "$work/auto-$k/report.json"; then
    pass "auto: fuse 1 where $want"
  else failure "auto: expected fuse 1 with the reason '$want'"; fi
done
# the refusal: boxes thinner than the ghosts, with the largest fuse that fits
case=$TESSERA_SOURCE/tests/cases/bw_heat2d.yaml
if [ "$maxnp" -ge 2 ]; then
  log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$work/thin" --backend "$backend" \
        --set time.fuse=3 --set decomposition.ranks="[1,2]" 2>&1)
  rc=$?
  if [ $rc = 2 ] && grep -q "bw_heat2d.yaml: time.fuse: 3 steps of rk4 need ghosts 12 cells deep, but the box of rank [01] is 8 cells wide along y; use time.fuse: 2 or less" <<<"$log" &&
     [ ! -e "$work/thin/final.h5" ]; then
    pass "thin boxes: refused with the largest fuse that fits"
  else
    echo "$log" | tail -3
    failure "thin boxes: exit $rc, expected 2 with the message naming time.fuse: 2"
  fi
fi
finish

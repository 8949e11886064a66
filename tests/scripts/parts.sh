#!/usr/bin/env bash
# Checkpoints in parts (output.io: parts, which auto takes on several ranks where HDF5 is
# serial): each rank writes its box into a part file of its own at the same time, and
# checkpoint_<step>.h5 maps the parts with virtual datasets over the whole grid. Checks: the
# layout (one mapping per rank, each part an ordinary chunked Fletcher32 fields file naming its
# checkpoint); the values equal a one-file checkpoint of the same step, read by h5diff from
# another directory; `keep` removes a checkpoint's parts with it; restarts on 1, 2 and 4 ranks
# end bitwise equal to an uninterrupted run; a missing part, a part of another checkpoint and
# a flipped byte in a part are each refused (exit 2) with a message naming the part, and
# `latest` falls back past them; kind=corrupt fault injection damages a part.
set -u
. "$(dirname "$0")/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/h.yaml" <<'YAML'
model: heat
grid: {cells: [20, 18, 16], periodic: [true, false, false]}
params: {kappa: 0.7}
initial: {u: "sin(pi*x)*cos(0.5*pi*y)*z"}
source: {u: "0.3*sin(t + x)*y"}
boundary: {default: {type: dirichlet, value: 0}}
time: {scheme: rk4, dt: auto, steps: 12}
output: {checkpoint_every: 3, keep: 2}
YAML
case=$work/h.yaml
same() { # same LABEL A B: fields bitwise equal
  if h5diff -q "$2" "$3" /fields /fields >/dev/null 2>&1; then pass "$1"
  else h5diff -r "$2" "$3" /fields /fields 2>&1 | head -5; failure "$1"; fi
}
refused() { # refused LABEL MESSAGE NP ARGS...: exit 2 and the message
  local label=$1 msg=$2 np=$3 log rc
  shift 3
  log=$("$MPIEXEC" -n "$np" "$TESSERA_BIN" run "$case" "$@" 2>&1); rc=$?
  if [ $rc = 2 ] && echo "$log" | grep -qF -- "$msg"; then pass "$label: exit 2, $msg"
  else echo "$log" | grep -v '^ *$' | tail -5; failure "$label: rc $rc"; fi
}
run_ok "uninterrupted np1" 1 "$case" --out "$work/ref" --set output.keep=4 || { finish; exit 1; }
out=$work/p
run_ok "np3 in parts" 3 "$case" --out "$out" --set output.io=parts || { finish; exit 1; }
same "parts run = uninterrupted run" "$work/ref/final.h5" "$out/final.h5"

# files: checkpoints 6 and 9 with three parts each; 3's parts went with it
want="checkpoint_00000006.h5 checkpoint_00000006.part0000.h5 checkpoint_00000006.part0001.h5"
want="$want checkpoint_00000006.part0002.h5 checkpoint_00000009.h5 checkpoint_00000009.part0000.h5"
want="$want checkpoint_00000009.part0001.h5 checkpoint_00000009.part0002.h5"
have=$(ls "$out" | grep '^checkpoint_' | paste -sd' ' -)
[ "$have" = "$want" ] && [ "$(cat "$out/latest")" = checkpoint_00000009.h5 ] &&
  pass "keep 2: checkpoints 6 and 9 with their parts, 3's parts removed" || failure "files: $have"

# layout: a virtual dataset over the grid with a mapping per rank; the parts are checksummed
c9=$out/checkpoint_00000009.h5
hdr=$(h5dump -p -H -d /fields/u "$c9" 2>&1)
echo "$hdr" | grep -q "DATASPACE  SIMPLE { ( 16, 18, 20 )" && [ "$(echo "$hdr" | grep -c 'MAPPING [0-9]')" = 3 ] &&
  echo "$hdr" | grep -q 'FILE "checkpoint_00000009.part0002.h5"' &&
  pass "checkpoint /fields/u: virtual [16][18][20], three parts" || { echo "$hdr" | head -30; failure "virtual layout"; }
attrs=$(h5dump -A -H "$c9" | grep -o 'ATTRIBUTE "[a-z_]*"' | tr -d '"' | awk '{print $2}' | sort | paste -sd' ' -)
[ "$attrs" = "boxes case_hash case_text cells dt hi lo parts parts_id rebalance_counts rebalance_seconds step tessera_version time" ] &&
  pass "checkpoint attributes: $attrs" || failure "checkpoint attributes: $attrs"
# boxes: the three ranks' boxes, which tile the grid (cells 20 x 18 x 16 = 5760)
cells=$(h5dump -a /boxes "$c9" | sed -n '/DATA {/,/}/p' | sed 's/([0-9]*)://g' | tr -d ',' |
  awk '{for (i = 1; i <= NF; ++i) if ($i ~ /^[0-9]+$/) v[n++] = $i}
    END {if (n != 18) {print "n=" n; exit}
         for (b = 0; b < 18; b += 6) t += (v[b+3] - v[b]) * (v[b+4] - v[b+1]) * (v[b+5] - v[b+2]); print t}')
[ "$cells" = 5760 ] && pass "boxes: three ranks' boxes covering 5760 cells" ||
  { h5dump -a /boxes "$c9" | head -20; failure "boxes attribute: $cells"; }
phdr=$(h5dump -p -H -A "$out/checkpoint_00000009.part0001.h5" 2>&1)
echo "$phdr" | grep -q CHUNKED && echo "$phdr" | grep -q FLETCHER32 &&
  echo "$phdr" | grep -q '"checkpoint_00000009.h5"' &&
  pass "part: chunked, Fletcher32, part_of names its checkpoint" || { echo "$phdr" | head -30; failure "part layout"; }
# HDF5 itself finds the parts beside the file, from any directory
(cd / && h5diff -q "$work/ref/checkpoint_00000009.h5" "$c9" /fields /fields) >/dev/null 2>&1 &&
  pass "h5diff (from /): the parts' values = a one-file checkpoint's" || failure "h5diff of the parts"

for leg in 1:rcb 2:slabs 4:rcb; do
  IFS=: read -r np part <<<"$leg"
  rm -f "$out/final.h5"
  run_ok "restart np$np" "$np" "$case" --out "$out" --restart latest --set decomposition.partition=$part &&
    same "restart from parts on $np ranks ($part) = uninterrupted" "$work/ref/final.h5" "$out/final.h5"
done

# damage: each refused by name, and latest falls back to 6
bad=$work/bad
mk() { rm -rf "$bad" && cp -r "$out" "$bad" && rm -f "$bad/final.h5"; }
mk && rm "$bad/checkpoint_00000009.part0001.h5"
refused "missing part" "its part '$bad/checkpoint_00000009.part0001.h5' cannot be read" 2 --out "$work/x" --restart "$bad/checkpoint_00000009.h5"
if log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$bad" --restart latest 2>&1) &&
  echo "$log" | grep -qF "using the older '$bad/checkpoint_00000006.h5'"; then
  same "missing part: latest falls back to 6, = uninterrupted" "$work/ref/final.h5" "$bad/final.h5"
else echo "$log" | tail -5; failure "missing part: latest fallback"; fi
mk && cp "$bad/checkpoint_00000006.part0002.h5" "$bad/checkpoint_00000009.part0002.h5"
refused "part of another checkpoint" "its part '$bad/checkpoint_00000009.part0002.h5' belongs to another write" 1 --out "$work/x" --restart "$bad/checkpoint_00000009.h5"
mk && p=$bad/checkpoint_00000009.part0000.h5 && size=$(stat -c %s "$p") &&
  printf '\x55\x55\x55\x55\x55\x55\x55\x55' | dd of="$p" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
refused "flipped byte in a part" "checksum error" 3 --out "$work/x" --restart "$bad/checkpoint_00000009.h5"
[ ! -e "$work/x" ] && pass "refusals leave no output directory" || failure "refusals left $work/x"

# --inject-fault kind=corrupt reaches the data of a checkpoint in parts
f=$work/f
log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$f" --set output.io=parts --inject-fault rank=1,step=6,kind=corrupt 2>&1)
if log=$("$MPIEXEC" -n 2 "$TESSERA_BIN" run "$case" --out "$f" --restart latest 2>&1) &&
  echo "$log" | grep -q "checkpoint_00000006.h5': checksum error" &&
  echo "$log" | grep -qF "using the older '$f/checkpoint_00000003.h5'"; then
  same "kind=corrupt on parts: checksum error, latest falls back to 3" "$work/ref/final.h5" "$f/final.h5"
else echo "$log" | tail -5; failure "kind=corrupt on parts"; fi
finish

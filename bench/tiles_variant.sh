#!/usr/bin/env bash
# bench/gpu_tiles with the time-tile kernels rebuilt under other macros (kernels/steps2_cuda.cuh,
# kernels/steps3_cuda.cuh: TSR_STEPS_*, TSR_STEPS3_*), without rebuilding the library: the four
# parts kernels/steps{2,3}_{f32,f64}_cuda.cu are compiled with FLAGS by the build's own
# commands and linked ahead of libtessera_core.a, whose own parts the linker then leaves out.
# Variants side by side in one job cost a minute each instead of a whole build.
#   usage: bench/tiles_variant.sh BUILD_DIR NAME "FLAGS"   ->  BUILD_DIR/bench/gpu_tiles_NAME
#   e.g.   bench/tiles_variant.sh build-gpu ahead2 "-DTSR_STEPS3_AHEAD=2"
set -eu
[ $# -eq 3 ] || { echo "usage: $0 BUILD_DIR NAME \"FLAGS\"" >&2; exit 2; }
b=$1 name=$2 flags=$3
case $name in *[!A-Za-z0-9_]*|'') echo "$0: NAME '$name': letters, digits and _ only" >&2; exit 2;; esac
cd "$b"
flock .tiles_variant.lock ninja bench/gpu_tiles >/dev/null # variants may be built side by side
dir=variants/$name
rm -rf "$dir" && mkdir -p "$dir"
cmds=$(ninja -t commands bench/gpu_tiles)
parts=$(grep -E -- '-c [^ ]*kernels/steps[23]_f(32|64)_cuda\.cu ' <<<"$cmds") || true
[ "$(grep -c . <<<"$parts")" = 4 ] || { echo "$0: the build's commands for the four steps parts were not found" >&2; exit 1; }
pids=
while read -r c; do
  c=$(sed -E "s# -MD -MT [^ ]+ -MF [^ ]+##; s#-o CMakeFiles/tessera_core.dir/kernels/([^ ]+)#$flags -o $dir/\1#" <<<"$c")
  bash -c "$c" & pids="$pids $!"
done <<<"$parts"
for p in $pids; do wait "$p"; done
link=$(grep -E -- '-o bench/gpu_tiles ' <<<"$cmds")
link=$(sed -E "s#(gpu_tiles_cuda\.c\.o) -o bench/gpu_tiles #\1 $dir/*.o -o bench/gpu_tiles_$name #" <<<"$link")
bash -c "$link"
echo "$b/bench/gpu_tiles_$name: the time-tile kernels built with $flags"

#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan + libFuzzer) in DIR from only the io/
# sources they need, writes their seed corpora (make_seeds.py) and runs each for SECONDS.
#   tests/fuzz/run.sh SOURCE_DIR DIR [SECONDS (default 30)] [TARGET...]
# Exits non-zero when clang cannot build them or a fuzzer finds a crash, leak, hang (an input
# that runs over 10 s) or failed check; the input that found it is
# DIR/findings/<target>-crash-<sha1> (-leak-, -timeout-, -oom-), and `DIR/fuzz_<target> FILE`
# replays it. New inputs found are kept in DIR/corpus/ across runs. <target>.dict: the tokens
# of case files and expressions, which mutations insert.
set -euo pipefail
src=$(cd "$1" && pwd) dir=$2 seconds=${3:-30}
shift $(($# < 3 ? $# : 3))
targets=(case expr)
[ $# -eq 0 ] || targets=("$@")
cc=${TESSERA_FUZZ_CC:-clang}
if ! command -v "$cc" >/dev/null; then
  echo "fuzz: $cc not found; scripts/setup.sh installs clang and libclang-rt-14-dev" \
       "(or configure with -DTESSERA_FUZZ=OFF)" >&2
  exit 1
fi
mkdir -p "$dir/obj" "$dir/findings" "$dir/corpus"
dir=$(cd "$dir" && pwd)
# the reader's and the expressions' sources and the models' table: nothing needs MPI, HDF5, CUDA
lib="io/case.c io/case_sections.c io/case_pinn.c io/case_implicit.c io/case_parareal.c io/case_validate.c
     io/case_expr.c io/case_diff.c io/yamltree.c io/expr.c io/error.c io/text.c kernels/models.c"
flags="-g -O1 -fno-omit-frame-pointer -ffp-contract=off -fsanitize=address,undefined
       -fno-sanitize-recover=undefined -I$src $(pkg-config --cflags yaml-0.1 muparser)"
libs="$(pkg-config --libs yaml-0.1 muparser) -lm"
objs=()
running=()
for f in $lib; do
  objs+=("$dir/obj/${f//\//_}.o")
  # shellcheck disable=SC2086
  "$cc" $flags -std=c11 -fsanitize=fuzzer-no-link -c "$src/$f" -o "${objs[-1]}" &
  running+=($!)
  if [ ${#running[@]} -eq 2 ]; then # two at a time: CI has 2 cores
    wait "${running[0]}" && wait "${running[1]}"
    running=()
  fi
done
for p in "${running[@]}"; do wait "$p"; done
for t in case expr; do
  # shellcheck disable=SC2086
  "$cc" $flags -std=c11 -fsanitize=fuzzer "$src/tests/fuzz/fuzz_$t.c" "${objs[@]}" $libs \
    -o "$dir/fuzz_$t"
done
python3 "$src/tests/fuzz/make_seeds.py" "$src" "$dir/seeds"

status=0
for t in "${targets[@]}"; do
  mkdir -p "$dir/corpus/$t"
  echo "fuzz: fuzz_$t for $seconds s"
  # one process (2 shared cores); a single input over 10 s is a hang; leaks are findings
  if ! "$dir/fuzz_$t" "$dir/corpus/$t" "$dir/seeds/$t" -max_total_time="$seconds" -timeout=10 \
       -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 -dict="$src/tests/fuzz/$t.dict" \
       -artifact_prefix="$dir/findings/$t-" 2>"$dir/fuzz_$t.log"; then
    status=1
    echo "fuzz: fuzz_$t FOUND A PROBLEM:" >&2
    grep -aE "ERROR|fuzz_(case|expr):|SUMMARY|Test unit written|#0 |#1 |#2 |#3 " \
      "$dir/fuzz_$t.log" | head -30 >&2
  fi
  grep -aE "stat::number_of_executed_units|stat::peak_rss|INITED|DONE" "$dir/fuzz_$t.log" |
    sed "s/^/fuzz_$t: /"
done
exit $status

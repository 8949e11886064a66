#!/usr/bin/env bash
# Every example case validates, plans for several rank counts, and runs (for a moment: time.end
# is overridden) on 2 ranks, writing final.h5 with one dataset per component of the grid's
# shape, final.xmf and report.json.
set -u
. "$(dirname "$0")/lib.bash"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
petsc=0
"$TESSERA_BIN" info 2>/dev/null | grep -q '^PETSc: *[0-9]' && petsc=1
for case in "$TESSERA_SOURCE"/cases/*.yaml; do
  name=$(basename "$case" .yaml)
  if ! head -1 "$case" | grep -q "^# $name:"; then failure "$name: first line does not say what it shows"; fi
  # method implicit needs PETSc: a build without it validates and plans the case only
  if [ $petsc = 0 ] && grep -q '^method: implicit' "$case"; then
    "$TESSERA_BIN" check "$case" --ranks 2 >/dev/null 2>&1 && pass "$name: check (no PETSc here)" ||
      failure "$name: check"
    continue
  fi
  if grep -q '^method: pinn' "$case"; then
    # PINN cases: one rank; a few iterations on a coarse grid (the grid's cell count alone)
    if "$TESSERA_BIN" check "$case" --ranks 1 >"$work/check.txt" 2>&1 &&
       grep -q 'parameters' "$work/check.txt"; then
      pass "$name: check lists the network"
    else
      cat "$work/check.txt"; failure "$name: check"
    fi
    out="$work/$name"
    # on 2 ranks: one network per box (with L-BFGS too: each rank its own)
    if "$TESSERA_BIN" check "$case" --ranks 2 >"$work/check2.txt" 2>&1 &&
       [ "$(grep -c '^rank [01]: cells' "$work/check2.txt")" = 2 ]; then
      pass "$name: check --ranks 2 lists both ranks' boxes"
    else
      cat "$work/check2.txt"; failure "$name: check --ranks 2"
    fi
    run_ok "$name" 1 "$case" --out "$out" --set pinn.adam.iterations=20 --set pinn.log_every=10 \
      --set pinn.points.interior=64 --set pinn.points.resample_every=0 \
      --set pinn.lbfgs.iterations=0 || continue
    for f in final.h5 final.xmf report.json history.csv; do
      [ -s "$out/$f" ] || failure "$name: no $f"
    done
    [ "$(wc -l <"$out/history.csv")" -eq 3 ] && pass "$name: history.csv has 2 rows" ||
      failure "$name: history.csv rows: $(cat "$out/history.csv")"
    continue
  fi
  for np in 1 7 16; do
    if "$TESSERA_BIN" check "$case" --ranks "$np" >"$work/check.txt" 2>&1 &&
       [ "$(grep -c '^ *[0-9]\+  \[' "$work/check.txt")" -eq "$np" ]; then
      pass "$name: check --ranks $np lists $np boxes"
    else
      cat "$work/check.txt"; failure "$name: check --ranks $np"
    fi
  done
  out="$work/$name"
  run_ok "$name" 2 "$case" --out "$out" --set time.end=1e-6 || continue
  for f in final.h5 final.xmf report.json; do
    [ -s "$out/$f" ] || failure "$name: no $f"
  done
  # dataset shape is the grid's cells, slowest axis first
  cells=$(grep -o 'cells: \[[0-9, ]*\]' "$case" | head -1 | tr -cd '0-9,' | awk -F, '{for (i = NF; i > 0; --i) printf "%s%s", $i, (i > 1 ? ", " : "")}')
  shape_ok=1
  for ds in $(h5ls -r "$out/final.h5" | awk '$1 ~ /^\/fields\// {print $1}'); do
    h5ls "$out/final.h5$ds" | grep -q "{$cells}" || shape_ok=0
  done
  nds=$(h5ls -r "$out/final.h5" | grep -c '^/fields/')
  if [ "$shape_ok" = 1 ] && [ "$nds" -ge 1 ] && grep -q 'final.h5:/fields/' "$out/final.xmf"; then
    pass "$name: ran on 2 ranks; $nds field(s) of shape {$cells}; XDMF points at them"
  else
    h5ls -r "$out/final.h5"; failure "$name: output layout (want {$cells})"
  fi
done
finish

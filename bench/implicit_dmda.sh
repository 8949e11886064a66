#!/usr/bin/env bash
# Method implicit against PETSc's own structured-grid path (issue 19, Speed): tessera's
# cases/implicit_heat3d.yaml (3D heat, BDF2 at dt 1.6e-2, CG + GAMG, ksp_rtol 1e-8) and
# bench/implicit_dmda.c (the same problem, boundary, initial condition, TS, KSP and PC options
# on a DMDA) on the same ranks, at 64^3 and 128^3 (SIZES="64 128 256" adds 256^3): the time per
# step of each (the TSSolve time over the steps, the better of REPEAT runs), their ratio (goal:
# tessera <= 1.1 x DMDA), linear iterations per step (how they grow with the grid), and the
# errors against the exact solution (the two must agree: the same discretisation). Then, at
# EXPLICIT_N^3 (64), time to solution against tessera's explicit SSP-RK3 at its stability limit,
# with the implicit step at 100 x that limit.
#
#   bench/implicit_dmda.sh [BUILD_DIR]     (default build-host; RANKS=2 SIZES="64 128" REPEAT=2
#                                           EXPLICIT_N=64, 0 skips it; PC=gamg, or hypre)
# Prints a table and one JSON line per figure; exits non-zero when a run fails or the two
# programs' errors differ by more than 1e-6 relative.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build-host}
tessera=$build/tessera
dmda=$build/bench/implicit_dmda
[ -x "$tessera" ] && [ -x "$dmda" ] || { echo "build $build first (tessera with PETSc)"; exit 2; }
ranks=${RANKS:-2}
sizes=${SIZES:-64 128}
repeat=${REPEAT:-2}
explicit_n=${EXPLICIT_N:-64}
mpi=(mpiexec -n "$ranks")
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# the same KSP and PC on both sides, given to both (tessera's default for heat is CG + GAMG
# too; PC=hypre compares BoomerAMG against BoomerAMG)
opts=(-ksp_type cg -pc_type "${PC:-gamg}" -ksp_rtol 1e-8)
case=$here/cases/implicit_heat3d.yaml
status=0

echo "machine: $(nproc) cores available to this process, load average $(cut -d" " -f1 /proc/loadavg) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $ranks ranks, OMP_NUM_THREADS=$OMP_NUM_THREADS"
printf '%6s %12s %12s %7s %10s %10s %12s %12s\n' N tessera_s/st dmda_s/st ratio tsr_its/st dmda_its/st err_tessera err_dmda
for n in $sizes; do
  best_t= best_d=
  for _ in $(seq "$repeat"); do
    rm -rf "$work/t"
    "${mpi[@]}" "$tessera" run "$case" --out "$work/t" --set "grid.cells=[$n,$n,$n]" \
      --set output.progress=none "${opts[@]}" >"$work/t.log" 2>&1 || { tail -5 "$work/t.log"; exit 1; }
    t=$($py -c "import json,sys; r=json.load(open(sys.argv[1])); i=r['implicit']; print(i['seconds']['ts_solve']/i['steps'], i['linear_iterations_per_step'], r['fields']['u']['error_linf'])" "$work/t/report.json")
    "${mpi[@]}" "$dmda" -n "$n" -dt 1.6e-2 -steps 10 "${opts[@]}" >"$work/d.log" 2>&1 || { tail -5 "$work/d.log"; exit 1; }
    d=$($py -c "import json,sys; r=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); print(r['per_step_s'], r['linear_its_per_step'], r['error_linf'])" "$work/d.log")
    read -r ts tit terr <<<"$t"
    read -r ds dit derr <<<"$d"
    if [ -z "$best_t" ] || $py -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$ts" "$best_t"; then best_t=$ts; fi
    if [ -z "$best_d" ] || $py -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$ds" "$best_d"; then best_d=$ds; fi
  done
  ratio=$($py -c "import sys; print('%.3f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$best_t" "$best_d")
  printf '%6s %12.4f %12.4f %7s %10.2f %10.2f %12.4e %12.4e\n' "$n" "$best_t" "$best_d" "$ratio" "$tit" "$dit" "$terr" "$derr"
  echo "{\"bench\": \"implicit_dmda\", \"n\": $n, \"ranks\": $ranks, \"pc\": \"${PC:-gamg}\", \"tessera_s_per_step\": $best_t, \"dmda_s_per_step\": $best_d, \"ratio\": $ratio, \"tessera_its_per_step\": $tit, \"dmda_its_per_step\": $dit, \"tessera_error_linf\": $terr, \"dmda_error_linf\": $derr}"
  $py -c "import sys; a,b=map(float,sys.argv[1:]); sys.exit(0 if abs(a-b) <= 1e-6*abs(b) else 1)" "$terr" "$derr" ||
    { echo "FAIL: the two programs' errors differ ($terr, $derr): not the same problem"; status=1; }
done

[ "$explicit_n" = 0 ] && exit $status
# time to solution: explicit SSP-RK3 at its stability limit (cfl 0.9) against implicit BDF2 at
# 100 x that limit, to t = 0.16, both against the exact solution
n=$explicit_n
sed '/^method:/d; /^petsc:/d; s/^time: .*/time: {scheme: ssp_rk3, dt: auto, cfl: 0.9, end: 0.16}/' "$case" >"$work/explicit.yaml"
"${mpi[@]}" "$tessera" run "$work/explicit.yaml" --out "$work/e" --set "grid.cells=[$n,$n,$n]" \
  --set output.progress=none >"$work/e.log" 2>&1 || { tail -5 "$work/e.log"; exit 1; }
read -r esteps edt ewall eerr <<<"$($py -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['steps'], r['dt'], r['wall_time'], r['fields']['u']['error_linf'])" "$work/e/report.json")"
idt=$($py -c "import sys; print('%.6g' % (0.16 / round(0.16 / (100 * float(sys.argv[1])))))" "$edt")
"${mpi[@]}" "$tessera" run "$case" --out "$work/i" --set "grid.cells=[$n,$n,$n]" --set time.dt="$idt" \
  --set output.progress=none "${opts[@]}" >"$work/i.log" 2>&1 || { tail -5 "$work/i.log"; exit 1; }
read -r isteps iwall ierr <<<"$($py -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['steps'], r['implicit']['seconds']['ts_solve'], r['fields']['u']['error_linf'])" "$work/i/report.json")"
echo "time to solution at $n^3, t = 0.16: explicit ssp_rk3 $esteps steps (dt $edt) in $ewall s, error $eerr; implicit bdf2 $isteps steps (dt $idt, 100x) in $iwall s, error $ierr; speed-up $($py -c "import sys; print('%.1f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$ewall" "$iwall")"
echo "{\"bench\": \"implicit_vs_explicit\", \"n\": $n, \"ranks\": $ranks, \"explicit_steps\": $esteps, \"explicit_dt\": $edt, \"explicit_s\": $ewall, \"explicit_error_linf\": $eerr, \"implicit_steps\": $isteps, \"implicit_dt\": $idt, \"implicit_s\": $iwall, \"implicit_error_linf\": $ierr}"
exit $status

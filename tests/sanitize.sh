#!/usr/bin/env bash
# Builds tessera with ASan + UBSan in $2 and runs its unit and MPI tests (CTest labels; not
# the ParaView, install and progress tests, which check what ParaView reads, the install tree
# and the terminal display, not how tessera handles memory; nor the examples', which check the
# example cases and run at their sizes the code the other tests run).
set -euo pipefail
src=$1 dir=$2
# line tables (-g1) are all a report's stack needs, and compile 15% faster than -g
cmake -S "$src" -B "$dir" -DTESSERA_SANITIZE=ON -DTESSERA_ENABLE_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
cmake --build "$dir" -j2 >/dev/null
# two tests at a time under ASan: rebalance.sh's checks on measured times are the plain run's
export TSR_TIMING_CHECKS=0
# pinn.sh's training to asserted errors takes minutes under ASan: the plain run has it
export TSR_SANITIZED=1
ctest --test-dir "$dir" -L "unit|mpi" -LE "sanitize|paraview" -E "e2e_install|e2e_progress|e2e_examples" \
  --output-on-failure -j2

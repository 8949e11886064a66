#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine lacks, then configures and builds tessera in
# build/. Safe to run again: it installs only missing packages and rebuilds incrementally.
#   scripts/setup.sh            install + build
#   scripts/setup.sh --test     install + build + run the whole test suite with CTest
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

pkgs="build-essential cmake pkg-config openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools
      libyaml-dev libmuparser-dev libopenblas-dev libcmocka-dev python3"
pkgs="$pkgs petsc-dev" # method: implicit (optional in CMake: without it the method is refused)
pkgs="$pkgs clang libclang-rt-14-dev" # the fuzz test: libFuzzer, ASan, UBSan (tests/fuzz/run.sh)
missing=""
pkgs="$pkgs paraview python3-paraview xvfb xauth python3-h5py python3-numpy" # e2e_paraview
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing$missing"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"

# Open MPI refuses root and more ranks than cores unless told; CI runs as root on 2 cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
if [ "${1:-}" = "--test" ]; then
  # GPU tests (label gpu) need GPUs: they run on the GPU machines (README, "GPUs").
  ctest --test-dir build --output-on-failure -j"$jobs" --timeout 1200 -LE gpu
fi

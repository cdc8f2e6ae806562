#!/usr/bin/env bash
# Builds and runs the whole test suite. Tests labelled `gpu` run where a GPU is present and
# are reported as skipped (with the reason) where none is.
# Another configuration, in a folder of its own (CI's lean build: no SQLite, no libpq):
#   PTXBENCH_BUILD_DIR=build-lean \
#   PTXBENCH_CMAKE_ARGS="-DPTXBENCH_WITH_SQLITE=OFF -DPTXBENCH_WITH_LIBPQ=OFF" scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PTXBENCH_BUILD_DIR:-build}
command -v nvcc >/dev/null || export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
# Configured when the folder is new; PTXBENCH_CMAKE_ARGS, when given, apply to an existing one
# too (cmake keeps them in the folder's cache).
if [[ ! -f "$build_dir/build.ninja" || -n "${PTXBENCH_CMAKE_ARGS:-}" ]]; then
  # shellcheck disable=SC2086
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${PTXBENCH_CMAKE_ARGS:-} >/dev/null
fi
cmake --build "$build_dir"
ctest --test-dir "$build_dir" --output-on-failure "$@"

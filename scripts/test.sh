#!/usr/bin/env bash
# Builds and runs the whole test suite. Tests labelled `gpu` run where a GPU is present and
# are reported as skipped (with the reason) where none is.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PTXBENCH_BUILD_DIR:-build}
command -v nvcc >/dev/null || export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
[[ -f "$build_dir/build.ninja" ]] || cmake -S . -B "$build_dir" -G Ninja >/dev/null
cmake --build "$build_dir"
ctest --test-dir "$build_dir" --output-on-failure "$@"

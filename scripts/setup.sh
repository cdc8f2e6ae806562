#!/usr/bin/env bash
# Sets up a fresh machine, builds ptxbench, and runs the main job on the bundled default:
# `ptxbench run`, the agent loop replaying agent/replay/default.json on the headline GEMM
# gemm_n7168_k5120 (M=8192).
# Idempotent: installs only what is missing, rebuilds only what changed.
#
#   scripts/setup.sh            set up, build, run the default (replayed) agent run
#   scripts/setup.sh --no-run   set up and build only
set -euo pipefail
cd "$(dirname "$0")/.."

run_default=1
[[ "${1:-}" == "--no-run" ]] && run_default=0

# --- dependencies (Debian/Ubuntu packages) ---
packages=(cmake ninja-build g++ libgtest-dev nlohmann-json3-dev libcli11-dev libcurl4-openssl-dev
          libcpp-httplib-dev libmicrohttpd-dev libsqlite3-dev libpq-dev)
# Wanted but not needed: where it cannot be installed, the build goes on without what needs it
# (the GPU image has no package registry: no cpp-httplib, no libmicrohttpd, no SQLite headers,
# no Chromium).
optional_packages=(libcpp-httplib-dev libmicrohttpd-dev libsqlite3-dev libpq-dev)
# CI runs the report's browser test, so there Chromium is required.
[[ "${CI:-}" == "true" ]] && packages+=(chromium)
# CI tests the service's PostgreSQL queue against a real throwaway server: required there.
# And the service behind nginx, the reverse proxy the README's multi-host setup puts in front of
# it (docs/nginx-ptxbench.conf, tested against trickling clients).
if [[ "${CI:-}" == "true" ]]; then
  packages+=(postgresql nginx-light)
  optional_packages=("${optional_packages[@]/libpq-dev/}")
fi
have_header() { [[ -e "/usr/include/$1" || -e "/usr/local/include/$1" ]]; }
missing=()
for p in "${packages[@]}"; do
  case "$p" in
    # Machines with these headers from elsewhere (e.g. the GPU image) need no package.
    libgtest-dev) have_header gtest/gtest.h && continue ;;
    nlohmann-json3-dev) have_header nlohmann/json.hpp && continue ;;
    libcli11-dev) have_header CLI/CLI.hpp && continue ;;
    # libcurl: the model providers. cpp-httplib: only the scripted model server of the tests
    # (without it the build skips provider_test).
    libcurl4-openssl-dev) { have_header curl/curl.h || have_header x86_64-linux-gnu/curl/curl.h ||
                            have_header aarch64-linux-gnu/curl/curl.h; } && continue ;;
    libcpp-httplib-dev) have_header httplib.h && continue ;;
    # libmicrohttpd: the HTTP server of `ptxbench serve` (without it, serve says so).
    libmicrohttpd-dev) have_header microhttpd.h && continue ;;
    # SQLite: the results store (without it ptxbench builds, and --db says it cannot).
    libsqlite3-dev) have_header sqlite3.h && continue ;;
    # libpq: the service's queue for many hosts (without it, postgresql:// URLs say so).
    libpq-dev) have_header postgresql/libpq-fe.h && continue ;;
    postgresql) compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && continue ;;
    chromium) command -v chromium >/dev/null && continue ;;
    nginx-light) command -v nginx >/dev/null && continue ;;
    cmake) command -v cmake >/dev/null && continue ;;
    ninja-build) command -v ninja >/dev/null && continue ;;
    g++) command -v g++ >/dev/null && continue ;;
  esac
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
required=()
optional=()
for p in "${missing[@]}"; do
  [[ " ${optional_packages[*]} " == *" $p "* ]] && optional+=("$p") || required+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  if ((${#required[@]})); then
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${required[@]}" >/dev/null
  fi
  if ((${#optional[@]})); then
    { ((${#required[@]})) || "${sudo_cmd[@]}" apt-get update -qq; } &&
      DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${optional[@]}" \
        >/dev/null ||
      echo "setup: could not install ${optional[*]}; building without (the tests and commands that need them say so)"
  fi
fi

# --- the CUDA toolkit (not a Debian package of the right version: it must be there) ---
if ! command -v nvcc >/dev/null; then
  for d in "${CUDA_HOME:-}" /usr/local/cuda; do
    [[ -n "$d" && -x "$d/bin/nvcc" ]] && export PATH="$d/bin:$PATH" && break
  done
fi
command -v nvcc >/dev/null || { echo "setup: nvcc not found; install the CUDA toolkit 13 (or set CUDA_HOME)" >&2; exit 1; }

# --- the disassembler: cuobjdump comes with the toolkit where it is complete; otherwise the
# NVIDIA wheel from PyPI, pinned, into .tools/ (the harness looks there too) ---
if ! command -v cuobjdump >/dev/null && [[ ! -x /usr/local/cuda/bin/cuobjdump ]] &&
   [[ ! -x .tools/nvidia/cu13/bin/cuobjdump ]]; then
  echo "setup: installing cuobjdump and nvdisasm 13.2.86 (PyPI wheels) into .tools/"
  python3 -m pip install -q --target .tools --no-deps \
    nvidia-cuda-cuobjdump==13.2.86 nvidia-cuda-nvdisasm==13.2.86
fi

# --- the TVM-FFI runtime: upstream PTXBench candidates (`void run(tvm::ffi::TensorView ...)`)
# are built against its headers and run with its library; the maintained package from PyPI,
# pinned to the version upstream uses, into .tools/tvm-ffi (the harness looks there, or at
# $PTXBENCH_TVM_FFI; `ptxbench doctor` says which) ---
tvm_ffi=.tools/tvm-ffi/tvm_ffi
if [[ -z "${PTXBENCH_TVM_FFI:-}" ]] &&
   [[ ! -f $tvm_ffi/lib/libtvm_ffi.so || ! -f $tvm_ffi/include/tvm/ffi/c_api.h ]]; then
  echo "setup: installing apache-tvm-ffi 0.1.12 (PyPI wheel) into .tools/tvm-ffi"
  python3 -m pip install -q --upgrade --target .tools/tvm-ffi --no-deps apache-tvm-ffi==0.1.12 ||
    echo "setup: could not install apache-tvm-ffi; upstream (tvm-ffi) candidates cannot be built here"
fi

# --- FlashInfer's headers: the attention-forward baseline is built by the harness from
# FlashInfer's own Hopper templates (src/measure/flashinfer_attention.h). Each release the
# harness knows (0.6.14, the paper's and the default; 0.7.4, `--baseline flashinfer@0.7.4`) from
# the maintained package, flashinfer-python on PyPI (or $PTXBENCH_FLASHINFER_WHEEL, a copy of
# one release's wheel, used for that release), only the headers its sm90 prefill pulls in
# (nvcc -M over tools/flashinfer_headers.cu), into .tools/flashinfer-<version>: ~26 MB each
# instead of the wheel's 1 GB. A folder already holding its release is kept as it is, so a GPU
# machine whose folders came unpacked from .carry (scripts/carried_flashinfer.sh) downloads
# nothing. $PTXBENCH_FLASHINFER, when set, stands in for the release its VERSION names. ---
flashinfer_versions=(0.6.14 0.7.4)
# The folder of before issue 38 (.tools/flashinfer, 0.7.4 then) is nothing the harness reads any
# more: where it holds a release whose own folder is missing it becomes that folder (no second
# download); otherwise it is left alone, harmless.
if [[ -f .tools/flashinfer/VERSION ]]; then
  old_version=$(cat .tools/flashinfer/VERSION)
  if [[ " ${flashinfer_versions[*]} " == *" $old_version "* && ! -e .tools/flashinfer-$old_version ]]; then
    echo "setup: moving .tools/flashinfer (FlashInfer $old_version) to .tools/flashinfer-$old_version"
    mv .tools/flashinfer ".tools/flashinfer-$old_version"
  fi
fi
for flashinfer_version in "${flashinfer_versions[@]}"; do
  fi_dir=.tools/flashinfer-$flashinfer_version
  [[ "$(cat "$fi_dir/VERSION" 2>/dev/null)" == "$flashinfer_version" ]] && continue
  [[ -n "${PTXBENCH_FLASHINFER:-}" &&
     "$(cat "$PTXBENCH_FLASHINFER/VERSION" 2>/dev/null)" == "$flashinfer_version" ]] && continue
  wheel=${PTXBENCH_FLASHINFER_WHEEL:-}
  [[ "$(basename "$wheel")" == flashinfer_python-"$flashinfer_version"-*.whl ]] || wheel=
  echo "setup: installing FlashInfer $flashinfer_version's attention headers into $fi_dir"
  if ! PTXBENCH_FLASHINFER_WHEEL=$wheel scripts/install_flashinfer_headers.sh "$flashinfer_version" "$fi_dir"; then
    echo "setup: could not install FlashInfer $flashinfer_version's headers; the attention-forward" \
         "baseline --baseline flashinfer@$flashinfer_version will report that they are missing"
  fi
done

# --- build ---
build_dir=${PTXBENCH_BUILD_DIR:-build}
# PTXBENCH_CMAKE_ARGS: extra configure arguments, e.g. where a machine without SQLite's
# headers finds a copy of sqlite3.h (-DSQLite3_INCLUDE_DIR=… -DSQLite3_LIBRARY=…).
# A machine without libmicrohttpd or SQLite headers (the GPU image) uses the static copies that
# scripts/gpu_deps.sh leaves in .carry/deps, when a device call carried them there.
deps=$PWD/.carry/deps
if [[ -d $deps/lib ]]; then
  have_header microhttpd.h || PTXBENCH_CMAKE_ARGS+=" -DMICROHTTPD_INCLUDE_DIR=$deps/include -DMICROHTTPD_LIBRARY=$deps/lib/libmicrohttpd.a"
  have_header sqlite3.h || PTXBENCH_CMAKE_ARGS+=" -DSQLite3_INCLUDE_DIR=$deps/include -DSQLite3_LIBRARY=$deps/lib/libsqlite3.a"
fi
if [[ ! -f "$build_dir/build.ninja" ]]; then
  # shellcheck disable=SC2086
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${PTXBENCH_CMAKE_ARGS:-} >/dev/null
fi
# PTXBENCH_BUILD_TARGETS="a b": only those (a GPU session that needs two binaries, not all).
# shellcheck disable=SC2086
cmake --build "$build_dir" ${PTXBENCH_BUILD_TARGETS:+--target $PTXBENCH_BUILD_TARGETS}
echo "setup: built $build_dir/src/cli/ptxbench"

# --- the main job on the bundled default: the agent loop replaying our own trajectory (a
# kernel that does not compile, a correct CUDA-core GEMM, a correct TMA + wgmma GEMM) on the
# headline GEMM, every turn judged by all three layers ---
if ((run_default)); then
  bin="$build_dir/src/cli/ptxbench"
  "$bin" doctor || true
  out="runs/default-$(date -u +%Y%m%d-%H%M%S)"
  set +e
  "$bin" run --out "$out"
  rc=$?
  set -e
  echo "setup: trajectories in $out/trajectories, evaluation records in $out/evaluations"
  # Exit code 3: a turn could not be judged (no GPU here: screening and build ran, the GPU
  # layers could not). The trajectory says which turn and why; --resume retries it.
  if [[ $rc -eq 3 ]] && grep -rqs '"reason": "no_gpu"' "$out/evaluations"; then
    echo "setup: no GPU on this machine: the loop ran, the turns needing a GPU are marked infra"
    exit 0
  fi
  exit $rc
fi

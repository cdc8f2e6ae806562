#!/usr/bin/env bash
# What a device call needs beside the working tree, made here. A call carries (64 MiB in all,
# the working tree included):
#   carry: [".tools/nvidia", ".tools/tvm-ffi", ".tools/nvidia_cuda_cuobjdump-13.2.86.dist-info",
#           ".tools/nvidia_cuda_nvdisasm-13.2.86.dist-info", ".carry"]
# FlashInfer's headers are not in that list: each release's folder (.tools/flashinfer-<version>)
# is ~26 MB, and two of them do not fit beside the rest. They travel packed instead, as
# .carry/flashinfer-<version>.tar.xz (~1 MB each: text compresses well), which the GPU-side
# scripts unpack into .tools/ before setup (scripts/carried_flashinfer.sh).
#
#   scripts/gpu_deps.sh             pack FlashInfer's headers, then build the static libraries
#   scripts/gpu_deps.sh flashinfer  pack FlashInfer's headers only (no network needed)
#
# The static libraries (issue 37): the GPU machine has no package registry and no libmicrohttpd
# or SQLite headers, so `ptxbench serve` built there had no HTTP server and no queue. Here
# (Debian, with its mirror reachable) this makes static libraries and their headers in
# .carry/deps, which scripts/gpu_suite.sh hands to CMake:
#   - libmicrohttpd from Debian's source package, checked against the .dsc's SHA-256, built
#     without TLS (the service on the GPU host listens on loopback; static, so nothing of it
#     must exist on the image);
#   - SQLite's static library and header from Debian's libsqlite3-dev.
# Static archives link against the image's own C library only; the first GPU call shows
# whether its toolchain accepts them.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each installed release, repacked only when its folder changed since the last pack.
mkdir -p .carry
for dir in .tools/flashinfer-*/; do
  name=$(basename "$dir")
  [[ -f "$dir/VERSION" && "$name" != *.unpacking ]] || continue
  archive=.carry/$name.tar.xz
  if [[ -f "$archive" && -z "$(find "$dir" -newer "$archive" -print -quit)" ]]; then
    echo "gpu_deps: $archive is up to date"
    continue
  fi
  tar -C .tools -cJf "$archive.tmp" "$name" && mv "$archive.tmp" "$archive"
  echo "gpu_deps: packed $dir into $archive ($(du -h "$archive" | cut -f1))"
done
[[ "${1:-}" == "flashinfer" ]] && exit 0

out=$PWD/.carry/deps
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mirror=http://deb.debian.org/debian/pool/main
mhd_version=0.9.75
mhd_sha256=796e7e217a4802679fcac667a4e98501c53185dcf50ca0583870e84192620131
mkdir -p "$out/include" "$out/lib"

cd "$work"
curl -sSfLO "$mirror/libm/libmicrohttpd/libmicrohttpd_${mhd_version}.orig.tar.xz"
echo "$mhd_sha256  libmicrohttpd_${mhd_version}.orig.tar.xz" | sha256sum -c --quiet
tar xJf "libmicrohttpd_${mhd_version}.orig.tar.xz"
(cd "libmicrohttpd-${mhd_version}" &&
  ./configure --quiet --disable-https --disable-shared --enable-static --with-pic \
    --disable-doc --disable-examples --disable-curl --prefix="$work/mhd" >/dev/null &&
  make -s -j"$(nproc)" >/dev/null && make -s install >/dev/null)
cp "$work/mhd/include/microhttpd.h" "$out/include/"
cp "$work/mhd/lib/libmicrohttpd.a" "$out/lib/"

apt-get download -q libsqlite3-dev >/dev/null 2>&1
dpkg -x libsqlite3-dev_*.deb sqlite
cp sqlite/usr/include/sqlite3.h "$out/include/"
cp sqlite/usr/lib/*/libsqlite3.a "$out/lib/"
ls -la "$out/include" "$out/lib"

#!/usr/bin/env bash
# On the GPU machine, before setup.sh: FlashInfer's headers arrive packed in .carry (each
# release's folder is too large to carry beside the rest; scripts/gpu_deps.sh packs them). Each
# .carry/flashinfer-<version>.tar.xz is unpacked into .tools/flashinfer-<version> unless that
# folder already holds the release (a warm machine keeps it), so that setup.sh finds every
# release in place and downloads nothing: the GPU machine has no network.
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s nullglob
for archive in .carry/flashinfer-*.tar.xz; do
  name=$(basename "$archive" .tar.xz)
  version=${name#flashinfer-}
  [[ "$(cat ".tools/$name/VERSION" 2>/dev/null)" == "$version" ]] && continue
  # Unpacked beside it first: an interrupted unpack never leaves a folder that looks installed.
  scratch=.tools/$name.unpacking
  rm -rf "$scratch" && mkdir -p "$scratch"
  tar -xJf "$archive" -C "$scratch"
  if [[ "$(cat "$scratch/$name/VERSION" 2>/dev/null)" != "$version" ]]; then
    echo "carried_flashinfer: $archive does not hold FlashInfer $version; skipped" >&2
    rm -rf "$scratch"
    continue
  fi
  rm -rf ".tools/$name" && mv "$scratch/$name" ".tools/$name" && rm -rf "$scratch"
  echo "carried_flashinfer: FlashInfer $version unpacked into .tools/$name"
done

#!/usr/bin/env bash
# Installs the FlashInfer headers that the harness's attention baseline needs into DEST:
#
#   scripts/install_flashinfer_headers.sh VERSION DEST
#
# The wheel: $PTXBENCH_FLASHINFER_WHEEL when set (an offline copy), else `pip download
# flashinfer-python==VERSION --no-deps`. Its folders are unpacked into a scratch folder, the
# include closure of tools/flashinfer_headers.cu (the same headers the generated source
# includes) is taken with `nvcc -M` under the include flags the harness uses, and only those
# files, FlashInfer's licence and a VERSION file land in DEST. Without nvcc, nothing is
# installed and it says why (a closure guessed from folders would be ~60 MB, past what the GPU
# machine can be sent).
set -euo pipefail
cd "$(dirname "$0")/.."
version=$1
dest=$2

nvcc=$(command -v nvcc || true)
[[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
if [[ -z "$nvcc" ]]; then
  echo "install_flashinfer_headers: no nvcc: the header closure cannot be computed" >&2
  exit 1
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
wheel=${PTXBENCH_FLASHINFER_WHEEL:-}
if [[ -z "$wheel" ]]; then
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$scratch/wheel" \
    "flashinfer-python==$version"
  wheel=$(ls "$scratch"/wheel/flashinfer_python-"$version"-*.whl)
fi
echo "install_flashinfer_headers: $(basename "$wheel") (sha256 $(sha256sum "$wheel" | cut -c1-16)…)"

# Only the folders the harness puts on nvcc's include path, and the licences.
python3 - "$wheel" "$scratch/data" <<'EOF'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
keep = ("flashinfer/data/include/", "flashinfer/data/cutlass/include/",
        "flashinfer/data/cutlass/tools/util/include/", "flashinfer/data/cccl/libcudacxx/include/")
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(keep):
            z.extract(name, out)
        elif name.endswith(".dist-info/licenses/LICENSE"):
            z.extract(name, out)
EOF
data=$scratch/data/flashinfer/data

# The same include flags, in the same order, as FlashInferNvccFlags().
flags=(-std=c++17 -DNDEBUG --expt-relaxed-constexpr -gencode arch=compute_90a,code=sm_90a
       -DCUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED -DFLASHINFER_ENABLE_BF16
       -I "$data/cccl/libcudacxx/include" -isystem "$data/include"
       -isystem "$data/cutlass/include" -isystem "$data/cutlass/tools/util/include")
"$nvcc" "${flags[@]}" -M tools/flashinfer_headers.cu -o "$scratch/deps.txt"

rm -rf "$dest.new"
mkdir -p "$dest.new"
tr ' \\' '\n\n' < "$scratch/deps.txt" | grep "^$data/" | sort -u | while read -r f; do
  rel=${f#"$data/"}
  mkdir -p "$dest.new/$(dirname "$rel")"
  cp "$f" "$dest.new/$rel"
done
lic=$(find "$scratch/data" -path '*dist-info/licenses/LICENSE' | head -1)
[[ -n "$lic" ]] && cp "$lic" "$dest.new/LICENSE.flashinfer"
echo "$version" > "$dest.new/VERSION"
rm -rf "$dest"
mv "$dest.new" "$dest"
echo "install_flashinfer_headers: $(find "$dest" -type f | wc -l) files, $(du -sh "$dest" | cut -f1) in $dest"

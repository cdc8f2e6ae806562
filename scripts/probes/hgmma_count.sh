#!/usr/bin/env bash
# Builds hgmma_count.cu (widths 64, 128, 256) and prints, per kernel, what Nsight Compute counts for its HGMMA (the
# same metrics and source page that inspect/ncu.cc reads). Each warpgroup issues 1000 wgmma (width 128 launched twice):
# inst_executed = 4000 at the HGMMA's offset means one count per warp per instruction.
set -uo pipefail
cd "$(dirname "$0")"
out=${OUT:-/tmp}/hgmma-count
mkdir -p "$out"
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I ../../packs/sm_90a/include \
  -o "$out/probe" hgmma_count.cu
cuobjdump -sass "$out/probe" | grep -oE "HGMMA\.64x[0-9]+x16" | sort | uniq -c
ncu --clock-control none --metrics inst_executed,thread_inst_executed_true --force-overwrite \
  -o "$out/report" "$out/probe" >"$out/ncu.log" 2>&1 || { echo "ncu failed:"; tail -5 "$out/ncu.log"; }
ncu --import "$out/report.ncu-rep" --page source --print-source sass --csv > "$out/source.csv"
ncu --version | tail -1
echo "per-kernel summary (width 128 launched twice):"
ncu --import "$out/report.ncu-rep" --print-summary per-kernel 2>&1 | grep -E "probe|invocations|Invocations" | head -12
python3 - "$out/source.csv" <<'PY'
import csv, sys
sums, kernel, cols = {}, None, {}
for row in csv.reader(open(sys.argv[1])):
    if len(row) >= 2 and row[0] == "Kernel Name":
        kernel = row[1]
        sums.setdefault(kernel, [0, 0, 0, 0.0])[0] += 1
    elif len(row) >= 2 and row[0] == "Address":
        cols = {name: i for i, name in enumerate(row)}
    elif kernel and cols and "HGMMA" in row[cols["Source"]]:
        s = sums[kernel]
        s[1] += 1
        s[2] += int(float(row[cols["inst_executed"]] or 0))
        s[3] += float(row[cols["thread_inst_executed_true"]] or 0)
for k, (launches, offsets, warp, thread) in sums.items():
    print("%s: %d launch(es), %d HGMMA offsets, inst_executed %d (= %.2f per warp per wgmma of"
          " the 1000), thread_inst_executed_true %d" % (k, launches, offsets, warp, warp / 4000.0,
                                                       thread))
PY

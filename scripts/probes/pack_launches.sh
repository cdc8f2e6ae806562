#!/usr/bin/env bash
# Profiles three calls of the pack GEMM control at the headline with the evaluation's ncu
# metrics (inspect/ncu.cc) and prints what the report says of them: the source page's sections
# per kernel, the summed inst_executed at HGMMA offsets, and the per-kernel summary's launches.
set -uo pipefail
cd "$(dirname "$0")"
out=${OUT:-/tmp}/pack-launches
mkdir -p "$out"
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -lcuda -o "$out/driver" \
  pack_launches.cu ../../controls/gemm/pack_ws_tma_wgmma.cu || exit 1
ncu --clock-control none --metrics inst_executed,thread_inst_executed_true --force-overwrite \
  -o "$out/report" "$out/driver" >"$out/ncu.log" 2>&1 || { echo "ncu failed:"; tail -5 "$out/ncu.log"; }
grep -v "^==PROF==" "$out/ncu.log" | tail -2
ncu --import "$out/report.ncu-rep" --page source --print-source sass --csv >"$out/source.csv"
echo "source sections (Kernel Name rows): $(grep -c '^"Kernel Name"' "$out/source.csv")"
grep '^"Kernel Name"' "$out/source.csv" | sort | uniq -c | cut -c1-160
ncu --import "$out/report.ncu-rep" --print-summary per-kernel >"$out/summary.txt" 2>&1
grep -E "gemm_ws_kernel|Invocations|invocations" "$out/summary.txt" | head -6 | cut -c1-200
ncu --import "$out/report.ncu-rep" --page raw --csv --metrics inst_executed 2>/dev/null |
  cut -c1-200 | head -6

#!/usr/bin/env bash
# One device call for what docs/gpu-runs/PENDING.md owes (2026-12-07, sixth session, call c):
# the build; the CLI pool of 8 at N=16 with the GPU gate taken before CUDA's set-up (call b,
# with the gate after CUPTI's set-up, changed 10 of 16 verdicts); the pack GEMM's profile with
# its duplicated source sections folded by the report's launch count (expect launches 3,
# fraction 1.0); then eight honest evaluations at once under the gate. Bounded by BUDGET_S.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-owed-out}; mkdir -p "$out"
t0=$(date +%s)
left() { echo $(( ${BUDGET_S:-380} - ($(date +%s) - t0) )); }
export PTXBENCH_BUILD_DIR=build-gpu
# FlashInfer's headers come packed in .carry (scripts/gpu_deps.sh): in place before the build.
scripts/carried_flashinfer.sh || echo "carried_flashinfer failed: FlashInfer's baseline may report missing headers"
scripts/probes/static_deps_link.sh >"$out/static-deps.txt" 2>&1 || mv .carry/deps .carry/deps-unusable
PTXBENCH_BUILD_TARGETS="ptxbench controls_gpu_test" scripts/setup.sh --no-run \
  >"$out/setup.log" 2>&1 || { grep -E -A8 "error" "$out/setup.log" | head -40; exit 1; }
b=build-gpu/src/cli/ptxbench
echo "== built: $(( $(date +%s) - t0 )) s"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout $(( $(left) - 60 )) python3 scripts/throughput.py --bin $b --n 16 --pool 8 --modes cli \
  --out "$out/throughput" 2>&1 | tail -3
echo "== after the CLI pool: $(( $(date +%s) - t0 )) s"
timeout 60 $b eval controls/gemm/pack_ws_tma_wgmma.cu --task gemm_n7168_k5120 --sanitize never \
  --json "$out/pack_ws.json" >/dev/null 2>&1
python3 - "$out/pack_ws.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); i = r["instructions"]; d = i["dynamic"]
print("pack_ws", r["status"], r.get("reason"), i.get("arch_tag"), "fraction",
      i.get("tensor_core_work_fraction"), "launches", d.get("launches"), "calls",
      i["profile"]["calls"], "message", i.get("message", "")[:200])
PY
echo "== after the pack: $(( $(date +%s) - t0 )) s"
(( $(left) > 50 )) && (cd build-gpu && PTXBENCH_BIN=$PWD/src/cli/ptxbench PTXBENCH_SOURCE_DIR=$PWD/.. \
  timeout $(( $(left) - 5 )) tests/controls_gpu_test \
  --gtest_filter=Controls.ConcurrentHonestEvaluationsKeepTheirVerdicts) >"$out/controls.log" 2>&1
grep -E "^\[ +(OK|FAILED) |: [A-Z_]+ —" "$out/controls.log" | cut -c1-200
echo "== end: $(( $(date +%s) - t0 )) s"

#!/usr/bin/env bash
# One device call for what docs/gpu-runs/PENDING.md owes (2026-12-07, sixth session), the most
# needed first: the build; the GPU gate (issue 37: children take the GPU lock at their first
# CUDA call, the candidate's timed child alone only before its load) checked where it could
# open a hole (its own test, the adversarial controls, a hung candidate beside a timing, eight
# honest evaluations at once); the CLI pool of 8 at N=16 with where each evaluation's time goes;
# the probes on how Nsight Compute counts wgmma and the pack GEMM's launches; then `serve` with
# 8 workers if time is left. Bounded by BUDGET_S.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-owed-out}; mkdir -p "$out"
t0=$(date +%s)
left() { echo $(( ${BUDGET_S:-520} - ($(date +%s) - t0) )); }
export PTXBENCH_BUILD_DIR=build-gpu
scripts/probes/static_deps_link.sh >"$out/static-deps.txt" 2>&1 || mv .carry/deps .carry/deps-unusable
PTXBENCH_BUILD_TARGETS="ptxbench controls_gpu_test gpu_gate_test" scripts/setup.sh --no-run \
  >"$out/setup.log" 2>&1 || { grep -E -A8 "error" "$out/setup.log" | head -40; exit 1; }
b=build-gpu/src/cli/ptxbench
echo "== built: $(( $(date +%s) - t0 )) s"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
(cd build-gpu && PTXBENCH_BIN=$PWD/src/cli/ptxbench timeout 60 src/evaluate/gpu_gate_test 2>&1 |
  grep -E "^\[ +(OK|FAILED|SKIPPED) |PASSED|FAILED" | head -8)
(cd build-gpu && PTXBENCH_BIN=$PWD/src/cli/ptxbench PTXBENCH_SOURCE_DIR=$PWD/.. timeout 200 \
  tests/controls_gpu_test --gtest_filter=Controls.AdversarialControlsGetTheirVerdicts:Controls.AHungCandidateElsewhereDoesNotShareTheGpuWithTiming:Controls.ConcurrentHonestEvaluationsKeepTheirVerdicts) \
  >"$out/controls.log" 2>&1
grep -E "^\[ +(OK|FAILED) |: [A-Z_]+ —" "$out/controls.log" | cut -c1-200
echo "== after the controls: $(( $(date +%s) - t0 )) s"
(( $(left) > 150 )) && timeout $(( $(left) - 40 )) python3 scripts/throughput.py --bin $b --n 16 \
  --pool 8 --modes cli --out "$out/throughput" 2>&1 | tail -4
echo "== after the CLI pool: $(( $(date +%s) - t0 )) s"
OUT=$out timeout 60 scripts/probes/hgmma_count.sh 2>&1 | grep -v "^==PROF==" | tail -12
OUT=$out timeout 90 scripts/probes/pack_launches.sh 2>&1 | grep -v "^==PROF==" | tail -14
echo "== after the probes: $(( $(date +%s) - t0 )) s"
(( $(left) > 150 )) && timeout $(( $(left) - 10 )) python3 scripts/throughput.py --bin $b --n 16 \
  --pool 8 --workers 8 --modes serve --out "$out/throughput-serve" 2>&1 | tail -4
echo "== end: $(( $(date +%s) - t0 )) s"

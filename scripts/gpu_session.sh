#!/usr/bin/env bash
# One device call for a session whose machine time is short (issue 36's after-run and issue 37's
# first throughput figures, 2026-12-07): the static service libraries' probe, the build, the
# owed and representative controls, the headline evaluation with its clocks and witness, the
# doctor, the GPU tests CTEST_R names, then the throughput benchmark. Each part is bounded so the call ends inside 600 s and
# whatever ran is in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-session-out}; mkdir -p "$out"
t0=$(date +%s)
# FlashInfer's headers come packed in .carry (scripts/gpu_deps.sh): in place before the build.
scripts/carried_flashinfer.sh || echo "carried_flashinfer failed: FlashInfer's baseline may report missing headers"
scripts/probes/static_deps_link.sh >"$out/static-deps.txt" 2>&1 || mv .carry/deps .carry/deps-unusable
cat "$out/static-deps.txt"
OUT=$out COST=${COST:-0} PTXBENCH_BUILD_TARGETS="ptxbench controls_gpu_test ${EXTRA_TARGETS:-}" \
  GTEST_FILTER=${GTEST_FILTER:-Controls.AdversarialControlsGetTheirVerdicts:Controls.EachGetsItsVerdict} \
  PTXBENCH_CONTROL_FILTER=${CONTROLS:-fatbin_,impossible_speed,forged_peak,witness_fixup,cupti_activity_off,profiler_only,wgmma,cheat_memo,cheat_zeros,naive,tiled,mma_sync,pack_} \
  timeout "${CONTROLS_S:-300}" scripts/gpu_suite.sh adversarial
echo "== after controls: $(( $(date +%s) - t0 )) s"
b=build-gpu/src/cli/ptxbench
$b doctor >"$out/doctor.txt" 2>&1; grep -iE "nvml|gpm|clock|serve|store" "$out/doctor.txt"
timeout 90 $b eval controls/gemm/wgmma_tma.cu --task gemm_n7168_k5120 --sanitize never \
  --json "$out/headline.json" >"$out/headline.txt" 2>&1
python3 - "$out/headline.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); p = r.get("performance") or {}; i = r.get("instructions") or {}
print("headline:", r["status"], i.get("verification"), i.get("arch_tag"), "speedup", p.get("speedup"),
      p.get("speedup_range"), "witness", (p.get("witness") or {}).get("state"))
print("  clocks", json.dumps(p.get("clocks"))[:400]); print("  stages", r.get("stage_seconds"))
PY
echo "== after headline: $(( $(date +%s) - t0 )) s"
# CTEST_R: GPU tests by name (their targets in EXTRA_TARGETS), bounded by CTEST_S.
if [[ -n ${CTEST_R:-} ]]; then
  (cd build-gpu && env -u GTEST_FILTER timeout "${CTEST_S:-200}" ctest -L gpu -R "$CTEST_R" --output-on-failure) \
    >"$out/ctest-gpu.log" 2>&1
  grep -E "tests passed|Passed|Failed|Skipped|\*\*\*|FAILED" "$out/ctest-gpu.log" | tail -n 30
  echo "== after gpu tests: $(( $(date +%s) - t0 )) s"
fi
left=$(( ${BUDGET_S:-560} - ($(date +%s) - t0) ))
(( left > 60 )) && timeout "$left" python3 scripts/throughput.py --bin "$b" --n "${N:-8}" \
  --pool "${POOL:-4}" --workers "${WORKERS:-2}" --modes "${MODES:-cli,serve}" --out "$out/throughput"
echo "== end: $(( $(date +%s) - t0 )) s"

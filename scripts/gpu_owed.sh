#!/usr/bin/env bash
# One short device call for what docs/gpu-runs/PENDING.md owes (2026-12-07, fifth session), in
# order of what a later part needs least: the build; how ncu counts wgmma of each width
# (probes/hgmma_count.sh) and the pack GEMM's profile with its launches; a coding agent's
# trajectory on the GPU (issue 39: the scripted agent hands in the pack's GEMM through
# evaluate_kernel, judged by all three layers: the control's copy, which inlines the pack's
# header as a model must; the example itself includes it and does not build alone); the CLI pool of 8 at N=16 (issue 37); then the
# upstream controls and the headline timing test with what time is left. Bounded by BUDGET_S.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-owed-out}; mkdir -p "$out"
t0=$(date +%s)
left() { echo $(( ${BUDGET_S:-470} - ($(date +%s) - t0) )); }
export PTXBENCH_BUILD_DIR=build-gpu
# FlashInfer's headers come packed in .carry (scripts/gpu_deps.sh): in place before the build.
scripts/carried_flashinfer.sh || echo "carried_flashinfer failed: FlashInfer's baseline may report missing headers"
scripts/probes/static_deps_link.sh >"$out/static-deps.txt" 2>&1 || mv .carry/deps .carry/deps-unusable
PTXBENCH_BUILD_TARGETS="ptxbench controls_gpu_test" scripts/setup.sh --no-run >"$out/setup.log" 2>&1 ||
  { grep -E -A8 "error" "$out/setup.log" | head -40; exit 1; }
b=build-gpu/src/cli/ptxbench
echo "== built: $(( $(date +%s) - t0 )) s"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
OUT=$out timeout 90 scripts/probes/hgmma_count.sh 2>&1 | grep -v "^==PROF==" | tail -12
timeout 60 $b eval controls/gemm/pack_ws_tma_wgmma.cu --task gemm_n7168_k5120 --sanitize never \
  --json "$out/pack_ws.json" >/dev/null 2>&1
python3 - "$out/pack_ws.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); i = r["instructions"]; d = i["dynamic"]
print("pack_ws", r["status"], i.get("arch_tag"), "fraction", i.get("tensor_core_work_fraction"),
      "launches", d.get("launches"), "calls", i["profile"]["calls"], "gmma", d["families"]["gmma"])
PY
echo "== after probes: $(( $(date +%s) - t0 )) s"
SCRIPTED_AGENT_LOG=$out/agent-log.json timeout 120 $b run --agent-name scripted \
  --agent-command "python3 $PWD/python/tests/scripted_agent.py $PWD/controls/gemm/pack_ws_tma_wgmma.cu quit" \
  --task gemm_n7168_k5120 --turns 1 --out "$out/agent-run" >"$out/agent-run.txt" 2>&1
tail -2 "$out/agent-run.txt"
python3 - "$out/agent-run" <<'PY'
import glob, json, sys
t = json.load(open(glob.glob(sys.argv[1] + "/trajectories/*.json")[0]))
print("agent trajectory:", t["info"]["exit_status"],
      [(x["outcome"], x.get("status"), x.get("speedup")) for x in t["info"]["turns"]])
PY
echo "== after the agent: $(( $(date +%s) - t0 )) s"
(( $(left) > 260 )) && timeout $(( $(left) - 60 )) python3 scripts/throughput.py --bin $b --n 16 \
  --pool 8 --modes cli --out "$out/throughput" 2>&1 | tail -12
echo "== after throughput: $(( $(date +%s) - t0 )) s"
(( $(left) > 40 )) && (cd build-gpu && PTXBENCH_BIN=$PWD/src/cli/ptxbench PTXBENCH_SOURCE_DIR=$PWD/.. \
  PTXBENCH_CONTROL_FILTER=.cu timeout $(left) \
  tests/controls_gpu_test --gtest_filter=Controls.TimingAtTheHeadline:Controls.UpstreamControlsGetTheirVerdicts) \
  >"$out/controls.log" 2>&1
grep -E "^\[ +(OK|FAILED) |: [A-Z_]+ —" "$out/controls.log" | cut -c1-200
echo "== end: $(( $(date +%s) - t0 )) s"

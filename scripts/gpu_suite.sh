#!/usr/bin/env bash
# The whole GPU suite in one call: build, every test (the `gpu` label included), then the
# measurements that the evaluation core promises. Writes its log and the records it made to
# $OUT (or ./gpu-suite-out), ending with a short table.
#
#   scripts/gpu_suite.sh            everything
#   scripts/gpu_suite.sh measure    only the measurements (after a build)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-suite-out}
mkdir -p "$out"
log="$out/gpu-suite.log"
exec > >(tee -a "$log") 2>&1
export PTXBENCH_BUILD_DIR=${PTXBENCH_BUILD_DIR:-build-gpu}
bin="$PTXBENCH_BUILD_DIR/src/cli/ptxbench"
echo "== ptxbench GPU suite, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit ${PTXBENCH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>/dev/null

if [[ "${1:-}" != "measure" ]]; then
  t0=$(date +%s)
  scripts/setup.sh --no-run || exit 1
  echo "== build: $(( $(date +%s) - t0 )) s"
  "$bin" doctor
  ctest --test-dir "$PTXBENCH_BUILD_DIR" --output-on-failure -V -L gpu 2>&1 | grep -vE '^[0-9]+: \[ *(RUN|OK) *\]' | tail -n 120
  ctest --test-dir "$PTXBENCH_BUILD_DIR" -LE gpu 2>&1 | tail -n 5
fi

# --- measurements ---
export PTXBENCH_CACHE="$out/cache"
rm -rf "$PTXBENCH_CACHE"
wall() {  # wall seconds of a command, also when it fails
  local s e
  s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N)
  python3 -c "print(round($e - $s, 3))"
}
headline=(--task gemm_n7168_k5120)
w_cold=$(wall "$bin" eval controls/gemm/tiled_correct.cu "${headline[@]}" --sanitize never --json "$out/cold.json")
w_warm=$(wall "$bin" eval controls/gemm/tiled_correct.cu "${headline[@]}" --sanitize never --json "$out/warm.json")
w_warm2=$(wall "$bin" eval controls/gemm/tiled_correct.cu "${headline[@]}" --sanitize never --json "$out/warm2.json")
w_fast_mc=$(wall "$bin" eval controls/gemm/tiled_correct.cu "${headline[@]}" --sanitize always --json "$out/fast_memcheck.json")
w_wgmma=$(wall "$bin" eval controls/gemm/wgmma_tma.cu "${headline[@]}" --sanitize never --json "$out/wgmma_tma.json")
w_token=$(wall "$bin" eval controls/gemm/wgmma_token.cu "${headline[@]}" --sanitize never --json "$out/wgmma_token.json")
w_slow=$(wall "$bin" eval controls/gemm/naive_correct.cu "${headline[@]}" --sanitize never --json "$out/slow.json")
w_slow_mc=$(wall "$bin" eval controls/gemm/naive_correct.cu "${headline[@]}" --sanitize always --memcheck-timeout 400 --json "$out/slow_memcheck.json")

stage() { python3 -c "import json,sys; d=json.load(open('$1')); print(d['status'], ' '.join(f'{k}={v:.2f}' for k,v in sorted(d['stage_seconds'].items())))"; }
echo "== measurements at gemm_n7168_k5120 M=8192 (wall s; stage seconds from the record)"
printf '%-44s %8s  %s\n' "case" "wall" "status and stages"
printf '%-44s %8.2f  %s\n' "tiled, cold caches, --sanitize never" "$w_cold" "$(stage "$out/cold.json")"
printf '%-44s %8.2f  %s\n' "tiled, warm caches, --sanitize never" "$w_warm" "$(stage "$out/warm.json")"
printf '%-44s %8.2f  %s\n' "tiled, warm caches, --sanitize never (again)" "$w_warm2" "$(stage "$out/warm2.json")"
printf '%-44s %8.2f  %s\n' "tiled (fast), warm, --sanitize always" "$w_fast_mc" "$(stage "$out/fast_memcheck.json")"
printf '%-44s %8.2f  %s\n' "wgmma_tma, --sanitize never (with profile)" "$w_wgmma" "$(stage "$out/wgmma_tma.json")"
printf '%-44s %8.2f  %s\n' "wgmma_token, --sanitize never (with profile)" "$w_token" "$(stage "$out/wgmma_token.json")"
python3 -c "
import json
for f in ['wgmma_tma','wgmma_token']:
    d=json.load(open('$out/'+f+'.json'))['instructions']
    print(f, d['verification'], d.get('tensor_core_work_fraction'), '|', d['message'])
"
printf '%-44s %8.2f  %s\n' "naive (slow), warm, --sanitize never" "$w_slow" "$(stage "$out/slow.json")"
printf '%-44s %8.2f  %s\n' "naive (slow), warm, --sanitize always" "$w_slow_mc" "$(stage "$out/slow_memcheck.json")"
rm -rf "$PTXBENCH_CACHE"

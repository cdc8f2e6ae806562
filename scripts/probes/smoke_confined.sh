#!/usr/bin/env bash
# A quick look at the confined evaluation on the GPU: build, doctor, then a few controls with
# their records summarised (status, witness, sandbox, cross-checks, stage seconds).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-smoke-out}; mkdir -p "$out"
export PTXBENCH_BUILD_DIR=${PTXBENCH_BUILD_DIR:-build-gpu}
bin="$PTXBENCH_BUILD_DIR/src/cli/ptxbench"
if ! scripts/setup.sh --no-run >"$out/setup.log" 2>&1; then
  grep -E -A8 "error:|Error " "$out/setup.log" | head -80; exit 1
fi
"$bin" doctor 2>&1 | tail -9
export PTXBENCH_CACHE="$out/cache"
summ() {
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); p = r.get('performance') or {}; i = r.get('instructions') or {}
print(f"  {r['status']} {r.get('reason')} :: {r['message'][:300]}")
print(f"  tag {i.get('arch_tag')!r} paper {i.get('upstream_arch_tag')!r} withheld {i.get('tag_withheld')}")
w = p.get('witness') or {}
print(f"  witness {w.get('state')} :: {str(w.get('message', w.get('reason')))[:300]} share={w.get('tensor_share_of_sm')}")
print(f"  revalidation {[(c.get('call'), [v.get('verdict') for k, v in c.items() if isinstance(v, dict)]) for c in (p.get('revalidation') or {}).get('calls', [])]}")
print(f"  cross {json.dumps(i.get('cross_check'))[:400]}")
print(f"  sandbox {json.dumps(r.get('sandbox'))[:500]}")
print(f"  stages {{{', '.join(f'{k}: {v:.2f}' for k, v in r['stage_seconds'].items())}}}")
PY
}
ev() { local name=$1; shift; local t0=$(date +%s.%N)
  "$bin" eval "$@" --json "$out/$name.json" >"$out/$name.txt" 2>&1
  echo "== $name: exit $? in $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"
  [[ -f "$out/$name.json" ]] && summ "$out/$name.json" || tail -5 "$out/$name.txt"; }
ev tiled93 controls/gemm/tiled_correct.cu --task gemm_n128_k2048 --workload M=93



ps -u 65534 -o pid=,args= | head -5
rm -rf "$out/cache"
# Then the adversarial controls through the GPU test (bounded, so the log comes back).
t0=$(date +%s)
PTXBENCH_BIN="$bin" PTXBENCH_ARTIFACTS_DIR="$out" PTXBENCH_SOURCE_DIR="$PWD" \
  timeout "${ADV_TIMEOUT:-330}" "$PTXBENCH_BUILD_DIR/tests/controls_gpu_test" \
  --gtest_filter=Controls.AdversarialControlsGetTheirVerdicts 2>&1 |
  grep -vE "^\[ *(RUN|OK) *\]" | grep -E "\.cu:|tag |Failure|Expected|Which is|actual|PASSED|FAILED|reached|spoiled|left behind" | head -150
echo "== adversarial: $(( $(date +%s) - t0 )) s"

#!/usr/bin/env bash
# The whole GPU suite in one call: build, every test (the `gpu` label included), then the
# measurements that the evaluation core promises. Writes its log and the records it made to
# $OUT (or ./gpu-suite-out), ending with a short table.
#
#   scripts/gpu_suite.sh            everything
#   scripts/gpu_suite.sh tests      build and tests only
#   scripts/gpu_suite.sh measure    only the measurements (builds when needed)
#   scripts/gpu_suite.sh baselines  the vendor baseline tables (cuDNN SDPA at every published
#                                   attention shape), against the published H100 figures
#   scripts/gpu_suite.sh flashinfer issues 23 and 38: the FlashInfer attention-forward baseline,
#                                   each release (0.6.14, the paper's; 0.7.4): the six sm90
#                                   variants of each built (all twelve in parallel) and checked
#                                   against our references (flashinfer_attention_gpu_test), then
#                                   both releases beside cuDNN at the 48 published forward shapes
#                                   (`baseline --baseline all`; needs .tools/flashinfer-<version>,
#                                   from scripts/setup.sh or unpacked from .carry)
#   scripts/gpu_suite.sh agent      the agent loop: the default replay run and a scripted
#                                   multi-trajectory run over HTTP, with their trajectories
#   scripts/gpu_suite.sh pack       the Hopper pack's proof: its examples through all three
#                                   layers (pack_gpu_test), and their records
#   scripts/gpu_suite.sh store      the replay run written to a results store as it happens,
#                                   then its reports (terminal, CSV, HTML) from that store
#   scripts/gpu_suite.sh fixit      Fixit end to end: the replay default into a store (its turn 1
#                                   is a real COMPILE_ERROR), fixit mine, repair (a scripted
#                                   teacher sends the pack's TMA + wgmma GEMM: all three layers),
#                                   reason, export and kernelgen export, with the dataset cards
#   scripts/gpu_suite.sh adversarial  the confinement (issue 19): what the sandbox probe finds,
#                                   every adversarial control (controls/adversarial) and the
#                                   GEMM controls with their verdicts, then the cost of the
#                                   defenses at the headline GEMM against the commit before them
#                                   (BEFORE=<commit>, built beside this one). GTEST_FILTER picks
#                                   the tests (Controls.ConcurrentHonestEvaluationsKeepTheirVerdicts:
#                                   eight honest evaluations at once), PTXBENCH_CONTROL_FILTER the
#                                   controls (docs/gpu-runs/2026-12-06-h100-issue34.md has the runs)
#   scripts/gpu_suite.sh formats    issue 22: upstream (TVM-FFI) kernels judged unchanged, a
#                                   FlashInfer-Bench solution and its trace, the upstream CSV,
#                                   an fp16 GEMM solution on their fp16 definition (issue 38);
#                                   the headline GEMM's wall time with SHA-256 via libcrypto
#   scripts/gpu_suite.sh solutions  issue 38: FlashInfer-Bench solutions on the GPU: an fp16 GEMM
#                                   on their fp16 definition, a solution of two files
#   scripts/gpu_suite.sh throughput issue 37: evaluations per GPU-hour at the headline GEMM, N
#                                   distinct kernels through a pool of `eval`s and through the
#                                   service's workers (scripts/throughput.py; N, POOL, WORKERS,
#                                   MODES); the service needs .carry/deps (scripts/gpu_deps.sh)
#   scripts/gpu_suite.sh serve      the evaluation service: an agent run through `serve` with
#                                   one worker, its overhead against direct `eval`, then two
#                                   workers sharing the GPU (no two GPU stages overlap)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-suite-out}
mkdir -p "$out"
log="$out/gpu-suite.log"
exec > >(tee -a "$log") 2>&1
export PTXBENCH_BUILD_DIR=${PTXBENCH_BUILD_DIR:-build-gpu}
bin="$PTXBENCH_BUILD_DIR/src/cli/ptxbench"
# A failed build prints its last lines into the log instead of vanishing with the quiet output.
build_or_exit() {
  if ! scripts/setup.sh --no-run >"$out/setup.log" 2>&1; then
    echo "== build failed; the errors:"
    grep -E -A12 "error:|Error " "$out/setup.log" | head -n 120
    tail -n 20 "$out/setup.log"
    exit 1
  fi
}
suite_t0=$(date +%s)
echo "== ptxbench GPU suite, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit ${PTXBENCH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>/dev/null
# FlashInfer's headers come packed in .carry (scripts/gpu_deps.sh): in place before any mode
# runs setup.sh, which then finds them and downloads nothing.
scripts/carried_flashinfer.sh || echo "carried_flashinfer failed: FlashInfer's baseline may report missing headers"

if [[ "${1:-}" == "baselines" ]]; then
  build_or_exit
  # Fewer calls than an evaluation (3 + 20, one buffer set): 84 shapes up to S=16384 must fit
  # one device session; the protocol is otherwise the evaluation's own.
  "$bin" baseline --task 'mha_*' --published-shapes --baseline cudnn --warmup 3 --iterations 20 \
    --buffer-sets 1 \
    --timeout 300 --csv "$out/attention-baselines.csv" --json "$out/attention-baselines.json"
  exit $?
fi

if [[ "${1:-}" == "flashinfer" ]]; then
  # Must end within 9 minutes on 16 cores, compiling included: only the binaries this mode runs
  # are built; the GPU test builds the six variants of each release at once (twelve nvcc on
  # sixteen cores, ~2 minutes) into the default cache, where the table's `baseline` calls find
  # them; the table is written one definition at a time, so a late stop keeps what was measured.
  PTXBENCH_BUILD_TARGETS="ptxbench flashinfer_attention_test flashinfer_attention_gpu_test" build_or_exit
  echo "== build: $(( $(date +%s) - suite_t0 )) s"
  du -sh .tools/flashinfer-* 2>/dev/null || echo "no .tools/flashinfer-*: the FlashInfer lines will say so"
  "$bin" doctor 2>&1 | grep -i flashinfer
  t0=$(date +%s)
  # The CPU test's own compile is skipped here: the GPU test builds every variant anyway.
  PTXBENCH_SKIP_FLASHINFER_BUILD=1 ctest --test-dir "$PTXBENCH_BUILD_DIR" --output-on-failure -V \
    -R 'flashinfer_attention' 2>&1 |
    grep -vE "^[0-9]+: \[ *(RUN|OK) *\]" | tail -n 300
  echo "== flashinfer tests (with the builds): $(( $(date +%s) - t0 )) s; $(( $(date +%s) - suite_t0 )) s since the start"
  rm -f "$out/flashinfer-vs-cudnn.csv"
  for def in tasks/definitions/mha_with_lse_*.json; do
    task=$(basename "$def" .json)
    if (( $(date +%s) - suite_t0 > 480 )); then
      echo "== $task: not measured (the mode's 9 minutes are nearly spent)"
      continue
    fi
    # An evaluation's protocol with fewer calls (3 + 20, one buffer set), as `baselines`; cuDNN
    # and every FlashInfer release in one process per task, so each line sits beside cuDNN's.
    "$bin" baseline --task "$task" --published-shapes --baseline all --warmup 3 \
      --iterations 20 --buffer-sets 1 --timeout 120 --csv "$out/fi-$task.csv" \
      --json "$out/fi-$task.json"
    echo "== $task: exit $?, $(( $(date +%s) - suite_t0 )) s since the start"
    if [[ -f "$out/fi-$task.csv" ]]; then
      [[ -f "$out/flashinfer-vs-cudnn.csv" ]] || head -n 1 "$out/fi-$task.csv" >"$out/flashinfer-vs-cudnn.csv"
      tail -n +2 "$out/fi-$task.csv" >>"$out/flashinfer-vs-cudnn.csv"
    fi
  done
  echo "== flashinfer mode: $(( $(date +%s) - suite_t0 )) s; table $out/flashinfer-vs-cudnn.csv"
  exit 0
fi

if [[ "${1:-}" == "pack" ]]; then
  build_or_exit
  t0=$(date +%s)
  PTXBENCH_BIN="$bin" PTXBENCH_ARTIFACTS_DIR="$out" \
    ctest --test-dir "$PTXBENCH_BUILD_DIR" --output-on-failure -V -R pack_gpu_test 2>&1 |
    grep -vE "^[0-9]+: \[ *(RUN|OK) *\]" | tail -n 200
  echo "== pack_gpu_test: $(( $(date +%s) - t0 )) s"
  exit 0
fi

if [[ "${1:-}" == "store" ]]; then
  build_or_exit
  "$bin" doctor | grep -i -E "store|sqlite" || true
  export PTXBENCH_CACHE="$out/cache"
  db="$out/store.db"
  t0=$(date +%s.%N)
  "$bin" run --db "$db" --out "$out/store-run"
  echo "== replay run into $db: exit $?, $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s wall"
  "$bin" report --db "$db" --csv "$out/store-report.csv" --html "$out/store-report.html"
  echo "== report: exit $?"
  rm -rf "$out/cache"
  tar czf "$out/store-run.tar.gz" -C "$out" store-run && rm -rf "$out/store-run"
  exit 0
fi

if [[ "${1:-}" == "fixit" ]]; then
  build_or_exit
  export PTXBENCH_CACHE="$out/cache"
  db="$out/fixit.db" work="$out/fixit"
  rm -rf "$db" "$work" "$out/student"
  t0=$(date +%s.%N)
  "$bin" run --db "$db" --out "$out/student" --quiet
  echo "== student (replay default) into $db: exit $?"
  "$bin" fixit mine --db "$db" --dir "$work"
  echo "== mine: exit $?"
  # Two scripted teachers (scripts/scripted_model_server.py): the repair teacher and the
  # reasoning teacher, each a replay of agent/replay/fixit_*.json.
  for who in repair reason; do
    python3 scripts/scripted_model_server.py --replay "agent/replay/fixit_$who.json" \
      --port-file "$out/$who.port" > "$out/$who-server.log" 2>&1 &
    eval "server_$who=$!"
  done
  for _ in $(seq 50); do [[ -s "$out/repair.port" && -s "$out/reason.port" ]] && break; sleep 0.1; done
  cat > "$out/teachers.json" <<JSON
{"models": [
  {"name": "repair-teacher", "provider": "openai", "model": "scripted-repair",
   "base_url": "http://127.0.0.1:$(cat "$out/repair.port")/v1", "stream": true, "timeout_s": 120},
  {"name": "reason-teacher", "provider": "openai", "model": "scripted-reason",
   "base_url": "http://127.0.0.1:$(cat "$out/reason.port")/v1", "stream": false, "timeout_s": 120}]}
JSON
  "$bin" fixit repair --dir "$work" --teacher repair-teacher --models "$out/teachers.json" \
    --turns 2 --sanitize on-failure --db "$db"
  echo "== repair: exit $?"
  "$bin" fixit reason --dir "$work" --teacher reason-teacher --models "$out/teachers.json"
  echo "== reason: exit $?"
  kill -TERM $server_repair $server_reason; wait $server_repair $server_reason 2>/dev/null
  "$bin" fixit export --dir "$work"
  echo "== fixit export: exit $?"
  "$bin" kernelgen export --db "$db" --out "$work/kernelgen"
  echo "== kernelgen export: exit $?"
  python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
r = json.load(open(f"{w}/repairs.json"))
print("== repairs (per attempt: verdict, layers, speedup)")
for x in r["repairs"]:
    print(f"{x['failure_id']}: kept={x['kept']} ({x['reason']}) speedup={x.get('speedup')} "
          f"{x.get('verification')}/{x.get('arch_tag')}")
    for a in x.get("attempts", []):
        print(f"  turn {a['turn']}: {a['verdict']}; speedup {a.get('speedup')}; layers {json.dumps(a.get('layers'))}")
for kind in ["export", "kernelgen"]:
    c = json.load(open(f"{w}/{kind}/card.json"))
    print(f"== {kind} card: rows {c['rows']}, dropped {c['dropped']}, by_task {json.dumps(c['counts']['by_task'])}")
PY
  cat "$work/export/card.md"
  echo "== fixit suite: $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s wall"
  rm -rf "$out/cache"
  cp "$work/export/card.md" "$out/fixit-card.md"; cp "$work/kernelgen/card.md" "$out/kernelgen-card.md"
  cp "$work/repairs.json" "$out/fixit-repairs.json"
  tar czf "$out/fixit.tar.gz" -C "$out" fixit student && rm -rf "$work" "$out/student"
  exit 0
fi

if [[ "${1:-}" == "adversarial" ]]; then
  before=${BEFORE:-8058d7b}
  cost=${COST:-1}  # COST=0: the controls only, no build of the commit before
  # The commit before the defenses, built beside this one (both at once: 16 cores).
  # The GPU machine gets no .git: a tarball of that commit comes along in .carry/ (made here
  # with `git archive -o .carry/before-<commit>.tar <commit>`, passed with carry: [".carry"]).
  rm -rf /tmp/ptxbench-before
  if [[ -f .carry/before-$before.tar ]]; then
    mkdir -p /tmp/ptxbench-before && tar -xf ".carry/before-$before.tar" -C /tmp/ptxbench-before
    # The service's static libraries for the GPU image (scripts/gpu_deps.sh), when they came.
    [[ -d .carry/deps ]] && mkdir -p /tmp/ptxbench-before/.carry && cp -r .carry/deps /tmp/ptxbench-before/.carry/
    # That commit does not build without SQLite's headers (the GPU image has none): its import
    # command's lambda needs its return type spelled out. Nothing on the measured path changes.
    sed -i 's/return \[o\]() {/return [o]() -> int {/' /tmp/ptxbench-before/src/cli/cmd_import.cc
  else
    git worktree add -f /tmp/ptxbench-before "$before" >/dev/null 2>&1
  fi
  before_pid=
  if [[ $cost == 1 ]]; then
    ( cd /tmp/ptxbench-before && PTXBENCH_BUILD_DIR=build-before scripts/setup.sh --no-run \
      >"$out/setup-before.log" 2>&1 ) &
    before_pid=$!
  fi
  build_or_exit
  # Only that build: a bare `wait` would also wait for the log's tee, which never ends.
  [[ -n $before_pid ]] && wait "$before_pid"
  echo "== built ($(( $(date +%s) - suite_t0 )) s since start)"
  "$bin" doctor 2>&1 | grep -iE "sandbox|landlock|seccomp|namespace|gpm|witness|nvml|clock" || true
  # One honest kernel, fully confined, with Landlock's denials logged to the kernel log: the
  # record's sandbox field and every denial the driver met, if any.
  python3 scripts/probes/audit_on.py; dmesg -C 2>/dev/null
  PTXBENCH_SANDBOX_AUDIT=1 "$bin" eval controls/gemm/tiled_correct.cu --task gemm_n128_k2048 \
    --workload M=93 --sanitize never --no-timing --json "$out/confined-smoke.json" >/dev/null 2>&1
  python3 -c "import json; r = json.load(open('$out/confined-smoke.json')); print('confined smoke:', r['status'], json.dumps(r.get('sandbox')))"
  # An honest kernel that does not pass here would fail every control: stop and show why.
  if ! python3 -c "import json, sys; r = json.load(open('$out/confined-smoke.json')); sys.exit(r['status'] != 'PASSED')"; then
    python3 -c "import json; r = json.load(open('$out/confined-smoke.json')); print(r.get('message'))"
    echo "== the confined smoke did not pass: controls not run"; exit 1
  fi
  echo "== Landlock denials in the kernel log: $(dmesg 2>/dev/null | grep -c 'blockers=')"
  dmesg 2>/dev/null | grep -E 'blockers=' | sed -E 's/^\[[^]]*\] //' | sort | uniq -c | sort -rn | head -20
  t0=$(date +%s)
  # Straight into a file as it goes: a run cut by the time limit still leaves what it had.
  PTXBENCH_BIN="$bin" PTXBENCH_ARTIFACTS_DIR="$out" PTXBENCH_SOURCE_DIR="$PWD" \
    "$PTXBENCH_BUILD_DIR/tests/controls_gpu_test" \
    --gtest_filter="${GTEST_FILTER:-Controls.AdversarialControlsGetTheirVerdicts:Controls.EachGetsItsVerdict}" \
    >"$out/controls.log" 2>&1
  grep -vE "^\[ *(RUN|OK) *\]" "$out/controls.log" | tail -n 150
  echo "== controls: $(( $(date +%s) - t0 )) s"
  # Cost at the headline GEMM: wall seconds per evaluation and the record's stage seconds,
  # alternating before/after, three of each.
  old_bin=/tmp/ptxbench-before/build-before/src/cli/ptxbench
  [[ $cost == 1 ]] && for i in 1 2 3; do
    for which in before after; do
      b=$bin; [[ $which == before ]] && b=$old_bin
      [[ -x $b ]] || { echo "cost: no $which binary"; continue; }
      s0=$(date +%s.%N)
      PTXBENCH_CACHE="$out/cost-cache-$which" "$b" eval controls/gemm/wgmma_tma.cu \
        --task gemm_n7168_k5120 --sanitize never --json "$out/cost-$which-$i.json" >/dev/null 2>&1
      echo "cost $which $i: $(python3 -c "print(round($(date +%s.%N) - $s0, 2))") s wall; $(python3 -c "
import json; r = json.load(open('$out/cost-$which-$i.json')); p = r['performance']
print(r['status'], 'speedup', round(p.get('speedup', 0), 3), 'stages', {k: round(v, 2) for k, v in r['stage_seconds'].items()},
      'witness', (p.get('witness') or {}).get('state'), 'busy/timed', (p.get('witness') or {}).get('busy_over_timed'), (p.get('witness') or {}).get('message', '')[:160])
print('  tag', (r.get('instructions') or {}).get('arch_tag'), 'verification', (r.get('instructions') or {}).get('verification'), 'clocks', json.dumps(p.get('clocks'))[:300])")"
    done
  done
  rm -rf "$out"/cost-cache-*
  git worktree remove -f /tmp/ptxbench-before >/dev/null 2>&1 || rm -rf /tmp/ptxbench-before
  exit 0
fi

if [[ "${1:-}" == "formats" ]]; then
  # Issue 22 on the GPU: upstream-style (TVM-FFI) kernels judged unchanged, a FlashInfer-Bench
  # solution in and its trace out, the upstream per-turn CSV of a replay run; then the headline
  # GEMM's wall time with SHA-256 through libcrypto (three warm evaluations).
  build_or_exit
  "$bin" doctor 2>&1 | grep -iE "tvm|sha" || true
  export PTXBENCH_CACHE="$out/cache"
  # The headline GEMM and the attention control at its verdict's shape (a CUDA-core attention
  # kernel at the headline S would spend the call's time budget on slow calls).
  for c in "controls/upstream/gemm_tvm_ffi.cu gemm_n7168_k5120 M=8192" \
           "controls/upstream/mha_with_lse_tvm_ffi.cu mha_with_lse_d64 S=2048"; do
    set -- $c
    [[ -f $1 ]] || { echo "formats: no $1"; continue; }
    name=$(basename "$1" .cu)
    "$bin" eval "$1" --task "$2" --workload "$3" --quiet --json "$out/$name.json"
    echo "== $name on $2: exit $?"
    python3 -c "import json; r = json.load(open('$out/$name.json')); i = r.get('instructions') or {}; p = r.get('performance') or {}
print(r['status'], r.get('reason'), '|', r['message'][:300]); print('  abi', (r.get('candidate') or {}).get('abi'), '| verification', i.get('verification'), '| tag', i.get('arch_tag'), '| speedup', p.get('speedup'))"
  done
  python3 - "$out" <<'PY'
import json, sys
src = open("controls/gemm/tiled_correct.cu").read()
json.dump({"name": "tiled_correct", "definition": "gemm_n128_k2048", "author": "ptxbench",
           "spec": {"language": "cuda", "binding": "tvm-ffi", "target_hardware": ["H100"],
                    "entry_point": "kernel.cu::run", "dependencies": [],
                    "destination_passing_style": True},
           "sources": [{"path": "kernel.cu", "content": src}]}, open(sys.argv[1] + "/solution.json", "w"))
PY
  "$bin" eval "$out/solution.json" --task gemm_n128_k2048 --workload M=93 --quiet \
    --json "$out/solution-record.json" --trace "$out/solution-trace.jsonl"
  echo "== solution: exit $?; trace:"; cat "$out/solution-trace.jsonl"
  "$bin" run --out "$out/replay-run" --quiet
  "$bin" report --runs "$out/replay-run" --upstream-csv "$out/upstream-turns.csv" --no-published >/dev/null
  echo "== upstream CSV of the replay run:"; cat "$out/upstream-turns.csv"
  for i in 1 2 3; do
    s0=$(date +%s.%N)
    "$bin" eval controls/gemm/wgmma_tma.cu --task gemm_n7168_k5120 --sanitize never --quiet \
      --json "$out/cost-libcrypto-$i.json"
    echo "cost libcrypto $i: $(python3 -c "print(round($(date +%s.%N) - $s0, 2))") s wall; $(python3 -c "
import json; r = json.load(open('$out/cost-libcrypto-$i.json')); print(r['status'], 'speedup', round(r['performance'].get('speedup', 0), 3), 'total', round(r['stage_seconds']['total'], 2))")"
  done
  # An upstream experiment folder, replayed turn by turn through our layers: its first reply
  # (upstream's turn 0, kernel_t0.cu) does not compile, its second (kernel_t1.cu) is the
  # upstream GEMM control, unchanged. Upstream numbers replies from 0, and its extractor takes
  # ```cpp blocks only, so the replies carry them.
  exp="$out/upstream-exp"
  mkdir -p "$exp/trajectories" "$exp/kernels/exp_001"
  printf 'void run( {\n' > "$exp/kernels/exp_001/kernel_t0.cu"
  cp controls/upstream/gemm_tvm_ffi.cu "$exp/kernels/exp_001/kernel_t1.cu"
  python3 - "$exp" <<'PY'
import json, sys
obs = lambda ok, s: {"role": "user", "content": "<returncode>0</returncode>",
                     "extra": {"returncode": 0, "all_passed": ok, "min_speedup": s, "target_met": False}}
json.dump({"trajectory_format": "mini-swe-agent-1.1",
           "info": {"exit_status": "Submitted",
                    "config": {"model": {"model_name": "upstream-model"}, "definition": "gemm_n128_k2048"}},
           "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "Write a GEMM."},
                        {"role": "assistant", "content": "```cpp\nvoid run( {\n```"}, obs(False, 0),
                        {"role": "assistant",
                         "content": "```cpp\n" + open("controls/upstream/gemm_tvm_ffi.cu").read() + "```"},
                        obs(True, 0.2)]},
          open(sys.argv[1] + "/trajectories/exp_001.json", "w"))
PY
  "$bin" run --upstream "$exp" --out "$out/upstream-run" --quiet
  echo "== upstream replay: exit $?"
  python3 -c "import json; r = json.load(open('$out/upstream-run/run.json')); print(json.dumps(r.get('upstream'), indent=1)[:1500])"
  find "$out/upstream-run" -name '*.json' | head -20
  "$0" solutions
  rm -rf "$out/cache" "$out/replay-run"
  exit 0
fi

if [[ "${1:-}" == "solutions" ]]; then
  # Issue 38: FlashInfer-Bench solutions as their project writes them. Its GEMM definitions are
  # fp16 (gemm_f16): the fixture set's GEMM made fp16, and an fp16 TVM-FFI solution whose entry
  # point is not named run. Then a solution of two files (a header and the entry file), bundled
  # into one translation unit.
  build_or_exit
  export PTXBENCH_CACHE="$out/cache"
  rm -rf "$out/f16-set" && cp -r tests/fixtures/flashinfer-trace-set "$out/f16-set"
  sed -i 's/bfloat16/float16/g' "$out/f16-set/definitions/gemm/gemm_n256_k512.json"
  python3 - "$out/f16-set/solution.json" <<'PY'
import json, sys
json.dump({"name": "naive_f16", "definition": "gemm_n256_k512",
           "spec": {"language": "cuda", "binding": "tvm-ffi", "entry_point": "kernel.cu::gemm_fp16"},
           "sources": [{"path": "kernel.cu", "content": open("tests/fixtures/fp16-gemm/kernel.cu").read()}]},
          open(sys.argv[1], "w"))
PY
  "$bin" eval "$out/f16-set/solution.json" --tasks-dir "$out/f16-set" --task gemm_n256_k512 \
    --quiet --json "$out/f16-gemm.json" --trace "$out/f16-gemm-trace.jsonl"
  echo "== fp16 gemm solution: exit $?"
  python3 -c "import json; r = json.load(open('$out/f16-gemm.json')); p = r.get('performance') or {}
print(r['status'], r.get('reason'), '|', r['message'][:300]); print('  baseline', (p.get('baseline') or {}).get('name'), json.dumps((p.get('baseline') or {}).get('library'))[:200], '| speedup', p.get('speedup'))"
  python3 - "$out/multi-file.json" <<'PY'
import json, sys
src = open("controls/upstream/gemm_tvm_ffi.cu").read()
json.dump({"name": "two_files", "definition": "gemm_n128_k2048",
           "spec": {"language": "cuda", "binding": "tvm-ffi", "entry_point": "kernel.cu::run"},
           "sources": [{"path": "kernel.h", "content": "#pragma once\n#define TWO_FILES_FROM_HEADER 1\n"},
                       {"path": "kernel.cu", "content": '#include "kernel.h"\n'
                        "static_assert(TWO_FILES_FROM_HEADER == 1, \"the header was bundled\");\n" + src}]},
          open(sys.argv[1], "w"))
PY
  "$bin" eval "$out/multi-file.json" --task gemm_n128_k2048 --workload M=93 --quiet \
    --json "$out/multi-file-record.json" --trace "$out/multi-file-trace.jsonl"
  echo "== two-file solution: exit $?"
  python3 -c "import json; r = json.load(open('$out/multi-file-record.json')); c = r.get('candidate') or {}
print(r['status'], r.get('reason'), '|', r['message'][:300]); print('  abi', c.get('abi'), '| solution', json.dumps(c.get('solution'))[:300])"
  rm -rf "$out/cache"
  exit 0
fi

if [[ "${1:-}" == "throughput" ]]; then
  build_or_exit
  echo "== built ($(( $(date +%s) - suite_t0 )) s since start)"
  python3 scripts/throughput.py --bin "$bin" --n "${N:-12}" --pool "${POOL:-4}" \
    --workers "${WORKERS:-2}" --modes "${MODES:-cli,serve}" --out "$out/throughput"
  exit $?
fi

if [[ "${1:-}" == "trace" ]]; then
  # Issue 37's diagnosis: the CLI pool with every evaluation's GPU holds, children and witness
  # windows traced (PTXBENCH_GPU_TRACE), with the GPU gate on and then off (GATES), and who was
  # on the GPU during each window (scripts/gpu_trace_report.py).
  build_or_exit
  echo "== built ($(( $(date +%s) - suite_t0 )) s since start)"
  # RUNS: gate:mode pairs (mode cli or serve; serve with WORKERS workers).
  for run in ${RUNS:-on:cli off:serve}; do
    gate=${run%%:*} mode=${run#*:} tag=${run/:/-}
    trace="$(cd "$out" && pwd)/trace-$tag.jsonl"  # absolute: the evaluations run elsewhere
    rm -f "$trace"
    # The GPU's own counters beside the holds, every ~120 ms (lagging the GPU by 150-200 ms).
    PTXBENCH_GPU_TRACE="$trace" "$bin" __gpm_trace 400 &
    sampler=$!
    PTXBENCH_GPU_GATE=$gate PTXBENCH_GPU_TRACE="$trace" \
      python3 scripts/throughput.py --bin "$bin" --n "${N:-16}" --pool "${POOL:-8}" \
        --workers "${WORKERS:-8}" --modes "$mode" --out "$out/throughput-$tag"
    kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
    python3 scripts/gpu_trace_report.py "$trace" > "$out/trace-$tag.txt"
    xz -k "$trace"
    tail -n 1 "$out/trace-$tag.txt"
    echo "== $tag done ($(( $(date +%s) - suite_t0 )) s since start)"
  done
  exit 0
fi

if [[ "${1:-}" == "serve" ]]; then
  build_or_exit
  export PTXBENCH_CACHE="$out/cache"
  port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
  url="http://127.0.0.1:$port"
  start_service() {  # start_service LOG ARGS...: ptxbench serve in the background, until healthy
    local logf=$1; shift
    "$bin" serve --port "$port" --cache-dir "$PTXBENCH_CACHE" "$@" > "$out/$logf" 2>&1 &
    service=$!
    for _ in $(seq 300); do
      python3 -c "import urllib.request; urllib.request.urlopen('$url/v1/health', timeout=1)" 2>/dev/null && break
      sleep 0.2
    done
    python3 -c "import json, urllib.request; print(json.dumps(json.load(urllib.request.urlopen('$url/v1/health'))))" \
      | tee "$out/health-$logf.json"
  }
  stop_service() { kill -TERM "$service"; wait "$service" 2>/dev/null; }

  # 1. One worker on the GPU serves an agent run (the replay default).
  start_service serve-1worker.log --db "$out/serve.db" --gpus all --workers 1
  t0=$(date +%s.%N)
  "$bin" run --evaluator "$url" --out "$out/serve-run"
  echo "== agent run through the service: exit $?, $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s wall"
  python3 - "$out" <<'PY'
import glob, json, sys
out = sys.argv[1]
for f in sorted(glob.glob(f"{out}/serve-run/trajectories/*.json")):
    t = json.load(open(f))
    print(f"{t['info']['id']}: {t['info']['exit_status']}")
    for x in t["info"]["turns"]:
        rec = json.load(open(f"{out}/serve-run/{x['evaluation_file']}")) if x["evaluation_file"] else {}
        ins = rec.get("instructions") or {}; perf = rec.get("performance") or {}; svc = rec.get("service") or {}
        print(f"  turn {x['turn']}: {x['outcome']:<10} {x['status']:<14} speedup {perf.get('speedup', '-')!s:<8.6} "
              f"instructions {ins.get('verification', '-')}/{ins.get('arch_tag') or '-'} "
              f"eval {x['evaluation_seconds']:.1f} s, worker {svc.get('worker')}, prepare {svc.get('prepare_seconds', 0):.2f} s")
PY
  # 2. The service's per-evaluation overhead against direct `ptxbench eval` (warm caches).
  python3 scripts/serve_gpu_check.py overhead "$out" "$url" "$bin" 5 \
    controls/gemm/tiled_correct.cu controls/gemm/wgmma_tma.cu
  stop_service

  # 3. Two workers sharing the one GPU: builds in parallel, GPU stages one at a time.
  start_service serve-2workers.log --db "$out/serve2.db" --gpus 0 --workers 2
  python3 scripts/serve_gpu_check.py mix "$out" "$url"
  stop_service
  rm -rf "$out/cache"
  # One archive: a device call brings back only a few files, and the run folder is deep.
  (cd "$out" && tar czf serve-records.tar.gz serve-run ./*.json ./*.log ./*.db &&
    rm -rf serve-run ./*.json serve-*.log ./*.db)
  exit 0
fi

if [[ "${1:-}" == "agent" ]]; then
  # The agent loop on the GPU: the bundled default (the replay, as the README's first command
  # runs it), then a scripted multi-trajectory run over real HTTP (scripts/
  # scripted_model_server.py; a 429 every 3rd request) on the headline GEMM and attention.
  build_or_exit
  export PTXBENCH_CACHE="$out/cache"
  t0=$(date +%s.%N)
  "$bin" run --out "$out/agent-replay"
  echo "== replay run: exit $?, $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s wall"
  python3 scripts/scripted_model_server.py --replay agent/replay/default.json \
    --replay agent/replay/attention.json --port-file "$out/server.port" --fault-every 3 \
    > "$out/scripted-server.log" 2>&1 &
  server=$!
  for _ in $(seq 50); do [[ -s "$out/server.port" ]] && break; sleep 0.1; done
  cat > "$out/models.json" <<JSON
{"models": [{"name": "scripted", "provider": "openai", "model": "scripted-model",
             "base_url": "http://127.0.0.1:$(cat "$out/server.port")/v1", "stream": true,
             "timeout_s": 120, "max_retries": 6}]}
JSON
  t0=$(date +%s.%N)
  "$bin" run --model scripted --models "$out/models.json" --task gemm_n7168_k5120 \
    --task mha_with_lse_d128 --trajectories 2 --concurrency 4 --turns 3 --target-speedup 0.5 \
    --pack none --sanitize on-failure --out "$out/agent-scripted"
  echo "== scripted run: exit $?, $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s wall"
  kill -TERM $server; wait $server 2>/dev/null; cat "$out/scripted-server.log"
  python3 - "$out" <<'PY'
import glob, json, sys
out = sys.argv[1]
print("== trajectories (turn: outcome, status, speedup vs the vendor baseline, TFLOP/s, attempts)")
for run in ["agent-replay", "agent-scripted"]:
    for f in sorted(glob.glob(f"{out}/{run}/trajectories/*.json")):
        t = json.load(open(f))
        print(f"{run}/{t['info']['id']}: {t['info']['exit_status']}")
        for x in t["info"]["turns"]:
            rec = json.load(open(f"{out}/{run}/{x['evaluation_file']}")) if x["evaluation_file"] else {}
            ins = rec.get("instructions") or {}
            perf = rec.get("performance") or {}
            print(f"  turn {x['turn']}: {x['outcome']:<10} {x['status']:<14} "
                  f"speedup {perf.get('speedup', '-')!s:<8.6} TFLOP/s {perf.get('tflops', '-')!s:<8.6} "
                  f"instructions {ins.get('verification', '-')}/{ins.get('arch_tag') or '-'} "
                  f"attempts {x['attempts']} model {x['model_seconds']:.2f} s eval {x['evaluation_seconds']:.1f} s "
                  f"overhead {x['overhead_seconds'] * 1e3:.2f} ms")
PY
  rm -rf "$out/cache"
  # One archive: the run folders are deeper than what a device call brings back.
  tar czf "$out/agent-runs.tar.gz" -C "$out" agent-replay agent-scripted && rm -rf "$out"/agent-*/
  exit 0
fi

if [[ "${1:-}" != "measure" ]]; then
  t0=$(date +%s)
  scripts/setup.sh --no-run || exit 1
  echo "== build: $(( $(date +%s) - t0 )) s"
  "$bin" doctor
  ctest --test-dir "$PTXBENCH_BUILD_DIR" --output-on-failure -V -L gpu 2>&1 | grep -vE "^[0-9]+: \[ *(RUN|OK) *\]" | tail -n 400
  ctest --test-dir "$PTXBENCH_BUILD_DIR" -LE gpu 2>&1 | tail -n 5
  [[ "${1:-}" == "tests" ]] && exit 0
else
  build_or_exit
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
for i in 1 2 3 4 5; do
  w_rep[$i]=$(wall "$bin" eval controls/gemm/tiled_correct.cu "${headline[@]}" --sanitize never --json "$out/repeat$i.json")
done
w_wgmma=$(wall "$bin" eval controls/gemm/wgmma_tma.cu "${headline[@]}" --sanitize never --json "$out/wgmma_tma.json")
w_token=$(wall "$bin" eval controls/gemm/wgmma_token.cu "${headline[@]}" --sanitize never --json "$out/wgmma_token.json")
w_slow=$(wall "$bin" eval controls/gemm/naive_correct.cu "${headline[@]}" --sanitize never --warmup 1 --iterations 5 --json "$out/slow.json")
w_slow_to=$(wall "$bin" eval controls/gemm/naive_correct.cu "${headline[@]}" --sanitize never --timing-timeout 8 --json "$out/slow_timeout.json")

stage() { python3 -c "import json,sys; d=json.load(open('$1')); print(d['status'], ' '.join(f'{k}={v:.2f}' for k,v in sorted(d['stage_seconds'].items())))"; }
echo "== measurements at gemm_n7168_k5120 M=8192 (wall s; stage seconds from the record)"
printf '%-44s %8s  %s\n' "case" "wall" "status and stages"
printf '%-44s %8.2f  %s\n' "tiled, cold caches, --sanitize never" "$w_cold" "$(stage "$out/cold.json")"
printf '%-44s %8.2f  %s\n' "tiled, warm caches, --sanitize never" "$w_warm" "$(stage "$out/warm.json")"
for i in 1 2 3 4 5; do
  printf '%-44s %8.2f  %s\n' "tiled, warm, repeat $i" "${w_rep[$i]}" "$(stage "$out/repeat$i.json")"
done
printf '%-44s %8.2f  %s\n' "wgmma_tma, --sanitize never (with profile)" "$w_wgmma" "$(stage "$out/wgmma_tma.json")"
printf '%-44s %8.2f  %s\n' "wgmma_token, --sanitize never (with profile)" "$w_token" "$(stage "$out/wgmma_token.json")"
printf '%-44s %8.2f  %s\n' "naive (slow), 1+5 timed calls" "$w_slow" "$(stage "$out/slow.json")"
printf '%-44s %8.2f  %s\n' "naive (slow), --timing-timeout 8" "$w_slow_to" "$(stage "$out/slow_timeout.json")"
python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
def perf(name):
    return json.load(open(f"{out}/{name}.json"))
print("== timing (medians in us; speedup = baseline median / candidate median, range from p10/p90)")
for name in ["cold", "warm", "wgmma_tma", "wgmma_token", "slow", "slow_timeout"]:
    d = perf(name); p = d.get("performance", {})
    c = p.get("candidate", {}); b = p.get("baseline", {})
    print(f"{name:14s} {d['status']:14s} cand {c.get('median',0)*1e6:10.1f} (p10 {c.get('p10',0)*1e6:.1f}, p90 {c.get('p90',0)*1e6:.1f}, n={c.get('count')})"
          f" | base {b.get('median',0)*1e6:8.1f} ({b.get('tflops',0):.0f} TFLOP/s, drift {b.get('drift',0)*100:+.2f}%)"
          f" | speedup {p.get('speedup')} {p.get('speedup_range')} | {p.get('tflops',0):.1f} TFLOP/s, {p.get('percent_of_peak',0):.1f}% of peak {p.get('peak_tflops',0):.0f}")
    if name == "slow_timeout": print("   ", d["message"])
    if name == "cold": print("    clocks:", json.dumps(p.get("clocks", {}))[:600]); print("    peak:", p.get("peak_source"))
meds = [perf(f"repeat{i}")["performance"]["baseline"]["median"] for i in range(1, 6)]
cands = [perf(f"repeat{i}")["performance"]["candidate"]["median"] for i in range(1, 6)]
for label, xs in [("baseline (cuBLASLt)", meds), ("tiled candidate", cands)]:
    m = statistics.mean(xs); cv = statistics.stdev(xs) / m
    print(f"five evaluations, {label}: medians " + ", ".join(f"{x*1e6:.1f}" for x in xs) + f" us; CV {cv*100:.2f}%")
PY

# --- fidelity: our CUPTI span of the headline baseline against Nsight Compute's
# gpu__time_duration for the same cold-L2 calls, in a process without CUPTI activity ---
export PTXBENCH_BIN="$PWD/$bin" PTXBENCH_SOURCE_DIR="$PWD"
fid_bin="$PTXBENCH_BUILD_DIR/tests/timing_fidelity_gpu_test"
"$fid_bin" --gtest_filter='*CuptiSpan*' > "$out/fidelity-cupti.txt" 2>&1
PTXBENCH_UNDER_NCU=1 ncu --clock-control none --cache-control all \
  --kernel-name 'regex:^(?!.*ptxbench)' --metrics gpu__time_duration.sum --csv \
  "$fid_bin" --gtest_filter='*UnderNsight*' > "$out/fidelity-ncu.csv" 2> "$out/fidelity-ncu.err"
python3 - "$out" <<'PY'
import csv, io, re, statistics, sys
out = sys.argv[1]
cupti = [float(m.group(1)) for m in re.finditer(r"CUPTI median ([0-9.]+) us", open(f"{out}/fidelity-cupti.txt").read())]
events = [float(m.group(1)) for m in re.finditer(r"events median ([0-9.]+) us", open(f"{out}/fidelity-cupti.txt").read())]
rows = [l for l in open(f"{out}/fidelity-ncu.csv") if l.startswith('"')]
scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}
ncu = []
for r in csv.DictReader(io.StringIO("".join(rows))):
    if r.get("Metric Name") == "gpu__time_duration.sum":
        ncu.append(float(r["Metric Value"].replace(",", "")) * scale[r["Metric Unit"]])
ncu = ncu[5:]  # the first calls warm up
print("== fidelity at gemm_n7168_k5120 (cuBLASLt, cold L2)")
if not cupti or not ncu:
    print("fidelity: missing data (cupti rounds %d, ncu kernels %d); see fidelity-*.txt/.csv/.err" % (len(cupti), len(ncu)))
else:
    c = statistics.median(cupti); n = statistics.median(ncu)
    print(f"CUPTI span median of 5 rounds: {c:.2f} us; Nsight Compute gpu__time_duration median of {len(ncu)} calls: {n:.2f} us; difference {100*(c/n-1):+.2f}%")
    print(f"CUDA events median of 5 rounds: {statistics.median(events):.2f} us ({100*(statistics.median(events)/c-1):+.2f}% vs CUPTI)")
    print(f"CV of the five CUPTI round medians: {100*statistics.stdev(cupti)/statistics.mean(cupti):.3f}%")
    print("within 3%:", abs(c / n - 1) < 0.03)
PY
rm -rf "$PTXBENCH_CACHE"

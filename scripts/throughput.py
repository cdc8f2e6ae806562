#!/usr/bin/env python3
"""Evaluations per GPU-hour (issue 37): N distinct kernels through the ways users run many.

Each kernel is the same source with a nonce comment of its own, so each one builds (the build
cache is keyed by the source) while its verdict and speed must be those of the kernel alone.
The script first evaluates the kernel once alone (that also fills the reference cache, as a
long run's first evaluation does), then runs the N kernels through each mode asked for:

  cli    a pool of `ptxbench eval` processes (--pool at once) sharing one GPU
  serve  `ptxbench serve` with --workers workers on one GPU, fed by --pool `ptxbench submit`s

and prints, per mode: evaluations per GPU-hour, p50/p95 latency per evaluation, the GPU's busy
share (nvidia-smi's utilization, sampled), the share of the wall time some evaluation held the
GPU lock, and whether every verdict equals the alone one (status, reason, verification, tag),
with the speedups beside the alone run's range. Writes summary.json and every record to --out.

  scripts/throughput.py --bin build-gpu/src/cli/ptxbench --n 16 --pool 4 --modes cli,serve
"""
import argparse
import concurrent.futures as cf
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

# The stages an evaluation ran holding the GPU's lock, for records written before the lock
# was held child by child (they have no gpu_alone): timing with its baselines, revalidation
# and witness, the profile, the cross-check, all alone.
LOCKED_STAGE_PREFIXES = ("timing", "profile", "cross_check")


def verdict_of(record):
    ins = record.get("instructions") or {}
    return (record.get("status"), record.get("reason", ""), ins.get("verification"),
            ins.get("arch_tag"))


def speedup_of(record):
    return (record.get("performance") or {}).get("speedup")


def witness_of(record):
    return (record.get("performance") or {}).get("witness") or {}


def locked_seconds(record):
    """Seconds the evaluation held the GPU alone (the floor of a pool's throughput)."""
    stages = record.get("stage_seconds") or {}
    if "gpu_alone" in stages:
        return stages["gpu_alone"]
    return sum(v for k, v in stages.items() if k.startswith(LOCKED_STAGE_PREFIXES))


def shared_seconds(record):
    return (record.get("stage_seconds") or {}).get("gpu_shared", 0.0)


def mean_stages(records):
    keys = sorted({k for r in records for k in (r.get("stage_seconds") or {})})
    return {k: round(statistics.mean((r.get("stage_seconds") or {}).get(k, 0.0) for r in records), 2)
            for k in keys} if records else {}


def percentile(values, q):
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


class GpuSampler:
    """nvidia-smi's utilization.gpu every half second, in a thread, until stopped."""

    def __init__(self):
        self.samples, self._stop = [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(0.5):
            try:
                out = subprocess.run(
                    ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                     "-i", "0"], capture_output=True, text=True, timeout=5).stdout
                self.samples.append(float(out.split()[0]))
            except (OSError, ValueError, IndexError, subprocess.SubprocessError):
                pass  # no nvidia-smi: the share is reported as unknown

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def busy_share(self):
        return statistics.mean(self.samples) / 100 if self.samples else None


def make_kernels(source_path, n, folder):
    source = open(source_path).read()
    paths = []
    for i in range(n):
        p = os.path.join(folder, f"k{i:04d}.cu")
        with open(p, "w") as f:
            f.write(source + f"\n// throughput nonce {i} {uuid.uuid4().hex}\n")
        paths.append(p)
    return paths


def timed(cmd, env, json_path):
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    try:
        record = json.load(open(json_path))
    except (OSError, ValueError):
        record = {"status": "NO_RECORD", "message": (proc.stderr or proc.stdout)[-500:]}
    return seconds, record


def eval_cmd(args, kernel, json_path):
    return [args.bin, "eval", kernel, "--task", args.task, "--json", json_path]


def run_pool(commands, pool, env):
    """Runs (cmd, json_path) pairs, `pool` at once: (wall seconds, [(latency, record)])."""
    t0 = time.monotonic()
    with cf.ThreadPoolExecutor(max_workers=pool) as ex:
        results = list(ex.map(lambda c: timed(c[0], env, c[1]), commands))
    return time.monotonic() - t0, results


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url, seconds, server):
    import urllib.request
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and server.poll() is None:
        try:
            with urllib.request.urlopen(url + "/v1/health", timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.3)
    return False


def mode_cli(args, kernels, env, out):
    cmds = [(eval_cmd(args, k, os.path.join(out, f"cli-{i:04d}.json")),
             os.path.join(out, f"cli-{i:04d}.json")) for i, k in enumerate(kernels)]
    return run_pool(cmds, args.pool, env)


def mode_serve(args, kernels, env, out):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    serve_log = open(os.path.join(out, "serve.log"), "w")
    os.makedirs(os.path.join(out, "workers"), exist_ok=True)
    server = subprocess.Popen(
        [args.bin, "serve", "--port", str(port), "--workers", str(args.workers), "--gpus", args.gpus,
         "--db", os.path.join(out, "serve.db"), "--worker-dir", os.path.join(out, "workers"),
         "--cache-dir", env["PTXBENCH_CACHE"]],
        env=env, stdout=serve_log, stderr=subprocess.STDOUT)
    try:
        if not wait_healthy(url, 60, server):
            serve_log.flush()
            raise RuntimeError("the service did not become healthy: " +
                               open(serve_log.name).read()[-600:])
        cmds = [([args.bin, "submit", k, "--task", args.task, "--evaluator", url, "--json",
                  os.path.join(out, f"serve-{i:04d}.json")],
                 os.path.join(out, f"serve-{i:04d}.json")) for i, k in enumerate(kernels)]
        return run_pool(cmds, args.pool, env)
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()


def summarize(name, wall, results, alone, busy):
    latencies = [s for s, _ in results]
    records = [r for _, r in results]
    same = [verdict_of(r) == verdict_of(alone) for r in records]
    speedups = [s for s in map(speedup_of, records) if s is not None]
    locked = sum(locked_seconds(r) for r in records)
    shared = sum(shared_seconds(r) for r in records)
    return {
        "mode": name,
        "evaluations": len(records),
        "wall_s": round(wall, 2),
        "evaluations_per_gpu_hour": round(len(records) / wall * 3600, 1),
        "latency_p50_s": round(percentile(latencies, 0.5) or 0, 2),
        "latency_p95_s": round(percentile(latencies, 0.95) or 0, 2),
        "gpu_busy_share": None if busy is None else round(busy, 3),
        "gpu_lock_held_share": round(locked / wall, 3),
        "locked_s_per_evaluation": round(locked / max(1, len(records)), 2),
        "shared_s_per_evaluation": round(shared / max(1, len(records)), 2),
        # Where an evaluation's time goes when others run beside it (against the alone
        # evaluation's own stage_seconds): the stage that grows is what the pool waits for.
        "stage_seconds_mean": mean_stages(records),
        "verdicts_equal_to_alone": sum(same),
        "verdicts_differing": [verdict_of(r) for r, ok in zip(records, same) if not ok],
        "speedup_min": min(speedups) if speedups else None,
        "speedup_median": statistics.median(speedups) if speedups else None,
        "speedup_max": max(speedups) if speedups else None,
        # The witness's busy/timed ratio per evaluation: how close honest kernels come to its
        # threshold when evaluations overlap.
        "witness_busy_over_timed": sorted(
            round(w["busy_over_timed"], 3) for w in map(witness_of, records)
            if isinstance(w.get("busy_over_timed"), (int, float))),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/src/cli/ptxbench")
    ap.add_argument("--kernel", default="controls/gemm/wgmma_tma.cu")
    ap.add_argument("--task", default="gemm_n7168_k5120")
    ap.add_argument("--n", type=int, default=16, help="distinct kernels per mode")
    ap.add_argument("--pool", type=int, default=4, help="evaluations (or submits) at once")
    ap.add_argument("--workers", type=int, default=2, help="the service's workers on the GPU")
    ap.add_argument("--gpus", default="all", help="the service's --gpus (one GPU: all)")
    ap.add_argument("--modes", default="cli,serve")
    ap.add_argument("--out", default="throughput-out")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    out = os.path.abspath(args.out)
    cache = tempfile.mkdtemp(prefix="ptxbench-throughput-cache-")
    env = dict(os.environ, PTXBENCH_CACHE=cache)
    try:
        alone_json = os.path.join(out, "alone.json")
        alone_s, alone = timed(eval_cmd(args, args.kernel, alone_json), env, alone_json)
        perf = alone.get("performance") or {}
        summary = {"kernel": args.kernel, "task": args.task, "alone": {
            "verdict": verdict_of(alone), "seconds": round(alone_s, 2),
            "speedup": perf.get("speedup"), "speedup_range": perf.get("speedup_range"),
            "stage_seconds": alone.get("stage_seconds")}, "modes": []}
        print(f"alone: {verdict_of(alone)} speedup {perf.get('speedup')} in {alone_s:.1f} s",
              flush=True)
        for mode in args.modes.split(","):
            folder = tempfile.mkdtemp(prefix=f"kernels-{mode}-", dir=out)
            kernels = make_kernels(args.kernel, args.n, folder)
            with GpuSampler() as sampler:
                wall, results = {"cli": mode_cli, "serve": mode_serve}[mode](args, kernels, env,
                                                                             out)
            s = summarize(mode, wall, results, alone, sampler.busy_share())
            summary["modes"].append(s)
            print(json.dumps(s), flush=True)
        json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=2)
        ok = all(m["verdicts_equal_to_alone"] == m["evaluations"] for m in summary["modes"])
        return 0 if ok else 1
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

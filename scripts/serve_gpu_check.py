#!/usr/bin/env python3
"""The GPU checks of the evaluation service (scripts/gpu_suite.sh serve), standard library only.

  serve_gpu_check.py overhead OUT URL BIN REPS KERNEL...   direct `ptxbench eval` against the
      service (`ptxbench submit`), side by side, REPS times per kernel, alternating the order
  serve_gpu_check.py throughput URL JOBS                    JOBS distinct kernels that build
      (nvcc) submitted at once: wall time and builds per second (the CPU stage's throughput)
  serve_gpu_check.py mix OUT URL                            a mix of correct, crashing and
      hanging controls submitted at once to a service whose workers share one GPU; checks that
      no two GPU stages overlapped
"""
import json, os, statistics, subprocess, sys, threading, time, urllib.request

TASK = "gemm_n7168_k5120"


def http(url, body=None, timeout=900):
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def wait_record(url, job_id, limit=1800):
    end = time.time() + limit
    while time.time() < end:
        status, body = http(f"{url}/v1/evaluations/{job_id}?wait=30")
        if status == 200:
            return body
    raise SystemExit(f"no record for {job_id} after {limit} s")


def overhead(out, url, binary, reps, kernels):
    rows = []
    for kernel in kernels:
        name = os.path.basename(kernel)[:-3]
        for rep in range(reps):
            order = ["direct", "service"] if rep % 2 == 0 else ["service", "direct"]
            for way in order:
                rec_path = f"{out}/overhead-{name}-{way}-{rep}.json"
                cmd = ([binary, "eval", kernel, "--task", TASK, "--json", rec_path, "--quiet"]
                       if way == "direct" else
                       [binary, "submit", kernel, "--task", TASK, "--evaluator", url, "--json", rec_path])
                t0 = time.time()
                subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                t1 = time.time()
                rec = json.load(open(rec_path))
                row = {"kernel": name, "rep": rep, "way": way, "wall_s": t1 - t0,
                       "status": rec["status"], "evaluate_s": rec["stage_seconds"]["total"],
                       "service": rec.get("service")}
                if way == "service":
                    # Where the client's wall time went, from the job's own timestamps (one
                    # host, one clock): submit, queue, prepare, the GPU stage, result to client.
                    _, job = http(f"{url}/v1/evaluations/{rec['service']['job_id']}/job")
                    row["phases"] = {
                        "to_submitted": job["submitted_at"] - t0,
                        "queued": job["claimed_at"] - job["submitted_at"],
                        "prepare": job["gpu_started_at"] - job["claimed_at"],
                        "gpu_stage": job["gpu_ended_at"] - job["gpu_started_at"],
                        "to_client": t1 - job["gpu_ended_at"]}
                rows.append(row)
    json.dump(rows, open(f"{out}/overhead.json", "w"), indent=1)
    print("== per-evaluation overhead of the service over a direct `ptxbench eval` (wall s)")
    summary = {}
    for kernel in dict.fromkeys(r["kernel"] for r in rows):
        d = [r["wall_s"] for r in rows if r["kernel"] == kernel and r["way"] == "direct"]
        s = [r["wall_s"] for r in rows if r["kernel"] == kernel and r["way"] == "service"]
        # What the service adds around the pipeline itself: the client's wall time minus the
        # worker's Evaluate (queue, HTTP, long poll, source write, prepared build check).
        added = [r["wall_s"] - r["evaluate_s"] for r in rows if r["kernel"] == kernel and r["way"] == "service"]
        statuses = sorted({r["status"] for r in rows if r["kernel"] == kernel})
        md, ms = statistics.median(d), statistics.median(s)
        summary[kernel] = (ms / md - 1)
        print(f"{kernel:16s} {'/'.join(statuses):10s} direct median {md:7.2f} (min {min(d):.2f}, max {max(d):.2f}) | "
              f"service median {ms:7.2f} (min {min(s):.2f}, max {max(s):.2f}) | "
              f"end to end {100 * (ms / md - 1):+6.2f}% | service's own time median {statistics.median(added):.3f} s "
              f"({100 * statistics.median(added) / md:.2f}% of direct)")
        phases = [r["phases"] for r in rows if r["kernel"] == kernel and "phases" in r]
        print("    service phases, median s: " + ", ".join(
            f"{k} {statistics.median(p[k] for p in phases):.3f}" for k in phases[0]))
    worst = max(summary.values())
    print(f"overhead under 5 %: {worst < 0.05} (worst end-to-end median {100 * worst:+.2f}%)")


def mix(out, url):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    controls = ["tiled_correct", "wgmma_tma", "illegal_address", "hangs", "naive_correct",
                "does_not_compile", "returns_nonzero", "tiled_correct"]
    jobs = []
    lock = threading.Lock()

    def one(i, name):
        src = open(f"{root}/controls/gemm/{name}.cu").read() + f"\n// mix {i} {time.time()}\n"
        status, body = http(f"{url}/v1/evaluations",
                            {"task": TASK, "source": src, "options": {"timeout": 20, "sanitize": "on-failure"}})
        if status != 202:
            raise SystemExit(f"submit {name}: {status} {body}")
        rec = wait_record(url, body["id"])
        _, job = http(f"{url}/v1/evaluations/{body['id']}/job")
        with lock:
            jobs.append({"control": name, "id": body["id"], "status": rec["status"],
                         "reason": rec.get("reason"), "worker": job["worker"] or rec["service"]["worker"],
                         "gpu_started_at": job["gpu_started_at"], "gpu_ended_at": job["gpu_ended_at"],
                         "attempts": job["attempts"]})

    threads = [threading.Thread(target=one, args=(i, n)) for i, n in enumerate(controls)]
    t0 = time.time()
    for t in threads: t.start()
    for t in threads: t.join()
    wall = time.time() - t0
    jobs.sort(key=lambda j: j["gpu_started_at"])
    json.dump(jobs, open(f"{out}/two-workers-one-gpu.json", "w"), indent=1)
    _, health = http(f"{url}/v1/health")
    print(f"== two workers on one GPU: {len(jobs)} jobs in {wall:.1f} s; workers {[w['id'] for w in health['workers'] if w['alive']]}")
    base = jobs[0]["gpu_started_at"]
    overlaps = 0
    for a, b in zip(jobs, jobs[1:]):
        if b["gpu_started_at"] < a["gpu_ended_at"]:
            overlaps += 1
    for j in jobs:
        print(f"  {j['control']:18s} {j['status']:14s} {str(j['reason'] or ''):14s} GPU stage "
              f"{j['gpu_started_at'] - base:8.2f} .. {j['gpu_ended_at'] - base:8.2f} s  worker {j['worker']}")
    workers = {j["worker"] for j in jobs}
    print(f"GPU stages overlapping: {overlaps} (of {len(jobs) - 1} neighbours); jobs spread over {len(workers)} workers")


def throughput(url, jobs):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    base = open(f"{root}/controls/gemm/naive_correct.cu").read()
    t0 = time.time()
    ids = []
    for i in range(jobs):
        status, body = http(f"{url}/v1/evaluations",
                            {"task": TASK, "source": base + f"\n// throughput {i} {t0}\n"})
        ids.append(body["id"])
    statuses = [wait_record(url, i)["status"] for i in ids]
    wall = time.time() - t0
    _, health = http(f"{url}/v1/health")
    alive = health["workers_alive"]
    print(f"{alive} workers: {jobs} builds in {wall:.1f} s = {jobs / wall:.3f} per s; statuses {sorted(set(statuses))}")


if __name__ == "__main__":
    if sys.argv[1] == "overhead":
        overhead(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6:])
    elif sys.argv[1] == "throughput":
        throughput(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "mix":
        mix(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)

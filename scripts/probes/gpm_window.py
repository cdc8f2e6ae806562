#!/usr/bin/env python3
"""What an NVML GPM window really covers (issue 37's witness false alarms, 2026-12-07).

The witness turns GPM's SM utilization over a window into busy seconds by multiplying it with
the window's length as the parent's clock measured it. This probe asks the driver, from
outside any evaluation, whether that is right:

  ticks    GPM's counters are refreshed on the driver's own schedule. Sample every millisecond
           while the GPU is kept busy and report when two successive samples first differ
           (what nvmlGpmMetricsGet returns for two samples of one refresh, and the period).
  windows  a fixed amount of known GPU work (bf16 matmuls timed by CUDA events) inside padded
           windows of varying length, read the way the witness reads them (utilization x host
           seconds); prints busy/true, so a spread that follows the window's length against
           the refresh period shows.
  aligned  the witness's rule since that finding (measure/gpm.h): the window ends 20 ms after a
           whole number k of 100 ms refreshes and the rates are read over k x 100 ms; half of
           these windows open NVML afresh, as each evaluation's parent does. Their busy/true
           should not spread (k+1 refreshes, when one falls in the guard, read k/(k+1) low).

Prints JSON lines; needs torch and libnvidia-ml. Never changes a GPU setting.
"""
import ctypes
import json
import math
import random
import sys
import time

import torch

SM_UTIL, ANY_TENSOR = 2, 5


class Metric(ctypes.Structure):
    _fields_ = [("metric_id", ctypes.c_uint), ("ret", ctypes.c_int), ("value", ctypes.c_double),
                ("names", ctypes.c_void_p * 3)]


class MetricsGet(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("num", ctypes.c_uint), ("s1", ctypes.c_void_p),
                ("s2", ctypes.c_void_p), ("metrics", Metric * 1024)]


class Support(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("supported", ctypes.c_uint)]


nvml = ctypes.CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit_v2() == 0
dev = ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0
sup = Support(1, 0)
assert nvml.nvmlGpmQueryDeviceSupport(dev, ctypes.byref(sup)) == 0 and sup.supported


def alloc():
    s = ctypes.c_void_p()
    assert nvml.nvmlGpmSampleAlloc(ctypes.byref(s)) == 0
    return s


def sample(s):
    t0 = time.perf_counter()
    r = nvml.nvmlGpmSampleGet(dev, s)
    t1 = time.perf_counter()
    assert r == 0, r
    return (t0 + t1) / 2


req = MetricsGet()


def metrics(s1, s2):
    ctypes.memset(ctypes.byref(req), 0, ctypes.sizeof(req))
    req.version, req.num, req.s1, req.s2 = 1, 2, s1, s2
    req.metrics[0].metric_id, req.metrics[1].metric_id = SM_UTIL, ANY_TENSOR
    r = nvml.nvmlGpmMetricsGet(ctypes.byref(req))
    return r, [(req.metrics[i].ret, req.metrics[i].value) for i in range(2)]


a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
c = torch.empty_like(a)
for _ in range(5):
    torch.matmul(a, b, out=c)
torch.cuda.synchronize()


def busy_for(seconds):
    """Queues matmuls for about `seconds` of GPU time; returns their events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    n = max(1, int(seconds / 0.0016))
    for _ in range(n):
        torch.matmul(a, b, out=c)
    end.record()
    return start, end


# ticks: keep the GPU busy for 1.5 s and sample every ~1 ms against a fixed first sample.
s_first, s_now, s_prev = alloc(), alloc(), alloc()
busy_for(1.5)
time.sleep(0.3)
t_first = sample(s_first)
changes, last, same_rets = [], None, set()
t_end = time.perf_counter() + 1.0
while time.perf_counter() < t_end:
    t = sample(s_now)
    r, vals = metrics(s_first, s_now)
    key = (r, tuple(round(v, 6) for _, v in vals), tuple(rt for rt, _ in vals))
    if key != last:
        changes.append({"t_ms": round((t - t_first) * 1000, 2), "ret": r,
                        "sm_util": vals[0][1], "metric_rets": [rt for rt, _ in vals]})
        last = key
    time.sleep(0.001)
torch.cuda.synchronize()
print(json.dumps({"probe": "ticks", "changes": changes[:40]}), flush=True)


# windows: the witness's way (pad 0.3 s, sample, work, pad, sample) with the window's length
# varied over more than one refresh period.
s1, s2 = alloc(), alloc()
rows = []
for trial in range(int(sys.argv[1]) if len(sys.argv) > 1 else 24):
    time.sleep(0.3)
    t1 = sample(s1)
    ev0, ev1 = busy_for(0.06)
    torch.cuda.synchronize()
    true_s = ev0.elapsed_time(ev1) / 1000
    time.sleep(0.3 + random.uniform(0, 0.12))
    t2 = sample(s2)
    r, vals = metrics(s1, s2)
    host_s = t2 - t1
    rows.append({"trial": trial, "host_s": round(host_s, 4), "true_s": round(true_s, 5),
                 "sm_util": vals[0][1], "busy_over_true": vals[0][1] / 100 * host_s / true_s})
    print(json.dumps({"probe": "window", **rows[-1]}), flush=True)
ratios = sorted(r["busy_over_true"] for r in rows)
print(json.dumps({"probe": "windows", "n": len(ratios), "min": ratios[0], "max": ratios[-1],
                  "median": ratios[len(ratios) // 2]}), flush=True)

rows = []
for trial in range(int(sys.argv[2]) if len(sys.argv) > 2 else 24):
    if trial % 2:
        nvml.nvmlShutdown()
        assert nvml.nvmlInit_v2() == 0
        assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0
        s1, s2 = alloc(), alloc()
    time.sleep(0.3)
    t1 = sample(s1)
    ev0, ev1 = busy_for(random.uniform(0.02, 0.1))
    torch.cuda.synchronize()
    true_s = ev0.elapsed_time(ev1) / 1000
    open_s = time.perf_counter() - t1
    k = math.ceil(max(open_s + 0.3, 0.45) / 0.1)
    time.sleep(max(0.0, t1 + k * 0.1 + 0.02 - time.perf_counter()))
    t2 = sample(s2)
    r, vals = metrics(s1, s2)
    rows.append({"trial": trial, "fresh_nvml": bool(trial % 2), "host_s": round(t2 - t1, 4),
                 "k": k, "true_s": round(true_s, 5), "sm_util": vals[0][1],
                 "busy_over_true": vals[0][1] / 100 * k * 0.1 / true_s})
    print(json.dumps({"probe": "aligned", **rows[-1]}), flush=True)
ratios = sorted(r["busy_over_true"] for r in rows)
print(json.dumps({"probe": "aligned_all", "n": len(ratios), "min": ratios[0], "max": ratios[-1],
                  "median": ratios[len(ratios) // 2]}), flush=True)

#!/usr/bin/env bash
# Facts the confinement depends on, read on the GPU machine: can the profiler, the memory
# checker and CUPTI work for an unprivileged user inside fresh PID/mount/net namespaces, and
# how NVML GPM reads over short windows. Prints one line per fact.
set -u
cd "$(dirname "$0")/../.."
work=$(mktemp -d /dev/shm/facts.XXXX); chmod 755 "$work"
cat > "$work/k.cu" <<'CU'
#include <cstdio>
#include <cuda_runtime.h>
__global__ void axpy(float* y, const float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += 2.f * x[i]; }
int main() { int n = 1 << 24; float *x, *y; cudaMalloc(&x, n * 4); cudaMalloc(&y, n * 4);
  for (int r = 0; r < 20; ++r) axpy<<<n / 256, 256>>>(y, x, n);
  cudaError_t e = cudaDeviceSynchronize(); printf("kernel: %s\n", cudaGetErrorString(e)); return e != cudaSuccess; }
CU
nvcc -arch=sm_90a -o "$work/k" "$work/k.cu" && chmod 755 "$work/k"
echo "landlock abi: $(python3 -c 'import ctypes;print(ctypes.CDLL(None).syscall(444,0,0,1))')"
echo "uname: $(uname -r); id: $(id -u)"
ls -l /dev/nvidia* | head -5
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null); san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
echo "ncu=$ncu san=$san"
ns="unshare --pid --fork --mount-proc --net --ipc"
as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
echo "== plain as nobody"; $as_nobody "$work/k" 2>&1 | tail -2
echo "== ns + nobody"; $ns sh -c "ip link set lo up 2>/dev/null; $as_nobody $work/k" 2>&1 | tail -2
echo "== ncu as root in ns"; $ns sh -c "ip link set lo up; cd $work; $ncu --clock-control none --metrics inst_executed --target-processes all ./k" 2>&1 | grep -E "axpy|ERR|==PROF==|error" | head -4
echo "== ncu as nobody in ns"; $ns sh -c "ip link set lo up; cd $work; HOME=$work TMPDIR=$work $as_nobody $ncu --clock-control none --metrics inst_executed ./k" 2>&1 | grep -E "axpy|ERR|==PROF==|error|Error" | head -4
echo "== ncu as nobody, lo down"; $ns sh -c "cd $work; HOME=$work TMPDIR=$work $as_nobody $ncu --clock-control none --metrics inst_executed ./k" 2>&1 | grep -E "axpy|ERR|==PROF==|rror" | head -4
echo "== sanitizer as nobody in ns"; $ns sh -c "ip link set lo up; cd $work; HOME=$work TMPDIR=$work $as_nobody $san --tool memcheck ./k" 2>&1 | tail -3
echo "== ncu ls /dev/shm during run"; $ns sh -c "ip link set lo up; cd $work; $ncu --clock-control none --metrics inst_executed ./k >/dev/null 2>&1 & sleep 2; ls /dev/shm /tmp | head; wait"
echo "== GPM windows (python nvml via ctypes)"
python3 - <<'PY' 2>&1 | tail -20
import ctypes, time, subprocess, os
try:
    import torch
except Exception as e:
    print("no torch", e); raise SystemExit
nv = ctypes.CDLL("libnvidia-ml.so.1")
print("init", nv.nvmlInit_v2())
dev = ctypes.c_void_p(); print("dev", nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)))
class Support(ctypes.Structure): _fields_ = [("version", ctypes.c_uint), ("isSupportedDevice", ctypes.c_uint)]
s = Support(1, 0); print("gpm support rc", nv.nvmlGpmQueryDeviceSupport(dev, ctypes.byref(s)), "supported", s.isSupportedDevice)
a = ctypes.c_void_p(); b = ctypes.c_void_p(); nv.nvmlGpmSampleAlloc(ctypes.byref(a)); nv.nvmlGpmSampleAlloc(ctypes.byref(b))
class Metric(ctypes.Structure): _fields_ = [("metricId", ctypes.c_uint), ("nvmlReturn", ctypes.c_uint), ("value", ctypes.c_double), ("shortName", ctypes.c_char_p), ("longName", ctypes.c_char_p), ("unit", ctypes.c_char_p)]
class Get(ctypes.Structure): _fields_ = [("version", ctypes.c_uint), ("numMetrics", ctypes.c_uint), ("sample1", ctypes.c_void_p), ("sample2", ctypes.c_void_p), ("metrics", Metric * 210)]
ids = [1, 2, 3, 5, 7]
def window(fn):
    nv.nvmlGpmSampleGet(dev, a); t0 = time.time(); fn(); t1 = time.time(); nv.nvmlGpmSampleGet(dev, b)
    g = Get(); g.version = 1; g.numMetrics = len(ids); g.sample1 = a; g.sample2 = b
    for i, m in enumerate(ids): g.metrics[i].metricId = m
    rc = nv.nvmlGpmMetricsGet(ctypes.byref(g))
    return rc, t1 - t0, [round(g.metrics[i].value, 1) for i in range(len(ids))]
A = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); B = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
def gemms(n):
    def f():
        for _ in range(n): A @ B
        torch.cuda.synchronize()
    return f
x = torch.randn(1 << 28, device="cuda")
def elem(n):
    def f():
        for _ in range(n): x.mul_(1.0001)
        torch.cuda.synchronize()
    return f
print("metrics: graphics sm sm_occ any_tensor hmma")
for n in [1, 2, 4, 8, 16, 32, 64]:
    rc, dt, v = window(gemms(n)); print(f"gemm x{n}: rc {rc} {dt*1e3:.1f} ms {v}")
for n in [1, 4, 16, 64]:
    rc, dt, v = window(gemms(n)); print(f"gemm x{n} again: rc {rc} {dt*1e3:.1f} ms {v}")
for n in [4, 32]:
    rc, dt, v = window(elem(n)); print(f"elementwise x{n}: rc {rc} {dt*1e3:.1f} ms {v}")
rc, dt, v = window(lambda: time.sleep(0.05)); print(f"idle 50ms: rc {rc} {dt*1e3:.1f} ms {v}")
PY
rm -rf "$work"

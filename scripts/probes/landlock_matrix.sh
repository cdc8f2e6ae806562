#!/usr/bin/env bash
# Runs landlock_matrix.cc on the GPU machine: which sandbox layer, combined with Landlock,
# stops the CUDA driver. Asks the kernel to log Landlock denials (audit on, no auditd: they go
# to the kernel log) and prints those lines after the matrix.
set -u
cd "$(dirname "$0")/../.."
work=$(mktemp -d /dev/shm/llm.XXXX); chmod 755 "$work"
cat > "$work/k.cu" <<'CU'
#include <cstdio>
#include <cuda_runtime.h>
__global__ void axpy(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += 2.f; }
int main() { int n = 0; cudaError_t e = cudaGetDeviceCount(&n); printf("count %s n=%d; ", cudaGetErrorString(e), n);
  if (e) return 1; float* y; e = cudaMalloc(&y, 1 << 20); axpy<<<1024, 256>>>(y, 1 << 18);
  e = cudaDeviceSynchronize(); printf("kernel %s\n", cudaGetErrorString(e)); return e != cudaSuccess; }
CU
nvcc -arch=sm_90a -o "$work/k" "$work/k.cu" && chmod 755 "$work/k" || exit 1
g++ -O1 -std=c++20 -o "$work/matrix" scripts/probes/landlock_matrix.cc || exit 1
python3 scripts/probes/audit_on.py
dmesg -C 2>/dev/null
"$work/matrix" "$work/k" "$work"
echo "== kernel log (landlock)"
dmesg 2>/dev/null | grep -iE "landlock|type=14" | head -40
rm -rf "$work"

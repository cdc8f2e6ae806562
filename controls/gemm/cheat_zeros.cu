/*
Control: cheat_zeros
Expected verdict: INCORRECT (reason numerical)

The cheat: be the fastest GEMM there is by not doing one. A single kernel writes 0 to every
element of C (16-byte stores where C is 16-byte aligned, then a scalar tail; 64-bit indices,
grid-stride, bounds-checked) and nothing else: no read of A or B, no arithmetic. Its GPU time
is that of a memset of 2 * M * N bytes.

Why the harness catches it: every output element is compared with the reference. Zeros are
finite and overwrite the poison fill, so it is neither non-finite nor unwritten; it is plainly
wrong: the reference elements are sums of K products of standard normals (RMS ~ sqrt(K), e.g.
~45 at K=2048), so almost every element fails |x - y| <= 1e-2 and its relative error is 1.
INCORRECT numerical on the first trial, before any timing.

Build (as the harness does):
nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a \
     -cudart shared -o cheat_zeros.so cheat_zeros.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

// Writes n bf16 zeros (bit pattern 0) to c. When c is 16-byte aligned, the first n / 8 * 8
// elements are written as uint4 and the rest one by one.
__global__ void write_zeros(__nv_bfloat16* __restrict__ c, unsigned long long n, bool vec) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long done = 0;
  if (vec) {
    const unsigned long long n16 = n / 8;  // uint4 = 8 bf16
    uint4* c16 = reinterpret_cast<uint4*>(c);
    for (unsigned long long i = tid; i < n16; i += stride) c16[i] = make_uint4(0u, 0u, 0u, 0u);
    done = n16 * 8;
  }
  unsigned short* c2 = reinterpret_cast<unsigned short*>(c);
  for (unsigned long long i = done + tid; i < n; i += stride) c2[i] = 0;
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A,  // [M, K], never read
                   const __nv_bfloat16* B,  // [N, K], never read
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  (void)A;
  (void)B;
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  const unsigned long long n = (unsigned long long)M * (unsigned long long)N;
  const bool vec = reinterpret_cast<uintptr_t>(C) % 16 == 0;
  const unsigned long long work = vec ? (n + 7) / 8 : n;
  unsigned long long blocks = (work + 255) / 256;
  if (blocks > 4096) blocks = 4096;
  if (blocks == 0) blocks = 1;
  write_zeros<<<(unsigned)blocks, 256, 0, stream>>>(C, n, vec);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

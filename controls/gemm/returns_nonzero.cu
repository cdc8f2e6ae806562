/*
Control: returns_nonzero
Expected verdict: RUNTIME_ERROR

Would compute C = A * B^T, with
  A: [M, K] bf16, row-major contiguous
  B: [N, K] bf16, row-major contiguous
  C: [M, N] bf16, row-major contiguous

WHAT IS WRONG ON PURPOSE: run() launches nothing, touches nothing and returns 3, i.e. it refuses
every shape. The ABI says a non-zero return means "refuses the shape", which the harness must
report as RUNTIME_ERROR (C is left untouched, so it still holds the harness's poison fill; the
non-zero return must be reported, not the unwritten output).

Build (as the harness does):
nvcc -O3 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a -cudart shared \
     -Xptxas -v -o returns_nonzero.so returns_nonzero.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

extern "C" int run(const __nv_bfloat16* A,  // [M, K]
                   const __nv_bfloat16* B,  // [N, K]
                   __nv_bfloat16* C,        // [M, N]
                   int M, int N, int K, cudaStream_t stream) {
  (void)A;
  (void)B;
  (void)C;
  (void)M;
  (void)N;
  (void)K;
  (void)stream;
  return 3;  // BUG (on purpose): refuses every shape
}

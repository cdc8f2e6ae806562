/*
Control: hangs
Expected verdict: TIMEOUT

Would compute C = A * B^T, with
  A: [M, K] bf16, row-major contiguous
  B: [N, K] bf16, row-major contiguous
  C: [M, N] bf16, row-major contiguous
but never gets there.

WHAT IS WRONG ON PURPOSE: run() launches (on `stream`, asynchronously, and returns 0) a single
thread that spins until a device flag becomes non-zero. Nothing ever sets the flag (it is a
module-private __device__ variable, zero-initialized, never written), so the kernel never
terminates and the harness's wait on the stream must hit its timeout. The flag is read through a
volatile pointer on every iteration (ld.volatile in the PTX), so the compiler can neither hoist
the load nor delete the loop; __nanosleep only keeps the spinning thread cheap. C is never
written. The harness has to recover by killing the worker process (a running kernel cannot be
cancelled from the host), so it must run candidates out of process.

Build (as the harness does):
nvcc -O3 -shared -Xcompiler -fPIC -lineinfo -gencode arch=compute_90a,code=sm_90a -cudart shared \
     -Xptxas -v -o hangs.so hangs.cu -lcuda
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace {

__device__ int g_release_flag = 0;  // never set by anyone

// BUG (on purpose): waits forever for g_release_flag. Launched with <<<1, 1>>>.
__global__ void spin_forever() {
  volatile int* flag = &g_release_flag;
  while (*flag == 0) {
    __nanosleep(1000);
  }
}

}  // namespace

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
  spin_forever<<<1, 1, 0, stream>>>();
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

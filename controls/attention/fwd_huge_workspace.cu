/*
Control: fwd_huge_workspace
Expected verdict: RUNTIME_ERROR on mha_with_lse_d64, naming cudaErrorMemoryAllocation

A kernel that asks for a workspace no GPU has (1 PiB, as a bad size computation would), sees
cudaMalloc fail and returns 1. The refusal alone would hide why; the harness reports the
failed allocation with it. (Memory check off for this control: compute-sanitizer reports the
failed API call as an error of its own, which would make the verdict depend on the checker.)
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>

extern "C" int run(const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*,
                   __nv_bfloat16*, float*, int, int, int, int, cudaStream_t) {
  void* workspace = nullptr;
  const size_t bytes = size_t(1) << 50;
  if (cudaMalloc(&workspace, bytes) != cudaSuccess) return 1;
  cudaFree(workspace);
  return 0;
}

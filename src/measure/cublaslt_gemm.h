// The vendor baseline for the bf16 GEMM task: cuBLASLt's own choice of kernel
// for C[M,N] = A[M,K]·B[N,K]ᵀ, all three row-major and contiguous, bf16 in and
// out, fp32 accumulation (CUBLAS_COMPUTE_32F, fp32 alpha and beta).
//
// cuBLASLt is not linked into ptxbench: Load() dlopen()s it. So it is mapped
// only into the one child process that times the baseline, and the
// correctness child, which never loads it, can take any cuBLAS mapping it sees
// (loaded_objects.h) as the candidate's doing.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "measure/baseline_error.h"

namespace ptxbench {

class CublasLtGemm {
 public:
  // Loads $PTXBENCH_CUBLASLT, libcublasLt.so.13 or libcublasLt.so, as
  // LoadVendorLibrary (measure/vendor_library.h) does. Needs no GPU.
  static std::unique_ptr<CublasLtGemm> Load();
  // Frees the descriptors and the workspace. The library stays loaded:
  // unloading a CUDA library while the process runs risks a crash.
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // Plans the product for this shape on the current device: layouts, the
  // heuristic's first algorithm allowing up to 64 MiB of workspace, and that
  // workspace (cudaMalloc). Replaces an earlier plan. Throws BaselineError when
  // a call fails or no algorithm fits, CudaError when the workspace cannot be
  // allocated.
  // `half` plans fp16 operands instead of bf16 (FlashInfer-Bench's GEMM definitions).
  void Prepare(int M, int N, int K, bool half = false);
  // One cublasLtMatmul on `stream` (asynchronous): C = A·Bᵀ with the shapes
  // of Prepare(). A [M,K], B [N,K], C [M,N] are device pointers to bf16 (fp16), each
  // 256-byte aligned (as cudaMalloc returns them), which is what the
  // heuristic's algorithm assumes. Throws BaselineError.
  void Run(const void* A, const void* B, void* C, cudaStream_t stream);

  // The loaded library's version, "13.1.0".
  std::string Version() const;
  // VendorLibrary::Describe's keys ("header_version": of the <cublasLt.h>
  // ptxbench was built with), and "M", "N", "K", "dtype" ("bf16", "f16"), "layout",
  //  "algorithm": {"id", "tile_id", "stages_id", "splitk", "reduction_scheme",
  //  "cta_swizzling", "custom_option", "inner_shape_id", "cluster_shape_id",
  //  "waves_count"}, "workspace_bytes"}; the plan's keys only after Prepare(),
  // and an algorithm attribute only when cuBLASLt reports it. Tile, stage,
  // inner and cluster shape ids are cuBLASLt's enum values
  // (cublasLtMatmulTile_t, cublasLtMatmulStages_t, ...).
  nlohmann::json Describe() const;

 private:
  struct Impl;
  explicit CublasLtGemm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;  // keeps <cublasLt.h> out of this header
};

}  // namespace ptxbench

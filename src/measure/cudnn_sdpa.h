// The vendor baseline for the attention tasks (mha_fwd, mha_bwd): cuDNN's fused
// flash-attention engines, forward with the softmax statistics and backward, bf16 tensors
// [B,H,S,D] (contiguous), fp32 math, scale 1/√D, optionally causal (top-left aligned).
//
// Like cuBLASLt (cublaslt_gemm.h), cuDNN is not linked into ptxbench: Load() dlopen()s it,
// so it is mapped only into the child process that times the baseline.
//
// Why the backend (graph) API: cuDNN's flash-attention kernels have no entry point of their
// own. The heuristics offer them for an operation graph that matches their pattern, so we
// build that graph ourselves, op for op as the cuDNN frontend lowers its SDPA nodes (the
// "composite" lowering; cudnn_sdpa.cc says which release), and take the first plan that
// finalizes. Not the unified SDPA_FWD/SDPA_BWD operations: they appeared in 9.13 and 9.17,
// and on 9.14 the forward one lacks the statistics and the causal mask on Hopper. An engine
// that matches runs the whole graph as one fused kernel (or a few), so what we time is
// cuDNN's own flash attention.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "measure/baseline_error.h"  // BaselineError, BaselineUnsupported

namespace ptxbench {

// Errors: BaselineError when cuDNN cannot be loaded or a call fails, "cuDNN: <what>:
// <status name> (<cuDNN's last error message>)". BaselineUnsupported (a BaselineError)
// when cuDNN loaded and the graph was well formed but no engine takes the shape: the
// heuristics offered no configuration that finalizes, and every refusal was a
// CUDNN_STATUS_NOT_SUPPORTED*. That is a property of the library release and the shape,
// not a failure of ours, so callers can record "unsupported" rather than an error. Its
// message: "cuDNN <version> has no engine for <fwd|bwd> B=.. H=.. S=.. D=.. causal=..: <n>
// engine configurations tried ...; last: <call>: <status> (<message>)".

// The attention problem: B batches, H heads, S queries = S keys, head dimension D.
struct SdpaShape {
  int B, H, S, D;
  bool causal;  // key j visible to query i iff j <= i
};

class CudnnSdpa {
 public:
  // Loads $PTXBENCH_CUDNN, libcudnn.so.9 or libcudnn.so, as LoadVendorLibrary
  // (measure/vendor_library.h) does. Needs no GPU.
  static std::unique_ptr<CudnnSdpa> Load();
  // Frees the plans, their descriptors and device buffers, and the handle. The library stays
  // loaded: unloading a CUDA library while the process runs risks a crash.
  ~CudnnSdpa();
  CudnnSdpa(const CudnnSdpa&) = delete;
  CudnnSdpa& operator=(const CudnnSdpa&) = delete;

  // Plans the forward for this shape on the current device (the handle is created there on
  // first use): the operation graph, built once here; the first execution plan that
  // finalizes among the heuristics' configurations (mode A, then the fallback list); its
  // workspace (cudaMalloc). Computes
  //   O[B,H,S,D] (bf16) = softmax(Q·Kᵀ·scale)·V,
  //   LSE[B,H,S] (fp32) = ln Σ_j exp(Q_i·K_jᵀ·scale) over the visible keys
  // (cuDNN's "Stats": the natural-log log-sum-exp of the scaled, masked scores),
  // scale = 1/√D. Replaces an earlier forward plan. Throws BaselineUnsupported when no
  // engine takes the shape, BaselineError when a call fails, CudaError when a buffer
  // cannot be allocated.
  void PrepareForward(const SdpaShape& shape);
  // Plans the backward: dQ, dK, dV (bf16) of that forward given Q, K, V, O, dO (bf16) and
  // LSE (fp32, the forward's statistics). Besides the workspace it allocates what the
  // cuDNN graph needs as real tensors: the fp32 row sums Σ dO∘O [B,H,S] and the fp32 dQ
  // accumulator [B,H,S,D] (and, where the frontend would add its padding-mask workaround,
  // two int32 sequence-length vectors [B]). Same errors as PrepareForward.
  void PrepareBackward(const SdpaShape& shape);

  // One forward on `stream` (asynchronous: no synchronization, no allocation), with the
  // shape of PrepareForward(). Device pointers, each 16-byte aligned (the alignment the
  // graph declares; cudaMalloc gives 256): Q, K, V, O [B,H,S,D] bf16, LSE [B,H,S] fp32.
  // Throws BaselineError.
  void Forward(const void* Q, const void* K, const void* V, void* O, float* LSE,
               cudaStream_t stream);
  // One backward on `stream`, as Forward: Q, K, V, O, dO, dQ, dK, dV [B,H,S,D] bf16 and
  // LSE [B,H,S] fp32. dQ, dK, dV are only written.
  void Backward(const void* Q, const void* K, const void* V, const void* O, const void* dO,
                const float* LSE, void* dQ, void* dK, void* dV, cudaStream_t stream);

  // The loaded library's version, "9.14.0".
  std::string Version() const;
  // VendorLibrary::Describe's keys ("header_version": of the <cudnn.h> ptxbench was built
  // with), and after a Prepare, of the latest one: "direction" ("fwd"|"bwd"), "B", "H", "S", "D", "causal",
  // "scale", "layout": "BHSD contiguous", "graph" (the op pattern, in words), "lowering"
  // (which frontend lowering the graph follows), "ops" (how many operations),
  // "engine": {"global_index", "knobs": [{"type", "value"}] (cudnnBackendKnobType_t
  //  values), "behavior_notes", "numerical_notes" (cuDNN's enum values), "heuristic"
  //  ("A"|"fallback"), "config_index"} as read back from the engine configuration where
  // cuDNN reports it, "workspace_bytes", "extra_device_bytes" (the backward's own buffers),
  // "plans_tried" (heuristic configurations tried, including the one that finalized).
  nlohmann::json Describe() const;

 private:
  struct Impl;
  explicit CudnnSdpa(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;  // keeps <cudnn.h> out of this header
};

}  // namespace ptxbench

// The vendor library a task is compared with, behind one interface so that the timing child
// times it exactly like a candidate: GEMM → cuBLASLt; attention forward → FlashInfer's sm90
// prefill (the paper's baseline, issue 23) or cuDNN's fused SDPA (`--baseline cudnn`);
// attention backward → cuDNN (issue 5; FlashInfer has no backward).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/flashinfer_attention.h"  // AttentionBaseline
#include "task/family.h"

namespace ptxbench {

class Baseline {
 public:
  virtual ~Baseline() = default;
  virtual std::string Name() const = 0;  // "cuBLASLt"
  // One call on the tensors of a buffer set; throws BaselineError (measure/cublaslt_gemm.h).
  virtual void Run(const std::vector<DeviceTensor>& tensors, Stream stream) = 0;
  virtual nlohmann::json Describe() const = 0;  // library, version, algorithm
};

// What the timing child's spec says about the baseline, under "baseline_options" (written by
// the parent, PrepareBaselineOptions): {"attention": "flashinfer"|"cudnn", for FlashInfer its
// "flashinfer_version", and either "flashinfer_build" (ToJson(FlashInferBuild): the object the
// parent built and its sha256) or "flashinfer_unsupported" / "flashinfer_error" (why there is
// none)}. An empty object means the defaults with nothing prebuilt: FlashInfer then fails with
// a BaselineError saying the parent built nothing.
//
// The family's baseline, prepared for `axes` (plans and algorithms chosen here, before any
// timing). nullptr with *why set when the family has none yet; throws BaselineUnsupported when
// the library has no kernel for the shape, BaselineError when the library fails.
std::unique_ptr<Baseline> MakeBaseline(const Family& family, const Axes& axes,
                                       const nlohmann::json& options, std::string* why);

// The attention-forward library that `options` selects: FlashInfer unless it says "cudnn", of
// its "flashinfer_version" (the default version when there is none).
AttentionBaseline AttentionBaselineOf(const nlohmann::json& options);

// In the parent, before any baseline child starts: the options for those children. For an
// mha_fwd task with FlashInfer it builds (or finds in <cache_root>/flashinfer) the variant of
// the chosen version for the task's head dim and mask, and records the build, or why there is none
// (unsupported head dim, headers not installed, compile error); it never throws for those, the
// child reports them as the library's own failure would be.
nlohmann::json PrepareBaselineOptions(const Family& family, const Axes& axes,
                                      const AttentionBaseline& attention,
                                      const std::string& cache_root);

}  // namespace ptxbench

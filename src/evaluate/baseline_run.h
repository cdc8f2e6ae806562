// The vendor baseline alone at one workload (`ptxbench baseline`, the baseline tables): the
// timing child's baseline phase, exactly as an evaluation times it (fresh inputs, poisoned
// outputs, cold L2, CUPTI spans), without a candidate, and holding the GPU alone while it
// runs (run/gpu_lock.h), so that neither it nor an evaluation beside it times the other's work.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/flashinfer_attention.h"  // AttentionBaseline
#include "task/definition.h"

namespace ptxbench {

struct BaselineRequest {
  const Definition* definition = nullptr;
  const Workload* workload = nullptr;
  int warmup = 10, iterations = 50, buffer_sets = 3;
  std::chrono::seconds timeout{600};
  uint64_t seed = 0;            // the calls' inputs: seed + call
  std::string executable;       // the ptxbench binary that the child runs; empty: this one
  AttentionBaseline attention;  // mha_fwd's library (and FlashInfer's release)
  std::string cache_root;       // where FlashInfer's builds are cached; empty: CacheRoot()
  std::chrono::seconds gpu_lock_timeout{3600};  // the longest wait for the GPU alone
};

// {"task", "workload", "axes", "flops", "state" ("ran", "unsupported", "skipped", "failed"),
//  "reason" (unless ran), "median"/"p10"/"p90" (s), "tflops", "name" (the library as the
//  record names it, when it ran), "choice" (mha_fwd: ToString(request.attention), e.g.
//  "flashinfer@0.6.14" or "cudnn"), "library" (the
//  baseline's Describe()), "protocol", "gpu", "seconds" (wall, FlashInfer's build included)}.
// "failed" with the lock's reason when the GPU could not be had alone in gpu_lock_timeout.
nlohmann::json MeasureBaseline(const BaselineRequest& request);

// `ptxbench baseline --baseline WORD`: the attention forward's baselines, in the order their
// lines are printed, cuDNN first so that each FlashInfer line can say how it compares. "cudnn",
// "flashinfer" (the default release), "flashinfer@VERSION", "both" (cuDNN and the default
// FlashInfer) or "all" (cuDNN, then every known FlashInfer release). Throws UsageError for
// another word, naming the known versions.
std::vector<AttentionBaseline> AttentionBaselinesOf(const std::string& word);
// The words AttentionBaselinesOf takes.
std::vector<std::string> BaselineCommandWords();

}  // namespace ptxbench

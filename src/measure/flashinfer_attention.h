// FlashInfer as the attention-forward baseline (issue 23; the paper's choice). FlashInfer is a
// header-only template library: there is no prebuilt kernel to link, so the harness builds
// one shared object per (FlashInfer version, head dimension, causal) from FlashInfer's own
// Hopper templates, caches it like a candidate build, and the timing child dlopen()s it.
// No Python runs at evaluation time.
//
// Versions: the paper's baseline is flashinfer-python 0.6.14 on PyPI, the default here;
// 0.7.4 (pinned first: the newest release when this baseline was added) stays selectable with
// `--baseline flashinfer@0.7.4`, so that a result can be set beside either. scripts/setup.sh puts
// the headers of each in .tools/flashinfer-<version>. Both compile from the same generated source
// (checked against each release's headers): what it instantiates did not change between them.
//
// Which kernel: FlashInfer's FA3 (sm90) prefill, BatchPrefillWithRaggedKVCacheDispatched from
// attention/hopper/prefill_sm90.cuh, with the default Hopper attention variant and FlashInfer's
// own host-side planner (PrefillSM90Plan), run before timing like cuDNN's plan. FlashInfer
// instantiates its FA3 prefill only for head dims 64, 128 and 256
// (flashinfer.utils.is_fa3_prefill_head_dim_supported); for any other (our 96) its Python API
// would pick the FA2 (sm80) kernel on Hopper. We do not wire that one: its output LSE is
// [tokens, heads], which our [B,H,S] contract could only get through an extra, timed pass.
// So head dim 96 is reported `unsupported`, as cuDNN's BaselineUnsupported is.
//
// Layout without a copy: our [B,H,S,D] is, read as FlashInfer's ragged NHD layout, a batch of
// B·H requests of S tokens each with ONE head ([B·H·S, 1, D], request r = b·H + h starting at
// row r·S). With one head FlashInfer's LSE layout [tokens, 1] is exactly our [B,H,S], so one
// launch writes O and LSE in place. The causal mask of FlashInfer aligns the last query with
// the last key; with S queries and S keys that is our mask (key j visible to query i iff j <= i).
//
// LSE: FlashInfer's Hopper softmax keeps the log-sum-exp in base 2 (attention_updater.cuh:
// row_max·scale·log2(e) + log2(Σ)). Our contract is the natural log, so the generated source
// wraps the default variant (StandardAttention) with an updater whose get_lse() multiplies by
// ln 2: one multiply per row in FlashInfer's own epilogue, through its documented variant hook,
// instead of a second kernel.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/baseline_error.h"  // BaselineError, BaselineUnsupported
#include "measure/cudnn_sdpa.h"      // SdpaShape

namespace ptxbench {

// The releases the harness builds against, oldest first; the default is the paper's. A release
// belongs here only once setup.sh installs it and its headers compile the generated source.
inline constexpr const char* kDefaultFlashInferVersion = "0.6.14";
const std::vector<std::string>& FlashInferVersions();  // {"0.6.14", "0.7.4"}
bool IsKnownFlashInferVersion(const std::string& version);

// Which library is the attention-forward baseline (`--baseline`), and for FlashInfer which
// release. The backward is always cuDNN's: FlashInfer has no attention backward.
enum class AttentionLibrary { kFlashInfer, kCudnn };
struct AttentionBaseline {
  AttentionLibrary library = AttentionLibrary::kFlashInfer;
  std::string flashinfer_version = kDefaultFlashInferVersion;  // empty for cuDNN

  static AttentionBaseline FlashInfer(const std::string& version = kDefaultFlashInferVersion) {
    return {AttentionLibrary::kFlashInfer, version};
  }
  static AttentionBaseline Cudnn() { return {AttentionLibrary::kCudnn, ""}; }
  bool IsFlashInfer() const { return library == AttentionLibrary::kFlashInfer; }
  // Spelled out: CUDA sources include this header as C++17, without defaulted comparisons.
  bool operator==(const AttentionBaseline& o) const {
    return library == o.library && flashinfer_version == o.flashinfer_version;
  }
  bool operator!=(const AttentionBaseline& o) const { return !(*this == o); }
};
std::string ToString(AttentionLibrary l);  // "flashinfer", "cudnn"
// The canonical word, which records and run.json keep: "flashinfer@0.6.14", "cudnn". Never
// plain "flashinfer": a record must say which release it was timed against.
std::string ToString(const AttentionBaseline& b);
// "FlashInfer 0.6.14 (sm90 prefill)", "cuDNN SDPA": the name the baseline reports when it runs.
std::string DisplayName(const AttentionBaseline& b);
// "flashinfer" (the default version), "flashinfer@VERSION" (a known one) or "cudnn"; nullopt
// for anything else, with `why` naming the known versions when the version is the problem.
std::optional<AttentionBaseline> ParseAttentionBaseline(const std::string& s,
                                                        std::string* why = nullptr);
// Every word ParseAttentionBaseline takes: "flashinfer", "flashinfer@<each version>", "cudnn".
std::vector<std::string> AttentionBaselineWords();

// The headers of one FlashInfer release, as setup.sh lays them out: include/ (flashinfer/...),
// cutlass/include, cutlass/tools/util/include, cccl/libcudacxx/include (FlashInfer needs a
// newer libcu++ than the toolkit's), and VERSION.
struct FlashInferInstall {
  std::string root;                        // canonical
  std::string version;                     // from VERSION
  std::vector<std::string> include_flags;  // -I / -isystem, in FlashInfer's own JIT order
};
// The install of `version`: $PTXBENCH_FLASHINFER when its VERSION is that version (a folder
// holding another version, or none, is passed over: it serves the other one), else
// <source tree>/.tools/flashinfer-<version>. nullopt with `why` naming the version, what is
// missing, where it looked, and how to install it.
std::optional<FlashInferInstall> FindFlashInfer(const std::string& version,
                                                std::string* why = nullptr);
// The same with both places given: `chosen` stands for $PTXBENCH_FLASHINFER (empty: unset),
// `tools` for the folder holding flashinfer-<version> (tests use scratch folders).
std::optional<FlashInferInstall> FindFlashInferAt(const std::string& version,
                                                  const std::string& chosen,
                                                  const std::string& tools, std::string* why);

// True for the head dims FlashInfer's FA3 prefill is instantiated for (64, 128, 256).
bool FlashInferHasSm90Prefill(int head_dim);

// The headers the generated source includes, in order (tools/flashinfer_headers.cu lists the
// same ones: setup.sh keeps only what they pull in).
std::vector<std::string> FlashInferIncludes();

// The .cu the harness compiles for one variant: FlashInfer's template instantiated for
// `head_dim` and the mask, and an extern "C" entry (see the source's header comment). Throws
// BaselineUnsupported for a head dim without an FA3 prefill. `version` is only named in the
// source's comment and messages (so it is keyed too): the template serves every known release.
std::string FlashInferSource(int head_dim, bool causal, const std::string& version);

// nvcc's flags for that source (after `nvcc`): FlashInfer's own JIT flags for sm_90a (-O3,
// -DNDEBUG, --use_fast_math, -std=c++17, --expt-relaxed-constexpr, the bf16 enable macro, the
// extended SM90 MMA shapes), a shared object against the shared CUDA runtime, and the include
// folders of `install`.
std::vector<std::string> FlashInferNvccFlags(const FlashInferInstall& install);

// The cache key: sha256 over the recipe version, FlashInfer's version, nvcc's version, the
// flags and the source. A flag inside `install_root` is keyed by what follows the root, so a
// moved tree (another checkout, $PTXBENCH_FLASHINFER) keeps its builds; the version, keyed on
// its own, tells two installs apart.
std::string FlashInferCacheKey(const std::string& install_root,
                               const std::string& flashinfer_version,
                               const std::string& nvcc_version,
                               const std::vector<std::string>& flags, const std::string& source);

struct FlashInferBuild {
  std::string shared_object;  // <cache>/<key>/flashinfer_attention.so
  std::string sha256;         // of that file, recorded when built, verified on every read
  std::string key;
  std::string version;  // FlashInfer's
  std::string nvcc_version;
  std::vector<std::string> command;
  bool cache_hit = false;
  double seconds = 0;  // of the nvcc call that built it (as recorded)
  int head_dim = 0;
  bool causal = false;
};
nlohmann::json ToJson(const FlashInferBuild& b);
FlashInferBuild FlashInferBuildFromJson(const nlohmann::json& j);

// Builds the variant of FlashInfer `version` into <cache_root>/flashinfer/<key>/ unless a
// sound entry is there (its object's sha256 re-checked); one nvcc at a time per key across
// processes (a lock file), so concurrent callers compile it once. nvcc runs confined as a
// candidate's does, reading the FlashInfer folder too. Throws BaselineUnsupported (head dim
// without an FA3 prefill), BaselineError: the headers are not installed ("FlashInfer 0.6.14
// headers not installed: ...; scripts/setup.sh installs them"), nvcc missing, or the compile
// failed (with nvcc's last lines). Runs in the parent: caches are written by the parent only.
FlashInferBuild BuildFlashInferAttention(int head_dim, bool causal, const std::string& version,
                                         const std::string& cache_root,
                                         const std::string& nvcc = "");

// The built object, loaded (in the timing child only) and planned for one shape.
class FlashInferAttention {
 public:
  // dlopen()s build.shared_object after checking its sha256 against build.sha256. Throws
  // BaselineError.
  static std::unique_ptr<FlashInferAttention> Load(const FlashInferBuild& build);
  ~FlashInferAttention();
  FlashInferAttention(const FlashInferAttention&) = delete;
  FlashInferAttention& operator=(const FlashInferAttention&) = delete;

  // FlashInfer's planner for B·H requests of S rows on the current device: the work list
  // copied to a device buffer (allocated here), synchronously. shape.D and shape.causal must
  // be the build's. Throws BaselineError.
  void Prepare(const SdpaShape& shape);
  // One forward on `stream`, asynchronous: Q, K, V, O [B,H,S,D] bf16, LSE [B,H,S] fp32
  // (natural log). Throws BaselineError (a launch error, or no Prepare).
  void Forward(const void* Q, const void* K, const void* V, void* O, float* LSE,
               cudaStream_t stream);
  // {"library": "FlashInfer", "version", "kernel", "head_dim", "causal", "cta_q", "cta_kv",
  //  "variant", "layout", "lse", "plan": {"requests", "works", "ctas"}, "build": ToJson(build)}
  nlohmann::json Describe() const;
  // "FlashInfer 0.6.14 (sm90 prefill)"
  std::string Name() const;

 private:
  struct Impl;
  explicit FlashInferAttention(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ptxbench

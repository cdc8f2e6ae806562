#include "measure/cublaslt_gemm.h"

// Types, enum values and prototypes only: no cuBLASLt function is called
// directly, so nothing here makes the linker pull in libcublasLt.
#include <cublasLt.h>

#include <cstdint>
#include <vector>

#include "common/cuda_check.h"
#include "common/status_check.h"
#include "measure/vendor_library.h"

namespace ptxbench {
namespace {

// Every cuBLASLt function used, resolved with dlsym(). Each pointer's type is
// decltype(&function) from <cublasLt.h>, so calls through it are type-checked
// as if the library were linked.
#define PTXBENCH_CUBLASLT_FUNCTIONS(X)    \
  X(cublasLtGetVersion)                   \
  X(cublasLtGetStatusName)                \
  X(cublasLtGetStatusString)              \
  X(cublasLtCreate)                       \
  X(cublasLtDestroy)                      \
  X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescDestroy)            \
  X(cublasLtMatmulDescSetAttribute)       \
  X(cublasLtMatrixLayoutCreate)           \
  X(cublasLtMatrixLayoutDestroy)          \
  X(cublasLtMatmulPreferenceCreate)       \
  X(cublasLtMatmulPreferenceDestroy)      \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatmulAlgoGetHeuristic)       \
  X(cublasLtMatmulAlgoConfigGetAttribute) \
  X(cublasLtMatmul)

// The loaded functions, and cuBLASLt's failures in the shape of common/status_check.h.
struct Api {
#define PTXBENCH_DECLARE_POINTER(name) decltype(&::name) name = nullptr;
  PTXBENCH_CUBLASLT_FUNCTIONS(PTXBENCH_DECLARE_POINTER)
#undef PTXBENCH_DECLARE_POINTER

  // Every function resolved from `library`; returns the missing ones ("" when none).
  std::string Bind(const DynamicLibrary& library) {
    SymbolBinder binder(library);
#define PTXBENCH_BIND_POINTER(name) binder.Require(name, #name);
    PTXBENCH_CUBLASLT_FUNCTIONS(PTXBENCH_BIND_POINTER)
#undef PTXBENCH_BIND_POINTER
    return binder.missing();
  }

  using Status = cublasStatus_t;
  static constexpr Status kSuccess = CUBLAS_STATUS_SUCCESS;
  // "<status name> (<cuBLASLt's description of it>)".
  std::string Describe(Status status) const {
    const char* name = cublasLtGetStatusName(status);
    const char* text = cublasLtGetStatusString(status);
    std::string out = name ? name : "status " + std::to_string(static_cast<int>(status));
    if (text && *text) out += std::string(" (") + text + ")";
    return out;
  }
  // "cuBLASLt: <function>: <status>", as BaselineError.
  [[noreturn]] void Throw(Status status, const CheckedCall& call) const {
    throw BaselineError("cuBLASLt: " + FailureText(*this, status, call.what));
  }
};

constexpr uint64_t kMaxWorkspaceBytes = uint64_t{64} << 20;
// cuBLASLt's default CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES: the
// heuristic may pick algorithms that need operands aligned this far.
constexpr uintptr_t kOperandAlignment = 256;

const VendorLibrarySpec kLibrary{
    "cuBLASLt", "PTXBENCH_CUBLASLT", {"libcublasLt.so.13", "libcublasLt.so"}};

}  // namespace

struct CublasLtGemm::Impl {
  Api api;
  VendorLibrary library;
  cublasLtHandle_t handle = nullptr;  // created by the first Prepare(), which has a device

  // The plan made by Prepare(); the descriptors describe cuBLASLt's operands.
  bool prepared = false;
  int M = 0, N = 0, K = 0;
  bool half = false;  // fp16 operands, else bf16
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  nlohmann::json algorithm;

  // Frees the plan, ignoring errors: this also runs from the destructor,
  // possibly after a failed kernel has left the context unusable.
  void ReleasePlan() noexcept {
    prepared = false;
    if (workspace) cudaFree(workspace);
    workspace = nullptr;
    workspace_bytes = 0;
    for (cublasLtMatrixLayout_t* layout : {&a, &b, &c}) {
      if (*layout) api.cublasLtMatrixLayoutDestroy(*layout);
      *layout = nullptr;
    }
    if (op) api.cublasLtMatmulDescDestroy(op);
    op = nullptr;
    algorithm = nullptr;
  }

  // One algorithm configuration attribute of type T, if cuBLASLt reports it.
  template <typename T>
  void AddConfig(const char* key, cublasLtMatmulAlgoConfigAttributes_t attribute) {
    T value{};
    size_t written = 0;
    if (api.cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof value,
                                                 &written) == CUBLAS_STATUS_SUCCESS &&
        written == sizeof value)
      algorithm[key] = value;
  }
};

std::unique_ptr<CublasLtGemm> CublasLtGemm::Load() {
  return std::unique_ptr<CublasLtGemm>(new CublasLtGemm(LoadVendorImpl<Impl>(kLibrary)));
}

CublasLtGemm::CublasLtGemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CublasLtGemm::~CublasLtGemm() {
  impl_->ReleasePlan();
  if (impl_->handle) impl_->api.cublasLtDestroy(impl_->handle);
  // No dlclose(): cuBLASLt registers its kernels with the CUDA runtime and may
  // keep threads and callbacks, so unloading it mid-process risks a crash.
}

void CublasLtGemm::Prepare(int M, int N, int K, bool half) {
  if (M <= 0 || N <= 0 || K <= 0)
    throw BaselineError("cuBLASLt: Prepare: M, N, K must be positive, got " + std::to_string(M) +
                        ", " + std::to_string(N) + ", " + std::to_string(K));
  Impl& p = *impl_;
  const Api& api = p.api;
  p.ReleasePlan();
  if (!p.handle) PTXBENCH_CHECK_STATUS(api, api.cublasLtCreate(&p.handle), "cublasLtCreate");

  // cuBLASLt is column-major. Row-major C[M,N] is, read column-major, Cᵀ: an
  // N×M matrix with leading dimension N; and Cᵀ = (A·Bᵀ)ᵀ = B·Aᵀ. So cuBLASLt
  // computes D = op(A')·op(B') with m = N, n = M, k = K, where
  //   A' = our B, read column-major as K×N (ld K), op = T: Bᵀᵀ = B, N×K;
  //   B' = our A, read column-major as K×M (ld K), op = N: Aᵀ, K×M;
  //   C' = D' = our C, N×M (ld N).
  PTXBENCH_CHECK_STATUS(api, api.cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                        "cublasLtMatmulDescCreate");
  const int32_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  PTXBENCH_CHECK_STATUS(
      api,
      api.cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa),
      "cublasLtMatmulDescSetAttribute(TRANSA)");
  PTXBENCH_CHECK_STATUS(
      api,
      api.cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb),
      "cublasLtMatmulDescSetAttribute(TRANSB)");
  const cudaDataType_t element = half ? CUDA_R_16F : CUDA_R_16BF;
  PTXBENCH_CHECK_STATUS(api, api.cublasLtMatrixLayoutCreate(&p.a, element, K, N, K),
                        "cublasLtMatrixLayoutCreate(A)");
  PTXBENCH_CHECK_STATUS(api, api.cublasLtMatrixLayoutCreate(&p.b, element, K, M, K),
                        "cublasLtMatrixLayoutCreate(B)");
  PTXBENCH_CHECK_STATUS(api, api.cublasLtMatrixLayoutCreate(&p.c, element, N, M, N),
                        "cublasLtMatrixLayoutCreate(C)");

  cublasLtMatmulPreference_t pref = nullptr;
  PTXBENCH_CHECK_STATUS(api, api.cublasLtMatmulPreferenceCreate(&pref),
                        "cublasLtMatmulPreferenceCreate");
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, decltype(api.cublasLtMatmulPreferenceDestroy)>
      pref_owner(pref, api.cublasLtMatmulPreferenceDestroy);
  const uint64_t max_workspace = kMaxWorkspaceBytes;
  PTXBENCH_CHECK_STATUS(
      api,
      api.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &max_workspace, sizeof max_workspace),
      "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  PTXBENCH_CHECK_STATUS(api,
                        api.cublasLtMatmulAlgoGetHeuristic(p.handle, p.op, p.a, p.b, p.c, p.c, pref,
                                                           1, &result, &found),
                        "cublasLtMatmulAlgoGetHeuristic");
  if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
    throw BaselineError("cuBLASLt: cublasLtMatmulAlgoGetHeuristic: no algorithm for M=" +
                        std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                        " (bf16, fp32 compute, workspace up to 64 MiB)" +
                        (found >= 1 ? ": " + api.Describe(result.state) : ""));
  p.algo = result.algo;
  if (result.workspaceSize > 0) {
    PTXBENCH_CUDA_CHECK(cudaMalloc(&p.workspace, result.workspaceSize));
    p.workspace_bytes = result.workspaceSize;
  }

  p.algorithm = nlohmann::json::object();
  p.AddConfig<int32_t>("id", CUBLASLT_ALGO_CONFIG_ID);
  p.AddConfig<uint32_t>("tile_id", CUBLASLT_ALGO_CONFIG_TILE_ID);
  p.AddConfig<uint32_t>("stages_id", CUBLASLT_ALGO_CONFIG_STAGES_ID);
  p.AddConfig<int32_t>("splitk", CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  p.AddConfig<uint32_t>("reduction_scheme", CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
  p.AddConfig<uint32_t>("cta_swizzling", CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING);
  p.AddConfig<uint32_t>("custom_option", CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION);
  p.AddConfig<uint16_t>("inner_shape_id", CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID);
  p.AddConfig<uint16_t>("cluster_shape_id", CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
  p.algorithm["waves_count"] = result.wavesCount;
  p.M = M;
  p.N = N;
  p.K = K;
  p.half = half;
  p.prepared = true;
}

void CublasLtGemm::Run(const void* A, const void* B, void* C, cudaStream_t stream) {
  Impl& p = *impl_;
  if (!p.prepared) throw BaselineError("cuBLASLt: Run before a successful Prepare");
  for (const void* ptr : {A, B, static_cast<const void*>(C)})
    if (reinterpret_cast<uintptr_t>(ptr) % kOperandAlignment != 0)
      throw BaselineError("cuBLASLt: Run: operands must be 256-byte aligned");
  const float alpha = 1.0f, beta = 0.0f;
  // Our B is cuBLASLt's A and our A its B (see Prepare); beta = 0, so C is
  // only written (as D).
  PTXBENCH_CHECK_STATUS(
      p.api,
      p.api.cublasLtMatmul(p.handle, p.op, &alpha, B, p.a, A, p.b, &beta, C, p.c, C, p.c, &p.algo,
                           p.workspace, p.workspace_bytes, stream),
      "cublasLtMatmul");
}

std::string CublasLtGemm::Version() const {
  return VendorVersionString(impl_->api.cublasLtGetVersion());
}

nlohmann::json CublasLtGemm::Describe() const {
  const Impl& p = *impl_;
  nlohmann::json j = p.library.Describe(Version(), VendorVersionString(CUBLAS_VERSION));
  if (!p.prepared) return j;
  j["M"] = p.M;
  j["N"] = p.N;
  j["K"] = p.K;
  j["dtype"] = p.half ? "f16" : "bf16";
  j["layout"] = "TN (C = A·Bᵀ, row-major)";
  j["algorithm"] = p.algorithm;
  j["workspace_bytes"] = p.workspace_bytes;
  return j;
}

}  // namespace ptxbench

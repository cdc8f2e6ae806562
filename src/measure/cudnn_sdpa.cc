#include "measure/cudnn_sdpa.h"

// Types, enum values and prototypes only: no cuDNN function is called directly, so nothing
// here makes the linker pull in libcudnn.
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

#include "common/cuda_check.h"
#include "common/status_check.h"
#include "common/strings.h"
#include "measure/vendor_library.h"

// Which graph, and why this one.
//
// cuDNN's fused flash-attention engines are not called by name: the heuristics offer them
// for an operation graph that matches their pattern, and the pattern is, in practice, the
// graph the cuDNN frontend builds. So the graphs below follow the frontend's "composite"
// lowering of its SDPA nodes op for op: NVIDIA/cudnn-frontend 1.2x (the main branch of
// 2026), CompositeSDPANode and CompositeSDPABackwardNode in
// include/cudnn_frontend/node/scaled_dot_product_flash_attention.h together with the
// composite softmax (node/softmax.h) and diagonal-band mask (node/diagonal_band_mask.h)
// nodes, which that frontend uses for every backend older than 9.21 (from 9.21 on it emits
// single softmax and band-mask operations instead). That is the graph the frontend hands a
// 9.14 backend when it is not asked for the unified SDPA operation. What it fixes, and we
// copy: the order of the operations; K (and, backward, V) described as their transposes
// [B,H,D,S] through the strides of the caller's tensor; the data types (io bf16, virtual
// intermediates fp32 except the bf16 operand of the second matmuls, int32 indices, boolean
// masks); fp32 math everywhere except the comparisons (boolean) and the padding mask's
// indices (int32); every tensor 4-d, 16-byte aligned, scalars as by-value fp32
// [1,1,1,1] tensors fed through the variant pack; every matmul with fp32 compute and a 0.0
// padding value, every pointwise op with alpha1 = alpha2 = 1; the row sums Σ dO∘O and the
// dQ accumulator as real fp32 tensors of the backward graph, for which the frontend carves
// buffers out of its workspace and which we allocate ourselves; no tensor reordering (the
// F16x16 reordering belongs to the 8.9-era lowerings); and, on backends up to 9.15.0 with
// S not a multiple of 128, the padding mask the frontend adds to the backward as a
// workaround, with sequence lengths S for every batch.
//
// One choice the frontend changed over its releases and that only a GPU can settle for
// 9.14: how the causal mask's indices are computed. The current lowering generates them
// with fp32 math and fills masked scores with -inf (for backends from 9.10 on); frontend
// 1.1x generated them with int32 math and filled with the lowest finite float. Prepare
// tries the current form first and, when no engine takes it, the older one (Describe's
// "lowering" says which was used).
//
// Checked without a GPU against cuDNN 9.19 (device properties of an H200 given as JSON, a
// stub libcuda): every graph here, forward and backward, causal or not, both lowerings, with
// and without the padding workaround, passes the fused engines' pattern checks and is
// compiled, failing only at the module load the stub cannot do. On the H200 (cuDNN 9.14.0)
// the current causal form is taken, and every graph agrees with our references
// (tests/gpu/cudnn_sdpa_gpu_test.cu; docs/gpu-runs/2026-12-02-h200-issue5.md).

namespace ptxbench {
namespace {

// Every cuDNN function used, resolved with dlsym(). Each pointer's type is decltype(&function)
// from <cudnn.h>, so calls through it are type-checked as if the library were linked.
#define PTXBENCH_CUDNN_FUNCTIONS(X) \
  X(cudnnGetVersion)                \
  X(cudnnGetErrorString)            \
  X(cudnnCreate)                    \
  X(cudnnDestroy)                   \
  X(cudnnSetStream)                 \
  X(cudnnBackendCreateDescriptor)   \
  X(cudnnBackendDestroyDescriptor)  \
  X(cudnnBackendSetAttribute)       \
  X(cudnnBackendGetAttribute)       \
  X(cudnnBackendFinalize)           \
  X(cudnnBackendExecute)
// Used when present: only error messages depend on it.
#define PTXBENCH_CUDNN_OPTIONAL_FUNCTIONS(X) X(cudnnGetLastErrorString)

// cuDNN's last error message is a stack of "Warning: <status>; Reason: <why>" lines, innermost
// first, repeated after a JSON line for every engine configuration that refused. Keeps the
// innermost reason of each block, "engine <id>: <status>: <why>", drops repeats, and caps
// the length.
std::string Condense(const std::string& raw) {
  std::vector<std::string> reasons;
  std::string engine, plain;
  bool block_open = true;  // the next reason line starts a block
  size_t pos = 0;
  while (pos <= raw.size()) {
    size_t end = raw.find('\n', pos);
    if (end == std::string::npos) end = raw.size();
    std::string line = raw.substr(pos, end - pos);
    pos = end + 1;
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    line = line.substr(first);
    if (line[0] == '{') {
      const size_t at = line.find("\"engineId\":");
      engine = at == std::string::npos
                   ? ""
                   : line.substr(at + 11, line.find_first_of(",}", at) - at - 11);
      block_open = true;
      continue;
    }
    const size_t colon = line.find(": "), reason = line.find("; Reason: ");
    if ((line.rfind("Warning: ", 0) == 0 || line.rfind("Error: ", 0) == 0) &&
        reason != std::string::npos && colon < reason) {
      if (!block_open) continue;
      block_open = false;
      std::string text =
          line.substr(colon + 2, reason - colon - 2) + ": " + line.substr(reason + 10);
      if (!engine.empty()) text = "engine " + engine + ": " + text;
      bool seen = false;
      for (const std::string& r : reasons) seen = seen || r == text;
      if (!seen) reasons.push_back(text);
    } else if (plain.empty()) {
      plain = line;
    }
  }
  std::string out = reasons.empty() ? plain : Join(reasons, "; ");
  constexpr size_t kMax = 1500;
  if (out.size() > kMax) out = out.substr(0, kMax) + "...";
  return out;
}

// The loaded functions, and cuDNN's failures in the shape of common/status_check.h.
struct Api {
#define PTXBENCH_DECLARE_POINTER(name) decltype(&::name) name = nullptr;
  PTXBENCH_CUDNN_FUNCTIONS(PTXBENCH_DECLARE_POINTER)
  PTXBENCH_CUDNN_OPTIONAL_FUNCTIONS(PTXBENCH_DECLARE_POINTER)
#undef PTXBENCH_DECLARE_POINTER

  // Every function resolved from `library`; returns the missing required ones ("" when none).
  std::string Bind(const DynamicLibrary& library) {
    SymbolBinder binder(library);
#define PTXBENCH_BIND_REQUIRED(name) binder.Require(name, #name);
#define PTXBENCH_BIND_OPTIONAL(name) binder.Optional(name, #name);
    PTXBENCH_CUDNN_FUNCTIONS(PTXBENCH_BIND_REQUIRED)
    PTXBENCH_CUDNN_OPTIONAL_FUNCTIONS(PTXBENCH_BIND_OPTIONAL)
#undef PTXBENCH_BIND_OPTIONAL
#undef PTXBENCH_BIND_REQUIRED
    return binder.missing();
  }

  // cuDNN's last error message for this thread, condensed (see Condense), or "".
  std::string LastError() const {
    if (!cudnnGetLastErrorString) return "";
    std::vector<char> buffer(16384, '\0');
    cudnnGetLastErrorString(buffer.data(), buffer.size() - 1);
    return Condense(buffer.data());
  }

  using Status = cudnnStatus_t;
  static constexpr Status kSuccess = CUDNN_STATUS_SUCCESS;
  // "CUDNN_STATUS_NOT_SUPPORTED_SHAPE (the condensed last error message)". Reads the message
  // first, before any other cuDNN call can replace it.
  std::string Describe(Status status) const {
    std::string last = LastError();
    const char* name = cudnnGetErrorString(status);
    std::string out = name && *name ? name : "status " + std::to_string(static_cast<int>(status));
    if (!last.empty()) out += " (" + last + ")";
    return out;
  }
  // "cuDNN: <what>: <status>", as BaselineError.
  [[noreturn]] void Throw(Status status, const CheckedCall& call) const {
    throw BaselineError("cuDNN: " + FailureText(*this, status, call.what));
  }
};

bool IsNotSupported(cudnnStatus_t status) {
  return CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED;
}

// Owns one backend descriptor; destroys it (ignoring errors) when it goes.
class Desc {
 public:
  Desc() = default;
  Desc(const Api* api, cudnnBackendDescriptor_t d) : api_(api), d_(d) {}
  Desc(Desc&& o) noexcept : api_(o.api_), d_(std::exchange(o.d_, nullptr)) {}
  Desc& operator=(Desc&& o) noexcept {
    if (this != &o) {
      Reset();
      api_ = o.api_;
      d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  ~Desc() { Reset(); }
  cudnnBackendDescriptor_t get() const { return d_; }
  explicit operator bool() const { return d_ != nullptr; }
  void Reset() noexcept {
    if (d_) api_->cudnnBackendDestroyDescriptor(d_);
    d_ = nullptr;
  }

 private:
  const Api* api_ = nullptr;
  cudnnBackendDescriptor_t d_ = nullptr;
};

Desc Make(const Api& api, cudnnBackendDescriptorType_t type, const std::string& what) {
  cudnnBackendDescriptor_t d = nullptr;
  PTXBENCH_CHECK_STATUS(api, api.cudnnBackendCreateDescriptor(type, &d),
                        "cudnnBackendCreateDescriptor(" + what + ")");
  return Desc(&api, d);
}

void Set(const Api& api, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
         cudnnBackendAttributeType_t type, int64_t count, const void* values,
         const std::string& what) {
  PTXBENCH_CHECK_STATUS(api, api.cudnnBackendSetAttribute(d, name, type, count, values),
                        "cudnnBackendSetAttribute(" + what + ")");
}

void SetDesc(const Api& api, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
             cudnnBackendDescriptor_t value, const std::string& what) {
  Set(api, d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value, what);
}

void FinalizeDescriptor(const Api& api, cudnnBackendDescriptor_t d, const std::string& what) {
  PTXBENCH_CHECK_STATUS(api, api.cudnnBackendFinalize(d), "cudnnBackendFinalize(" + what + ")");
}

// Owns one cudaMalloc allocation; frees it (ignoring errors) when it goes.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;
  DeviceBuffer(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  void Allocate(size_t bytes) {
    PTXBENCH_CUDA_CHECK(cudaMalloc(&p_, bytes));
    bytes_ = bytes;
  }
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

using Dims = std::array<int64_t, 4>;

// Unique ids of the tensors the caller or we bind in the variant pack. Virtual tensors
// and by-value scalars are numbered from kFirstVirtual and kFirstScalar.
enum Uid : int64_t {
  kQ = 1,
  kK = 2,
  kV = 3,
  kO = 4,
  kStats = 5,
  kdO = 6,
  kdQ = 7,
  kdK = 8,
  kdV = 9,
  kSoftmaxSum = 10,
  kdQAccum = 11,
  kSeqLenQ = 12,
  kSeqLenKV = 13,
  kFirstScalar = 100,
  kFirstVirtual = 1000,
};

// How the causal mask is lowered (see the top of this file).
enum class Lowering { kCurrent, kLegacyCausal };

const char* LoweringName(Lowering l) {
  return l == Lowering::kCurrent
             ? "cudnn-frontend 1.2x composite SDPA (causal indices fp32 math, -inf fill)"
             : "cudnn-frontend 1.2x composite SDPA with the 1.1x causal mask (int32 index "
               "math, lowest-float fill)";
}

// A prepared direction: the graph, the chosen plan and what executing it needs.
struct Plan {
  bool forward = true;
  SdpaShape shape{};
  float scale = 0;
  Lowering lowering = Lowering::kCurrent;
  bool padding_workaround = false;
  std::deque<float> scalars;  // by-value tensor values; their addresses go in the variant pack
  std::vector<Desc> owned;    // tensors and operations, alive as long as the graph
  Desc graph, engine_config, plan;
  DeviceBuffer workspace, softmax_sum, dq_accum, seq_lens;
  std::vector<int64_t> io_uids;  // in the order Forward/Backward pass their pointers
  std::vector<int64_t> fixed_uids;
  std::vector<void*> fixed_ptrs;  // scalars (host) and our own buffers (device)
  // Variant packs already built, by the caller's pointers (the timing loop cycles through a
  // few buffer sets): building one is host work only, but there is no need to repeat it.
  struct Pack {
    std::vector<const void*> key;
    Desc desc;
  };
  std::vector<Pack> packs;
  size_t ops = 0;
  std::string graph_text;
  nlohmann::json engine = nlohmann::json::object();
  int plans_tried = 0;
};

constexpr size_t kMaxCachedPacks = 8;
constexpr uintptr_t kTensorAlignment = 16;  // CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT of every tensor

// Builds one operation graph, owning every descriptor in `plan->owned`.
class GraphBuilder {
 public:
  GraphBuilder(const Api& api, Plan* plan) : api_(api), plan_(plan) {}

  cudnnBackendDescriptor_t Tensor(int64_t uid, cudnnDataType_t type, const Dims& dims,
                                  const Dims& strides, bool is_virtual, bool by_value,
                                  const std::string& name) {
    const std::string what = "tensor " + name;
    Desc t = Make(api_, CUDNN_BACKEND_TENSOR_DESCRIPTOR, what);
    const int64_t alignment = kTensorAlignment;
    Set(api_, t.get(), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, what);
    Set(api_, t.get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data(), what);
    Set(api_, t.get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data(), what);
    Set(api_, t.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, what);
    Set(api_, t.get(), CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, what);
    const bool yes = true;
    if (is_virtual)
      Set(api_, t.get(), CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes, what);
    if (by_value)
      Set(api_, t.get(), CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes, what);
    FinalizeDescriptor(api_, t.get(), what);
    return Keep(std::move(t));
  }
  // An intermediate: virtual, so never in memory.
  cudnnBackendDescriptor_t Virtual(cudnnDataType_t type, const Dims& dims, const Dims& strides,
                                   const std::string& name) {
    return Tensor(next_virtual_++, type, dims, strides, true, false, name);
  }
  // A by-value fp32 scalar [1,1,1,1]; its value is read from host memory at each execute.
  cudnnBackendDescriptor_t Scalar(float value, const std::string& name) {
    plan_->scalars.push_back(value);
    const int64_t uid = next_scalar_++;
    plan_->fixed_uids.push_back(uid);
    plan_->fixed_ptrs.push_back(&plan_->scalars.back());
    return Tensor(uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true, name);
  }

  // y = mode(x[, b[, t]]), alpha1 = alpha2 = 1; `axis` for GEN_INDEX.
  void Pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, cudnnBackendDescriptor_t x,
                 cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y,
                 const std::string& name, int64_t axis = -1) {
    const std::string what = "pointwise " + name;
    Desc pw = Make(api_, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, what);
    Set(api_, pw.get(), CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, what);
    Set(api_, pw.get(), CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math, what);
    if (mode == CUDNN_POINTWISE_GEN_INDEX)
      Set(api_, pw.get(), CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, what);
    FinalizeDescriptor(api_, pw.get(), what);

    const std::string op_what = "operation " + name;
    Desc op = Make(api_, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op_what);
    SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw.get(), op_what);
    SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x, op_what);
    SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y, op_what);
    const float one = 1.0f;
    Set(api_, op.get(), CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one, op_what);
    Set(api_, op.get(), CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one, op_what);
    if (b) SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b, op_what);
    if (t) SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t, op_what);
    Operation(std::move(op), op_what);
    Keep(std::move(pw));
  }
  // c = a·b over the last two dimensions, fp32 compute; optional m/n/k override tensors.
  void Matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c,
              const std::string& name, cudnnBackendDescriptor_t m = nullptr,
              cudnnBackendDescriptor_t n = nullptr, cudnnBackendDescriptor_t k = nullptr) {
    const std::string what = "matmul " + name;
    Desc mm = Make(api_, CUDNN_BACKEND_MATMUL_DESCRIPTOR, what);
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    const double padding = 0.0;
    Set(api_, mm.get(), CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, what);
    Set(api_, mm.get(), CUDNN_ATTR_MATMUL_PADDING_VALUE, CUDNN_TYPE_DOUBLE, 1, &padding, what);
    FinalizeDescriptor(api_, mm.get(), what);

    const std::string op_what = "operation " + name;
    Desc op = Make(api_, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, op_what);
    SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_MATMUL_ADESC, a, op_what);
    SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_MATMUL_BDESC, b, op_what);
    SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_MATMUL_CDESC, c, op_what);
    if (m) SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, m, op_what);
    if (n) SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, n, op_what);
    if (k) SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, k, op_what);
    SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_MATMUL_DESC, mm.get(), op_what);
    Operation(std::move(op), op_what);
    Keep(std::move(mm));
  }
  // y = reduce(x) over the dimensions where y has extent 1, fp32 compute, not deterministic.
  void Reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y,
                 const std::string& name, size_t version) {
    const std::string what = "reduction " + name;
    Desc red = Make(api_, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, what);
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    Set(api_, red.get(), CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, what);
    Set(api_, red.get(), CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1,
        &mode, what);
    if (version >= 91100) {  // the attribute exists from 9.11; the frontend sets it from then on
      const bool deterministic = false;
      Set(api_, red.get(), CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, 1,
          &deterministic, what);
    }
    FinalizeDescriptor(api_, red.get(), what);

    const std::string op_what = "operation " + name;
    Desc op = Make(api_, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, op_what);
    SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_REDUCTION_DESC, red.get(), op_what);
    SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x, op_what);
    SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y, op_what);
    Operation(std::move(op), op_what);
    Keep(std::move(red));
  }
  // y = x seen with y's dimensions and strides (here: transposes).
  void Reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y, const std::string& name) {
    const std::string op_what = "operation " + name;
    Desc op = Make(api_, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, op_what);
    SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x, op_what);
    SetDesc(api_, op.get(), CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y, op_what);
    Operation(std::move(op), op_what);
  }

  // The operation graph of everything added, in order. Returns the finalize status (the graph
  // itself is the first place cuDNN can refuse a shape).
  cudnnStatus_t Finalize(cudnnHandle_t handle, Desc* graph) {
    *graph = Make(api_, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
    Set(api_, graph->get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle,
        "operation graph");
    Set(api_, graph->get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        static_cast<int64_t>(ops_.size()), ops_.data(), "operation graph");
    plan_->ops = ops_.size();
    return api_.cudnnBackendFinalize(graph->get());
  }

 private:
  cudnnBackendDescriptor_t Keep(Desc d) {
    plan_->owned.push_back(std::move(d));
    return plan_->owned.back().get();
  }
  void Operation(Desc op, const std::string& what) {
    FinalizeDescriptor(api_, op.get(), what);
    ops_.push_back(Keep(std::move(op)));
  }

  const Api& api_;
  Plan* plan_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  int64_t next_virtual_ = kFirstVirtual;
  int64_t next_scalar_ = kFirstScalar;
};

// The shapes of one problem, as 4-d dimensions and strides.
struct Layouts {
  Dims bhsd, bhsd_s;  // Q, K, V, O, dO, dQ, dK, dV: [B,H,S,D] contiguous
  Dims bhds, bhds_s;  // K (and V) read as their transposes [B,H,D,S] (swapped strides)
  Dims bhss, bhss_s;  // scores [B,H,S,S] contiguous
  Dims bhss_t;        // scores transposed: [B,H,S,S] with the last two strides swapped
  Dims bhs1, bhs1_s;  // statistics [B,H,S,1]
  explicit Layouts(const SdpaShape& s) {
    const int64_t B = s.B, H = s.H, S = s.S, D = s.D;
    bhsd = {B, H, S, D};
    bhsd_s = {H * S * D, S * D, D, 1};
    bhds = {B, H, D, S};
    bhds_s = {H * S * D, S * D, 1, D};
    bhss = {B, H, S, S};
    bhss_s = {H * S * S, S * S, S, 1};
    bhss_t = {H * S * S, S * S, 1, S};
    bhs1 = {B, H, S, 1};
    bhs1_s = {H * S, S, 1, 1};
  }
};

// The causal mask (the frontend's diagonal band with right bound 0, top-left aligned):
// score(i, j) kept where row i >= column j, else the fill value.
cudnnBackendDescriptor_t CausalMask(GraphBuilder& g, const Layouts& l, Lowering lowering,
                                    size_t version, cudnnBackendDescriptor_t score) {
  const bool legacy = lowering == Lowering::kLegacyCausal;
  const cudnnDataType_t index_math = legacy ? CUDNN_DATA_INT32 : CUDNN_DATA_FLOAT;
  const float fill = legacy || version < 91000 ? std::numeric_limits<float>::lowest()
                                               : -std::numeric_limits<float>::infinity();
  auto row = g.Virtual(CUDNN_DATA_INT32, l.bhss, l.bhss_s, "causal row index");
  g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, index_math, score, nullptr, nullptr, row, "gen_index(row)",
              2);
  auto col = g.Virtual(CUDNN_DATA_INT32, l.bhss, l.bhss_s, "causal column index");
  g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, index_math, score, nullptr, nullptr, col, "gen_index(col)",
              3);
  auto keep = g.Virtual(CUDNN_DATA_BOOLEAN, l.bhss, l.bhss_s, "causal keep");
  g.Pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col, nullptr, keep,
              "cmp_ge(row, col)");
  auto fill_value = g.Scalar(fill, "causal fill");
  auto out = g.Virtual(CUDNN_DATA_FLOAT, l.bhss, l.bhss_s, "causal masked scores");
  g.Pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, score, fill_value, keep, out,
              "binary_select(causal)");
  return out;
}

// The padding mask (row < seq_len_q and column < seq_len_kv), which the frontend adds to the
// backward on backends up to 9.15.0 when S % 128 != 0, with every sequence length S.
cudnnBackendDescriptor_t PaddingMask(GraphBuilder& g, const Layouts& l, size_t version,
                                     cudnnBackendDescriptor_t score, cudnnBackendDescriptor_t seq_q,
                                     cudnnBackendDescriptor_t seq_kv) {
  auto row = g.Virtual(CUDNN_DATA_INT32, l.bhss, l.bhss_s, "padding row index");
  g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, score, nullptr, nullptr, row,
              "gen_index(row, padding)", 2);
  auto col = g.Virtual(CUDNN_DATA_INT32, l.bhss, l.bhss_s, "padding column index");
  g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, score, nullptr, nullptr, col,
              "gen_index(col, padding)", 3);
  auto row_ok = g.Virtual(CUDNN_DATA_BOOLEAN, l.bhss, l.bhss_s, "padding row ok");
  g.Pointwise(CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, row, seq_q, nullptr, row_ok,
              "cmp_lt(row, seq_len_q)");
  auto col_ok = g.Virtual(CUDNN_DATA_BOOLEAN, l.bhss, l.bhss_s, "padding column ok");
  g.Pointwise(CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, col, seq_kv, nullptr, col_ok,
              "cmp_lt(col, seq_len_kv)");
  auto keep = g.Virtual(CUDNN_DATA_BOOLEAN, l.bhss, l.bhss_s, "padding keep");
  g.Pointwise(CUDNN_POINTWISE_LOGICAL_AND, CUDNN_DATA_BOOLEAN, row_ok, col_ok, nullptr, keep,
              "logical_and(padding)");
  const float fill = version < 91000 ? std::numeric_limits<float>::lowest()
                                     : -std::numeric_limits<float>::infinity();
  auto fill_value = g.Scalar(fill, "padding fill");
  auto out = g.Virtual(CUDNN_DATA_FLOAT, l.bhss, l.bhss_s, "padding masked scores");
  g.Pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, score, fill_value, keep, out,
              "binary_select(padding)");
  return out;
}

// Forward with statistics (CompositeSDPANode, generate_stats, attn_scale by value, causal
// as the band mask, then the composite softmax):
//   S1 = Q·Kᵀ; S2 = S1 * scale; [S2 = causal(S2)]; M = max_j S2; E = exp(S2 - M);
//   Z = Σ_j E; Stats = M + ln Z; P = E / Z (bf16); O = P·V.
void BuildForward(GraphBuilder& g, const Layouts& l, Plan& p, size_t version) {
  const cudnnDataType_t bf16 = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
  auto q = g.Tensor(kQ, bf16, l.bhsd, l.bhsd_s, false, false, "Q");
  auto kt = g.Tensor(kK, bf16, l.bhds, l.bhds_s, false, false, "K (as Kᵀ)");
  auto v = g.Tensor(kV, bf16, l.bhsd, l.bhsd_s, false, false, "V");
  auto o = g.Tensor(kO, bf16, l.bhsd, l.bhsd_s, false, false, "O");
  auto stats = g.Tensor(kStats, f32, l.bhs1, l.bhs1_s, false, false, "Stats");
  p.io_uids = {kQ, kK, kV, kO, kStats};

  auto s1 = g.Virtual(f32, l.bhss, l.bhss_s, "Q·Kᵀ");
  g.Matmul(q, kt, s1, "bmm1 Q·Kᵀ");
  auto scale = g.Scalar(p.scale, "attn_scale");
  auto s2 = g.Virtual(f32, l.bhss, l.bhss_s, "scaled scores");
  g.Pointwise(CUDNN_POINTWISE_MUL, f32, s1, scale, nullptr, s2, "mul(scale)");
  auto scores = s2;
  if (p.shape.causal) scores = CausalMask(g, l, p.lowering, version, scores);

  auto row_max = g.Virtual(f32, l.bhs1, l.bhs1_s, "row max");
  g.Reduction(CUDNN_REDUCE_TENSOR_MAX, scores, row_max, "max", version);
  auto shifted = g.Virtual(f32, l.bhss, l.bhss_s, "scores - max");
  g.Pointwise(CUDNN_POINTWISE_SUB, f32, scores, row_max, nullptr, shifted, "sub(max)");
  auto e = g.Virtual(f32, l.bhss, l.bhss_s, "exp");
  g.Pointwise(CUDNN_POINTWISE_EXP, f32, shifted, nullptr, nullptr, e, "exp");
  auto sum = g.Virtual(f32, l.bhs1, l.bhs1_s, "row sum");
  g.Reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum, "sum", version);
  auto log_sum = g.Virtual(f32, l.bhs1, l.bhs1_s, "log(row sum)");
  g.Pointwise(CUDNN_POINTWISE_LOG, f32, sum, nullptr, nullptr, log_sum, "log");
  g.Pointwise(CUDNN_POINTWISE_ADD, f32, row_max, log_sum, nullptr, stats, "add → Stats");
  // The second matmul's A operand is virtual but typed as the io type (bf16), as the
  // frontend requires for the fused engine.
  auto probs = g.Virtual(bf16, l.bhss, l.bhss_s, "P");
  g.Pointwise(CUDNN_POINTWISE_DIV, f32, e, sum, nullptr, probs, "div");
  g.Matmul(probs, v, o, "bmm2 P·V");

  p.graph_text = std::string("fwd: S = Q·Kᵀ (matmul, K as [B,H,D,S]) × scale (mul, by value)") +
                 (p.shape.causal ? "; causal: gen_index row, gen_index col, cmp_ge, "
                                   "binary_select(fill, by value)"
                                 : "") +
                 "; softmax with stats: max (reduction), sub, exp, sum (reduction), log, add → "
                 "Stats (fp32), div → P (bf16, virtual); O = P·V (matmul)";
}

// Backward (CompositeSDPABackwardNode, no dropout, no bias, MHA, dQ through the fp32
// accumulator as on every 9.x backend when determinism is not asked for):
//   softmax_sum = Σ_d dO∘O * 1 (fp32 tensor);
//   S = Q·Kᵀ * scale - Stats; [padding mask]; [causal mask]; P = exp(S);
//   dV = Pᵀ·dO; dP = dO·Vᵀ; dS = (dP - softmax_sum) * P * scale;
//   dK = dSᵀ·Q; dQ_accum = dS·K (fp32 tensor); dQ = identity(dQ_accum).
void BuildBackward(GraphBuilder& g, const Layouts& l, Plan& p, size_t version) {
  const cudnnDataType_t bf16 = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
  const SdpaShape& s = p.shape;
  auto q = g.Tensor(kQ, bf16, l.bhsd, l.bhsd_s, false, false, "Q");
  auto kt = g.Tensor(kK, bf16, l.bhds, l.bhds_s, false, false, "K (as Kᵀ)");
  auto vt = g.Tensor(kV, bf16, l.bhds, l.bhds_s, false, false, "V (as Vᵀ)");
  auto o = g.Tensor(kO, bf16, l.bhsd, l.bhsd_s, false, false, "O");
  auto d_o = g.Tensor(kdO, bf16, l.bhsd, l.bhsd_s, false, false, "dO");
  auto stats = g.Tensor(kStats, f32, l.bhs1, l.bhs1_s, false, false, "Stats");
  auto dq = g.Tensor(kdQ, bf16, l.bhsd, l.bhsd_s, false, false, "dQ");
  auto dk = g.Tensor(kdK, bf16, l.bhsd, l.bhsd_s, false, false, "dK");
  auto dv = g.Tensor(kdV, bf16, l.bhsd, l.bhsd_s, false, false, "dV");
  p.io_uids = {kQ, kK, kV, kO, kdO, kStats, kdQ, kdK, kdV};

  const size_t rows = size_t(s.B) * s.H * s.S, elements = rows * s.D;
  p.softmax_sum.Allocate(rows * sizeof(float));
  p.dq_accum.Allocate(elements * sizeof(float));
  // The frontend leaves the accumulator to the engine from 9.6 on (before, it zeroed it on
  // every call); zeroing it once here costs nothing per call and leaves no garbage.
  PTXBENCH_CUDA_CHECK(cudaMemset(p.dq_accum.get(), 0, p.dq_accum.bytes()));
  auto softmax_sum =
      g.Tensor(kSoftmaxSum, f32, l.bhs1, l.bhs1_s, false, false, "softmax_sum (rowsum dO∘O)");
  auto dq_accum = g.Tensor(kdQAccum, f32, l.bhsd, l.bhsd_s, false, false, "dQ accumulator");
  p.fixed_uids.insert(p.fixed_uids.end(), {kSoftmaxSum, kdQAccum});
  p.fixed_ptrs.insert(p.fixed_ptrs.end(), {p.softmax_sum.get(), p.dq_accum.get()});

  cudnnBackendDescriptor_t seq_q = nullptr, seq_kv = nullptr;
  p.padding_workaround = version <= 91500 && s.S % 128 != 0;
  if (p.padding_workaround) {
    // Two int32 vectors [B] of S, 256 bytes apart (each 16-byte aligned), filled once: they
    // never change (the frontend copies the same values in before every call).
    const size_t stride = (size_t(s.B) * sizeof(int32_t) + 255) / 256 * 256;
    p.seq_lens.Allocate(2 * stride);
    std::vector<int32_t> lengths(2 * stride / sizeof(int32_t), s.S);
    PTXBENCH_CUDA_CHECK(
        cudaMemcpy(p.seq_lens.get(), lengths.data(), 2 * stride, cudaMemcpyHostToDevice));
    const Dims b111 = {s.B, 1, 1, 1}, ones = {1, 1, 1, 1};
    seq_q = g.Tensor(kSeqLenQ, CUDNN_DATA_INT32, b111, ones, false, false, "seq_len_q");
    seq_kv = g.Tensor(kSeqLenKV, CUDNN_DATA_INT32, b111, ones, false, false, "seq_len_kv");
    p.fixed_uids.insert(p.fixed_uids.end(), {kSeqLenQ, kSeqLenKV});
    p.fixed_ptrs.insert(p.fixed_ptrs.end(),
                        {p.seq_lens.get(), static_cast<char*>(p.seq_lens.get()) + stride});
  }

  // softmax_sum = rowsum(dO ∘ O) · 1. The product's strides are the frontend's (immaterial
  // for a virtual tensor, but copied as they are).
  const Dims do_o_strides = {l.bhsd_s[0], l.bhsd_s[1], int64_t(s.H) * s.D, 1};
  auto do_o = g.Virtual(f32, l.bhsd, do_o_strides, "dO∘O");
  g.Pointwise(CUDNN_POINTWISE_MUL, f32, d_o, o, nullptr, do_o, "mul(dO, O)");
  auto rowsum = g.Virtual(f32, l.bhs1, l.bhs1_s, "rowsum(dO∘O)");
  g.Reduction(CUDNN_REDUCE_TENSOR_ADD, do_o, rowsum, "reduce_add(dO∘O)", version);
  auto one = g.Scalar(1.0f, "one");
  g.Pointwise(CUDNN_POINTWISE_MUL, f32, rowsum, one, nullptr, softmax_sum, "mul(1) → softmax_sum");

  // P = exp(Q·Kᵀ·scale - Stats), masked.
  auto s1 = g.Virtual(f32, l.bhss, l.bhss_s, "Q·Kᵀ");
  g.Matmul(q, kt, s1, "Q·Kᵀ", seq_q, seq_kv, nullptr);
  auto scale = g.Scalar(p.scale, "attn_scale");
  auto s2 = g.Virtual(f32, l.bhss, l.bhss_s, "scaled scores");
  g.Pointwise(CUDNN_POINTWISE_MUL, f32, s1, scale, nullptr, s2, "mul(scale)");
  auto s3 = g.Virtual(f32, l.bhss, l.bhss_s, "scores - Stats");
  g.Pointwise(CUDNN_POINTWISE_SUB, f32, s2, stats, nullptr, s3, "sub(Stats)");
  auto scores = s3;
  if (p.padding_workaround) scores = PaddingMask(g, l, version, scores, seq_q, seq_kv);
  if (s.causal) scores = CausalMask(g, l, p.lowering, version, scores);
  auto probs = g.Virtual(f32, l.bhss, l.bhss_s, "P");
  g.Pointwise(CUDNN_POINTWISE_EXP, f32, scores, nullptr, nullptr, probs, "exp → P");

  // dV = Pᵀ·dO.
  auto probs_t = g.Virtual(bf16, l.bhss, l.bhss_t, "Pᵀ");
  g.Reshape(probs, probs_t, "reshape Pᵀ");
  g.Matmul(probs_t, d_o, dv, "Pᵀ·dO → dV", seq_kv, nullptr, seq_q);

  // dS = (dO·Vᵀ - softmax_sum) * P * scale.
  auto dp = g.Virtual(f32, l.bhss, l.bhss_s, "dO·Vᵀ");
  g.Matmul(d_o, vt, dp, "dO·Vᵀ", seq_q, seq_kv, nullptr);
  auto dp_centered = g.Virtual(f32, l.bhss, l.bhss_s, "dP - softmax_sum");
  g.Pointwise(CUDNN_POINTWISE_SUB, f32, dp, softmax_sum, nullptr, dp_centered, "sub(softmax_sum)");
  auto ds_unscaled = g.Virtual(f32, l.bhss, l.bhss_s, "(dP - softmax_sum)·P");
  g.Pointwise(CUDNN_POINTWISE_MUL, f32, dp_centered, probs, nullptr, ds_unscaled, "mul(P)");
  auto ds = g.Virtual(f32, l.bhss, l.bhss_s, "dS");
  g.Pointwise(CUDNN_POINTWISE_MUL, f32, ds_unscaled, scale, nullptr, ds, "mul(scale) → dS");

  // dK = dSᵀ·Q.
  auto ds_t = g.Virtual(bf16, l.bhss, l.bhss_t, "dSᵀ");
  g.Reshape(ds, ds_t, "reshape dSᵀ");
  g.Matmul(ds_t, q, dk, "dSᵀ·Q → dK", seq_kv, nullptr, seq_q);

  // dQ = dS·K, through the fp32 accumulator.
  auto k = g.Virtual(f32, l.bhsd, l.bhsd_s, "K (from Kᵀ)");
  g.Reshape(kt, k, "reshape K");
  g.Matmul(ds, k, dq_accum, "dS·K → dQ accumulator", seq_q, nullptr, seq_kv);
  g.Pointwise(CUDNN_POINTWISE_IDENTITY, f32, dq_accum, nullptr, nullptr, dq, "identity → dQ");

  p.graph_text =
      std::string(
          "bwd: softmax_sum = rowsum(dO∘O) (mul, reduction add, mul by 1 → fp32 "
          "tensor); S = Q·Kᵀ (matmul, K as [B,H,D,S]) × scale − Stats") +
      (p.padding_workaround ? "; padding mask (gen_index ×2, cmp_lt ×2 against seq_len, "
                              "logical_and, binary_select; matmuls with m/n/k overrides)"
                            : "") +
      (s.causal ? "; causal mask (gen_index ×2, cmp_ge, binary_select)" : "") +
      "; P = exp(S); dV = Pᵀ·dO (reshape to bf16, matmul); dP = dO·Vᵀ (matmul, V as "
      "[B,H,D,S]); dS = (dP − softmax_sum)·P × scale; dK = dSᵀ·Q (reshape to bf16, matmul); "
      "dQ = dS·K (reshape K, matmul → fp32 accumulator, identity → dQ)";
}

// The engine behind a configuration, its knob choices and notes, as far as cuDNN reports
// them; never throws (this is description, not the plan).
nlohmann::json ReadEngine(const Api& api, cudnnBackendDescriptor_t cfg) {
  nlohmann::json e = nlohmann::json::object();
  cudnnBackendDescriptor_t raw = nullptr;
  if (api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &raw) ==
      CUDNN_STATUS_SUCCESS) {
    Desc engine(&api, raw);
    int64_t n = 0;
    if (api.cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                     &raw) == CUDNN_STATUS_SUCCESS &&
        n == 1) {
      int64_t index = -1;
      if (api.cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                       CUDNN_TYPE_INT64, 1, &n, &index) == CUDNN_STATUS_SUCCESS &&
          n == 1)
        e["global_index"] = index;
      std::array<cudnnBackendBehaviorNote_t, 32> behavior{};
      if (api.cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                       CUDNN_TYPE_BEHAVIOR_NOTE, int64_t(behavior.size()), &n,
                                       behavior.data()) == CUDNN_STATUS_SUCCESS) {
        nlohmann::json list = nlohmann::json::array();
        for (int64_t i = 0; i < n && i < int64_t(behavior.size()); ++i)
          list.push_back(static_cast<int>(behavior[i]));
        e["behavior_notes"] = list;
      }
      std::array<cudnnBackendNumericalNote_t, 32> numerical{};
      if (api.cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                       CUDNN_TYPE_NUMERICAL_NOTE, int64_t(numerical.size()), &n,
                                       numerical.data()) == CUDNN_STATUS_SUCCESS) {
        nlohmann::json list = nlohmann::json::array();
        for (int64_t i = 0; i < n && i < int64_t(numerical.size()); ++i)
          list.push_back(static_cast<int>(numerical[i]));
        e["numerical_notes"] = list;
      }
    }
  }
  // The knob choices: asking for the count alone answers 0, so ask for as many as there are
  // knob types.
  {
    const int64_t count = std::max<int64_t>(CUDNN_KNOB_TYPE_COUNTS, 64);
    std::vector<Desc> choices;
    std::vector<cudnnBackendDescriptor_t> raws;
    for (int64_t i = 0; i < count; ++i) {
      cudnnBackendDescriptor_t d = nullptr;
      if (api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &d) !=
          CUDNN_STATUS_SUCCESS)
        return e;
      choices.emplace_back(&api, d);
      raws.push_back(d);
    }
    int64_t got = 0;
    if (api.cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                                     raws.data()) == CUDNN_STATUS_SUCCESS) {
      nlohmann::json knobs = nlohmann::json::array();
      for (int64_t i = 0; i < got && i < count; ++i) {
        cudnnBackendKnobType_t type{};
        int64_t value = 0, n = 0;
        if (api.cudnnBackendGetAttribute(raws[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                         CUDNN_TYPE_KNOB_TYPE, 1, &n,
                                         &type) != CUDNN_STATUS_SUCCESS ||
            api.cudnnBackendGetAttribute(raws[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                         CUDNN_TYPE_INT64, 1, &n, &value) != CUDNN_STATUS_SUCCESS)
          continue;
        knobs.push_back({{"type", static_cast<int>(type)}, {"value", value}});
      }
      e["knobs"] = knobs;
    }
  }
  return e;
}

// The last refusal seen while looking for a plan, and whether every refusal so far was a
// CUDNN_STATUS_NOT_SUPPORTED* (cuDNN saying "not this shape") rather than another error.
struct Refusals {
  std::string last = "the heuristics offered no engine configuration";
  bool all_not_supported = true;
  void Note(const Api& api, cudnnStatus_t status, const std::string& what) {
    last = FailureText(api, status, what);
    all_not_supported = all_not_supported && IsNotSupported(status);
  }
  void NoteRefused(const std::string& text) { last = text; }
};

// Takes the first configuration, heuristics mode A then the fallback list, whose execution
// plan finalizes. Returns false (with the refusals noted) when none does.
bool ChoosePlan(const Api& api, cudnnHandle_t handle, Plan& p, Refusals& refusals) {
  const struct {
    cudnnBackendHeurMode_t mode;
    const char* name;
  } modes[] = {{CUDNN_HEUR_MODE_A, "A"}, {CUDNN_HEUR_MODE_FALLBACK, "fallback"}};
  cudnnBackendDescriptor_t graph = p.graph.get();
  for (const auto& m : modes) {
    const std::string what = std::string("engine heuristics (mode ") + m.name + ")";
    Desc heur = Make(api, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, what);
    SetDesc(api, heur.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph, what);
    Set(api, heur.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &m.mode, what);
    if (cudnnStatus_t st = api.cudnnBackendFinalize(heur.get()); st != CUDNN_STATUS_SUCCESS) {
      refusals.Note(api, st, "cudnnBackendFinalize(" + what + ")");
      continue;
    }
    int64_t count = 0;
    if (cudnnStatus_t st =
            api.cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr);
        st != CUDNN_STATUS_SUCCESS) {
      refusals.Note(api, st, "cudnnBackendGetAttribute(" + what + ", result count)");
      continue;
    }
    if (count <= 0) continue;
    std::vector<Desc> configs;
    std::vector<cudnnBackendDescriptor_t> raws;
    for (int64_t i = 0; i < count; ++i) {
      configs.push_back(Make(api, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config"));
      raws.push_back(configs.back().get());
    }
    int64_t got = 0;
    PTXBENCH_CHECK_STATUS(
        api,
        api.cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raws.data()),
        "cudnnBackendGetAttribute(" + what + ", results)");
    // cuDNN checks each configuration as it hands them out and leaves out those that refuse
    // the graph; the reasons are in its last error message.
    if (got <= 0)
      refusals.NoteRefused(what + " kept none of its " + std::to_string(count) +
                           " configurations: " + api.LastError());
    for (int64_t i = 0; i < got && i < count; ++i) {
      ++p.plans_tried;
      Desc plan = Make(api, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan");
      Set(api, plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle,
          "execution plan");
      SetDesc(api, plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, raws[i], "execution plan");
      if (cudnnStatus_t st = api.cudnnBackendFinalize(plan.get()); st != CUDNN_STATUS_SUCCESS) {
        refusals.Note(api, st,
                      "cudnnBackendFinalize(execution plan, mode " + std::string(m.name) +
                          " config " + std::to_string(i) + ")");
        continue;
      }
      int64_t workspace = 0, n = 0;
      PTXBENCH_CHECK_STATUS(
          api,
          api.cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                       CUDNN_TYPE_INT64, 1, &n, &workspace),
          "cudnnBackendGetAttribute(execution plan, workspace size)");
      if (workspace > 0) p.workspace.Allocate(static_cast<size_t>(workspace));
      p.engine = ReadEngine(api, raws[i]);
      p.engine["heuristic"] = m.name;
      p.engine["config_index"] = i;
      p.engine_config = std::move(configs[i]);
      p.plan = std::move(plan);
      return true;
    }
  }
  return false;
}

std::string ShapeText(bool forward, const SdpaShape& s) {
  return std::string(forward ? "fwd" : "bwd") + " B=" + std::to_string(s.B) +
         " H=" + std::to_string(s.H) + " S=" + std::to_string(s.S) + " D=" + std::to_string(s.D) +
         " causal=" + std::to_string(s.causal ? 1 : 0);
}

const VendorLibrarySpec kLibrary{"cuDNN", "PTXBENCH_CUDNN", {"libcudnn.so.9", "libcudnn.so"}};

}  // namespace

struct CudnnSdpa::Impl {
  Api api;  // first: the plans' descriptors use it when they are destroyed
  VendorLibrary library;
  cudnnHandle_t handle = nullptr;  // created by the first Prepare, which has a device
  std::unique_ptr<Plan> forward, backward;
  const Plan* latest = nullptr;  // what Describe() reports

  size_t RuntimeVersion() const { return api.cudnnGetVersion(); }

  void Prepare(bool forward, const SdpaShape& s) {
    const char* fn = forward ? "PrepareForward" : "PrepareBackward";
    if (s.B <= 0 || s.H <= 0 || s.S <= 0 || s.D <= 0)
      throw BaselineError(std::string("cuDNN: ") + fn + ": B, H, S, D must be positive, got " +
                          ShapeText(forward, s));
    std::unique_ptr<Plan>& slot = forward ? this->forward : backward;
    if (latest == slot.get()) latest = nullptr;
    slot.reset();
    if (!handle) PTXBENCH_CHECK_STATUS(api, api.cudnnCreate(&handle), "cudnnCreate");
    const size_t version = RuntimeVersion();

    std::vector<Lowering> lowerings = {Lowering::kCurrent};
    if (s.causal) lowerings.push_back(Lowering::kLegacyCausal);
    Refusals refusals;
    int tried = 0;
    for (Lowering lowering : lowerings) {
      auto plan = std::make_unique<Plan>();
      plan->forward = forward;
      plan->shape = s;
      plan->scale = 1.0f / std::sqrt(static_cast<float>(s.D));
      plan->lowering = lowering;
      plan->plans_tried = tried;
      GraphBuilder g(api, plan.get());
      Layouts l(s);
      if (forward)
        BuildForward(g, l, *plan, version);
      else
        BuildBackward(g, l, *plan, version);
      if (cudnnStatus_t st = g.Finalize(handle, &plan->graph); st != CUDNN_STATUS_SUCCESS) {
        if (!IsNotSupported(st))
          throw BaselineError("cuDNN: cudnnBackendFinalize(operation graph, " +
                              ShapeText(forward, s) + "): " + api.Describe(st));
        refusals.Note(api, st, "cudnnBackendFinalize(operation graph)");
        continue;
      }
      const bool found = ChoosePlan(api, handle, *plan, refusals);
      tried = plan->plans_tried;
      if (found) {
        slot = std::move(plan);
        latest = slot.get();
        return;
      }
    }
    const std::string tail = ": " + std::to_string(tried) +
                             " engine configurations tried (heuristics mode A, then the "
                             "fallback list" +
                             (s.causal ? ", for both causal-mask lowerings" : "") +
                             "); last: " + refusals.last;
    if (refusals.all_not_supported)
      throw BaselineUnsupported("cuDNN " + VendorVersionString(version) + " has no engine for " +
                                ShapeText(forward, s) + tail);
    throw BaselineError("cuDNN: no execution plan finalized for " + ShapeText(forward, s) + tail);
  }

  // One execution on `stream`. Builds a variant pack only for pointers not seen before (host
  // work; the per-call path allocates nothing).
  void Execute(Plan& p, std::initializer_list<const void*> io, cudaStream_t stream) {
    for (const void* ptr : io)
      if (reinterpret_cast<uintptr_t>(ptr) % kTensorAlignment != 0)
        throw BaselineError("cuDNN: " + std::string(p.forward ? "Forward" : "Backward") +
                            ": tensors must be 16-byte aligned");
    Plan::Pack* pack = nullptr;
    for (Plan::Pack& candidate : p.packs)
      if (std::equal(candidate.key.begin(), candidate.key.end(), io.begin(), io.end())) {
        pack = &candidate;
        break;
      }
    if (!pack) {
      std::vector<int64_t> uids = p.io_uids;
      uids.insert(uids.end(), p.fixed_uids.begin(), p.fixed_uids.end());
      std::vector<void*> ptrs;
      for (const void* ptr : io) ptrs.push_back(const_cast<void*>(ptr));
      ptrs.insert(ptrs.end(), p.fixed_ptrs.begin(), p.fixed_ptrs.end());
      if (uids.size() != ptrs.size())
        throw BaselineError("cuDNN: internal error: variant pack of " +
                            std::to_string(ptrs.size()) + " pointers for " +
                            std::to_string(uids.size()) + " tensors");
      Desc vp = Make(api, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack");
      Set(api, vp.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
          static_cast<int64_t>(uids.size()), uids.data(), "variant pack");
      Set(api, vp.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
          static_cast<int64_t>(ptrs.size()), ptrs.data(), "variant pack");
      void* workspace = p.workspace.get();
      Set(api, vp.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace,
          "variant pack");
      FinalizeDescriptor(api, vp.get(), "variant pack");
      if (p.packs.size() >= kMaxCachedPacks) p.packs.erase(p.packs.begin());
      p.packs.push_back({std::vector<const void*>(io), std::move(vp)});
      pack = &p.packs.back();
    }
    PTXBENCH_CHECK_STATUS(api, api.cudnnSetStream(handle, stream), "cudnnSetStream");
    PTXBENCH_CHECK_STATUS(api, api.cudnnBackendExecute(handle, p.plan.get(), pack->desc.get()),
                          "cudnnBackendExecute");
  }
};

std::unique_ptr<CudnnSdpa> CudnnSdpa::Load() {
  return std::unique_ptr<CudnnSdpa>(new CudnnSdpa(LoadVendorImpl<Impl>(kLibrary)));
}

CudnnSdpa::CudnnSdpa(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CudnnSdpa::~CudnnSdpa() {
  impl_->latest = nullptr;
  impl_->forward.reset();
  impl_->backward.reset();
  if (impl_->handle) impl_->api.cudnnDestroy(impl_->handle);
  // No dlclose(): cuDNN registers kernels with the CUDA runtime and keeps caches, so
  // unloading it mid-process risks a crash.
}

void CudnnSdpa::PrepareForward(const SdpaShape& shape) { impl_->Prepare(true, shape); }

void CudnnSdpa::PrepareBackward(const SdpaShape& shape) { impl_->Prepare(false, shape); }

void CudnnSdpa::Forward(const void* Q, const void* K, const void* V, void* O, float* LSE,
                        cudaStream_t stream) {
  if (!impl_->forward) throw BaselineError("cuDNN: Forward before a successful PrepareForward");
  impl_->Execute(*impl_->forward, {Q, K, V, O, LSE}, stream);
}

void CudnnSdpa::Backward(const void* Q, const void* K, const void* V, const void* O, const void* dO,
                         const float* LSE, void* dQ, void* dK, void* dV, cudaStream_t stream) {
  if (!impl_->backward) throw BaselineError("cuDNN: Backward before a successful PrepareBackward");
  impl_->Execute(*impl_->backward, {Q, K, V, O, dO, LSE, dQ, dK, dV}, stream);
}

std::string CudnnSdpa::Version() const { return VendorVersionString(impl_->RuntimeVersion()); }

nlohmann::json CudnnSdpa::Describe() const {
  const Impl& p = *impl_;
  nlohmann::json j = p.library.Describe(Version(), VendorVersionString(CUDNN_VERSION));
  const Plan* plan = p.latest;
  if (!plan) return j;
  const SdpaShape& s = plan->shape;
  j["direction"] = plan->forward ? "fwd" : "bwd";
  j["B"] = s.B;
  j["H"] = s.H;
  j["S"] = s.S;
  j["D"] = s.D;
  j["causal"] = s.causal;
  j["scale"] = plan->scale;
  j["layout"] = "BHSD contiguous";
  j["graph"] = plan->graph_text;
  j["lowering"] = LoweringName(plan->lowering);
  if (!plan->forward) j["padding_workaround"] = plan->padding_workaround;
  j["ops"] = plan->ops;
  j["engine"] = plan->engine;
  j["workspace_bytes"] = plan->workspace.bytes();
  if (!plan->forward)
    j["extra_device_bytes"] =
        plan->softmax_sum.bytes() + plan->dq_accum.bytes() + plan->seq_lens.bytes();
  j["plans_tried"] = plan->plans_tried;
  return j;
}

}  // namespace ptxbench

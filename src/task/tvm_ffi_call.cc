#include "task/tvm_ffi_call.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

#if defined(PTXBENCH_HAVE_TVM_FFI_HEADERS)
#include <dlpack/dlpack.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>
#endif

namespace ptxbench {
namespace {

// --- the few plain-data types of the TVM-FFI C ABI (apache-tvm-ffi 0.1.12, DLPack 1.3) ---
struct FfiDevice {
  int32_t device_type;
  int32_t device_id;
};
struct FfiDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct FfiDlTensor {
  void* data;
  FfiDevice device;
  int32_t ndim;
  FfiDataType dtype;
  int64_t* shape;
  int64_t* strides;  // DLPack >= 1.2: never null when ndim > 0
  uint64_t byte_offset;
};
struct FfiAny {
  int32_t type_index;
  uint32_t zero_padding;
  union {
    int64_t v_int64;
    double v_float64;
    void* v_ptr;
  };
};
struct FfiObject {  // TVMFFIObject, the header of every object
  uint64_t combined_ref_count;
  int32_t type_index;
  uint32_t padding;
  void (*deleter)(void* self, int flags);
};
struct FfiByteArray {
  const char* data;
  size_t size;
};
struct FfiErrorCell {  // what follows the header of an Error object (its leading fields)
  FfiByteArray kind;
  FfiByteArray message;
  FfiByteArray backtrace;
};

constexpr int32_t kTypeNone = 0;
constexpr int32_t kTypeDlTensorPtr = 7;
constexpr int32_t kTypeStaticObjectBegin = 64;
constexpr int32_t kTypeError = 67;
constexpr int32_t kDeviceCuda = 2;
constexpr uint8_t kCodeFloat = 2;
constexpr uint8_t kCodeBfloat = 4;

using SafeCall = int (*)(void* self, const FfiAny* args, int32_t num_args, FfiAny* result);
using EnvSetStream = int (*)(int32_t device_type, int32_t device_id, void* stream,
                             void** opt_out_original_stream);
using ErrorMoveFromRaised = void (*)(void** result);
using ObjectDecRef = int (*)(void* obj);

#if defined(PTXBENCH_HAVE_TVM_FFI_HEADERS)
// Our definitions against the pinned headers, field by field.
static_assert(TVM_FFI_VERSION_MAJOR == 0 && TVM_FFI_VERSION_MINOR == 1,
              "the TVM-FFI C ABI was checked against apache-tvm-ffi 0.1.x");
static_assert(sizeof(FfiDevice) == sizeof(DLDevice));
static_assert(offsetof(FfiDevice, device_id) == offsetof(DLDevice, device_id));
static_assert(sizeof(FfiDataType) == sizeof(DLDataType));
static_assert(offsetof(FfiDataType, bits) == offsetof(DLDataType, bits));
static_assert(offsetof(FfiDataType, lanes) == offsetof(DLDataType, lanes));
static_assert(sizeof(FfiDlTensor) == sizeof(DLTensor));
static_assert(offsetof(FfiDlTensor, data) == offsetof(DLTensor, data));
static_assert(offsetof(FfiDlTensor, device) == offsetof(DLTensor, device));
static_assert(offsetof(FfiDlTensor, ndim) == offsetof(DLTensor, ndim));
static_assert(offsetof(FfiDlTensor, dtype) == offsetof(DLTensor, dtype));
static_assert(offsetof(FfiDlTensor, shape) == offsetof(DLTensor, shape));
static_assert(offsetof(FfiDlTensor, strides) == offsetof(DLTensor, strides));
static_assert(offsetof(FfiDlTensor, byte_offset) == offsetof(DLTensor, byte_offset));
static_assert(sizeof(FfiAny) == sizeof(TVMFFIAny));
static_assert(offsetof(FfiAny, type_index) == offsetof(TVMFFIAny, type_index));
static_assert(offsetof(FfiAny, zero_padding) == offsetof(TVMFFIAny, zero_padding));
static_assert(offsetof(FfiAny, v_ptr) == offsetof(TVMFFIAny, v_ptr));
static_assert(sizeof(FfiObject) == sizeof(TVMFFIObject));
static_assert(offsetof(FfiObject, type_index) == offsetof(TVMFFIObject, type_index));
static_assert(sizeof(FfiByteArray) == sizeof(TVMFFIByteArray));
static_assert(offsetof(FfiErrorCell, kind) == offsetof(TVMFFIErrorCell, kind));
static_assert(offsetof(FfiErrorCell, message) == offsetof(TVMFFIErrorCell, message));
static_assert(offsetof(FfiErrorCell, backtrace) == offsetof(TVMFFIErrorCell, backtrace));
static_assert(kTypeNone == kTVMFFINone);
static_assert(kTypeDlTensorPtr == kTVMFFIDLTensorPtr);
static_assert(kTypeStaticObjectBegin == kTVMFFIStaticObjectBegin);
static_assert(kTypeError == kTVMFFIError);
static_assert(kDeviceCuda == kDLCUDA);
static_assert(kCodeFloat == kDLFloat);
static_assert(kCodeBfloat == kDLBfloat);
static_assert(
    std::is_same_v<TVMFFISafeCallType, int (*)(void*, const TVMFFIAny*, int32_t, TVMFFIAny*)>);
// The signatures of the functions found with dlsym.
static_assert(std::is_same_v<decltype(&TVMFFIEnvSetStream),
                             int (*)(int32_t, int32_t, TVMFFIStreamHandle, TVMFFIStreamHandle*)>);
static_assert(std::is_same_v<decltype(&TVMFFIErrorMoveFromRaised), void (*)(TVMFFIObjectHandle*)>);
static_assert(std::is_same_v<decltype(&TVMFFIObjectDecRef), int (*)(TVMFFIObjectHandle)>);
static_assert(std::is_same_v<TVMFFIStreamHandle, void*> &&
              std::is_same_v<TVMFFIObjectHandle, void*>);
#endif

std::string ByteArrayText(const FfiByteArray& b) {
  if (!b.data) return "";
  return std::string(b.data, b.size > 4096 ? 4096 : b.size);
}

// The error the candidate raised, taken (and released) from the thread's TVM-FFI state.
std::string RaisedError(const CandidateEntry& entry) {
  const std::string fallback = "run raised an error";
  if (!entry.error_move_from_raised) return fallback;
  void* error = nullptr;
  reinterpret_cast<ErrorMoveFromRaised>(entry.error_move_from_raised)(&error);
  if (!error) return fallback;
  std::string text = fallback;
  const auto* header = static_cast<const FfiObject*>(error);
  if (header->type_index == kTypeError) {
    const auto* cell =
        reinterpret_cast<const FfiErrorCell*>(static_cast<const char*>(error) + sizeof(FfiObject));
    std::string kind = ByteArrayText(cell->kind), message = ByteArrayText(cell->message);
    if (!kind.empty() || !message.empty())
      text = "run raised " + (kind.empty() ? std::string("an error") : kind) +
             (message.empty() ? "" : ": " + message);
  }
  if (entry.object_dec_ref) reinterpret_cast<ObjectDecRef>(entry.object_dec_ref)(error);
  return text;
}

}  // namespace

DlTensorView DescribeForTvmFfi(const DeviceTensor& t, int32_t device_id) {
  DlTensorView v;
  v.data = t.data;
  v.device_type = kDeviceCuda;
  v.device_id = device_id;
  v.ndim = static_cast<int32_t>(t.spec.shape.size());
  v.dtype_code = t.spec.dtype == DType::kBF16 ? kCodeBfloat : kCodeFloat;
  v.dtype_bits = static_cast<uint8_t>(SizeOf(t.spec.dtype) * 8);
  v.dtype_lanes = 1;
  v.shape = t.spec.shape;
  v.strides.assign(t.spec.shape.size(), 1);
  for (size_t i = t.spec.shape.size(); i-- > 1;) v.strides[i - 1] = v.strides[i] * t.spec.shape[i];
  return v;
}

int CallTvmFfi(const CandidateEntry& entry, const std::vector<DeviceTensor>& tensors, Stream stream,
               std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return -1;
  };
  if (!entry.run || !entry.env_set_stream) return fail("the tvm-ffi entry point is not loaded");
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) device = 0;
  // The environment stream is per thread and per device: set before every call.
  void* original = nullptr;
  if (reinterpret_cast<EnvSetStream>(entry.env_set_stream)(kDeviceCuda, device, stream,
                                                           &original) != 0)
    return fail("TVMFFIEnvSetStream failed: " + RaisedError(entry));

  std::vector<DlTensorView> views;
  views.reserve(tensors.size());
  for (const auto& t : tensors) views.push_back(DescribeForTvmFfi(t, device));
  std::vector<FfiDlTensor> dl(views.size());
  std::vector<FfiAny> args(views.size());
  for (size_t i = 0; i < views.size(); ++i) {
    DlTensorView& v = views[i];
    dl[i] = FfiDlTensor{v.data,
                        {v.device_type, v.device_id},
                        v.ndim,
                        {v.dtype_code, v.dtype_bits, v.dtype_lanes},
                        v.shape.data(),
                        v.strides.data(),
                        0};
    std::memset(&args[i], 0, sizeof(FfiAny));
    args[i].type_index = kTypeDlTensorPtr;
    args[i].v_ptr = &dl[i];
  }
  FfiAny result;
  std::memset(&result, 0, sizeof result);
  result.type_index = kTypeNone;  // the safe-call convention: the caller initialises it
  int rc = reinterpret_cast<SafeCall>(entry.run)(nullptr, args.data(),
                                                 static_cast<int32_t>(args.size()), &result);
  // `run` returns nothing; whatever object came back anyway is released.
  if (rc == 0 && result.type_index >= kTypeStaticObjectBegin && result.v_ptr &&
      entry.object_dec_ref)
    reinterpret_cast<ObjectDecRef>(entry.object_dec_ref)(result.v_ptr);
  if (rc != 0) {
    if (error) *error = RaisedError(entry);
    return rc;
  }
  return 0;
}

}  // namespace ptxbench

// What the attention baseline tests (cuDNN, FlashInfer) share: the family's tensors on the
// device, poisoned outputs, and the largest error against a device reference, checked
// against a bound relative to the reference's magnitude.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "task/family.h"

namespace ptxbench::testing_attention {

// The tensors of one family instance, on the device.
struct Buffers {
  std::vector<DeviceTensor> t;
  Buffers(const Family& f, const Axes& a) {
    for (const auto& spec : f.Tensors(a)) {
      DeviceTensor d{spec, nullptr};
      EXPECT_EQ(cudaMalloc(&d.data, spec.Bytes()), cudaSuccess);
      t.push_back(d);
    }
  }
  ~Buffers() {
    for (auto& d : t) cudaFree(d.data);
  }
  // Fills an output with all-ones bytes (NaN in bf16 and fp32): an element the library does
  // not write shows up as an error.
  void Poison(size_t k) { cudaMemset(t[k].data, 0xff, t[k].spec.Bytes()); }
};

struct DeviceFloats {
  float* p = nullptr;
  explicit DeviceFloats(size_t n) { EXPECT_EQ(cudaMalloc(&p, n * sizeof(float)), cudaSuccess); }
  ~DeviceFloats() { cudaFree(p); }
};

__device__ inline float AsFloat(float x) { return x; }
__device__ inline float AsFloat(__nv_bfloat16 x) { return __bfloat162float(x); }

// out[0] = max |got - ref| (NaN if any difference is NaN), out[1] = max |ref|, as the bits
// of non-negative floats (whose order atomicMax keeps; NaN's bits exceed infinity's).
template <typename T>
__global__ void MaxErrorKernel(const T* got, const float* ref, size_t n, unsigned* out) {
  float err = 0, mag = 0;
  bool nan = false;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    float r = ref[i], d = fabsf(AsFloat(got[i]) - r);
    if (isnan(d))
      nan = true;
    else
      err = fmaxf(err, d);
    mag = fmaxf(mag, fabsf(r));
  }
  atomicMax(&out[0], nan ? 0x7fc00000u : __float_as_uint(err));
  atomicMax(&out[1], __float_as_uint(mag));
}

struct Error {
  double err, ref;  // max |got - ref|, max |ref|
};

template <typename T>
Error MaxError(const void* got, const float* ref, size_t n) {
  unsigned* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, 2 * sizeof(unsigned)), cudaSuccess);
  cudaMemset(d, 0, 2 * sizeof(unsigned));
  MaxErrorKernel<T><<<1024, 256>>>(static_cast<const T*>(got), ref, n, d);
  unsigned h[2] = {0, 0};
  EXPECT_EQ(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d);
  float e, r;
  std::memcpy(&e, &h[0], sizeof e);
  std::memcpy(&r, &h[1], sizeof r);
  return {e, r};
}

// Prints one comparison and checks it: err <= relative · max|ref| (+ absolute).
inline void Expect(const char* what, Error e, double relative, double absolute) {
  const double bound = relative * e.ref + absolute;
  const bool ok = e.err <= bound;  // false for NaN
  std::printf("    %-4s max abs err %.4g  (max |ref| %.4g, bound %.4g)%s\n", what, e.err, e.ref,
              bound, ok ? "" : "  <-- FAIL");
  EXPECT_TRUE(ok) << what << ": max abs err " << e.err << " > " << bound;
}

}  // namespace ptxbench::testing_attention

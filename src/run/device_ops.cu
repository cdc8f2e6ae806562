#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "common/cuda_check.h"
#include "run/device_ops.h"
#include "task/random_normal.h"

namespace ptxbench {
namespace {

__global__ void ptxbench_fill_normal_bf16(__nv_bfloat16* out, size_t n, uint64_t seed,
                                          uint32_t tensor) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16_rn(static_cast<float>(StandardNormal(seed, tensor, i)));
}

__global__ void ptxbench_fill_normal_f32(float* out, size_t n, uint64_t seed, uint32_t tensor) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = static_cast<float>(StandardNormal(seed, tensor, i));
}

template <typename T>
__global__ void ptxbench_fill_pattern(T* out, size_t n, T pattern) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = pattern;
}

__device__ __host__ inline uint64_t WordWeight(uint64_t i) { return SplitMix64(i) | 1ull; }

__global__ void ptxbench_checksum(const uint16_t* words, size_t n, unsigned long long* sum) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    local += (static_cast<uint64_t>(words[i]) + 1) * WordWeight(i);
  for (int off = 16; off > 0; off /= 2) local += __shfl_down_sync(0xffffffffu, local, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, local);
}

int GridFor(size_t n) {
  size_t blocks = (n + 255) / 256;
  return static_cast<int>(blocks < 65536 ? (blocks ? blocks : 1) : 65536);
}

}  // namespace

void FillStandardNormal(void* data, DType dtype, size_t n, uint64_t seed, uint32_t tensor,
                        Stream stream) {
  if (dtype == DType::kBF16)
    ptxbench_fill_normal_bf16<<<GridFor(n), 256, 0, stream>>>(static_cast<__nv_bfloat16*>(data), n,
                                                              seed, tensor);
  else
    ptxbench_fill_normal_f32<<<GridFor(n), 256, 0, stream>>>(static_cast<float*>(data), n, seed,
                                                             tensor);
  PTXBENCH_CUDA_CHECK(cudaGetLastError());
}

void FillPoison(void* data, DType dtype, size_t n, Stream stream) {
  if (dtype == DType::kBF16)
    ptxbench_fill_pattern<uint16_t>
        <<<GridFor(n), 256, 0, stream>>>(static_cast<uint16_t*>(data), n, kPoisonBf16);
  else
    ptxbench_fill_pattern<uint32_t>
        <<<GridFor(n), 256, 0, stream>>>(static_cast<uint32_t*>(data), n, kPoisonF32);
  PTXBENCH_CUDA_CHECK(cudaGetLastError());
}

uint64_t DeviceChecksum(const void* data, size_t bytes, Stream stream) {
  unsigned long long* sum = nullptr;
  PTXBENCH_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&sum), sizeof *sum, stream));
  PTXBENCH_CUDA_CHECK(cudaMemsetAsync(sum, 0, sizeof *sum, stream));
  size_t n = bytes / 2;
  ptxbench_checksum<<<GridFor(n), 256, 0, stream>>>(static_cast<const uint16_t*>(data), n, sum);
  PTXBENCH_CUDA_CHECK(cudaGetLastError());
  unsigned long long host = 0;
  PTXBENCH_CUDA_CHECK(cudaMemcpyAsync(&host, sum, sizeof host, cudaMemcpyDeviceToHost, stream));
  PTXBENCH_CUDA_CHECK(cudaFreeAsync(sum, stream));
  PTXBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

uint64_t HostChecksum(const void* data, size_t bytes) {
  const uint16_t* w = static_cast<const uint16_t*>(data);
  uint64_t sum = 0;
  for (size_t i = 0; i < bytes / 2; ++i) sum += (static_cast<uint64_t>(w[i]) + 1) * WordWeight(i);
  return sum;
}

}  // namespace ptxbench

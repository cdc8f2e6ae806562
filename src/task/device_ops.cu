#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "common/cuda_check.h"
#include "task/device_ops.h"
#include "task/random_normal.h"

namespace ptxbench {
namespace {

__global__ void ptxbench_fill_normal_f16(__half* out, size_t n, uint64_t seed, uint32_t tensor) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = __float2half_rn(static_cast<float>(StandardNormal(seed, tensor, i)));
}

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

// The digest (see device_ops.h). Word i (8 bytes, little-endian; the last one zero-padded)
// goes to lane i % kDigestLanes, in increasing i: neighbouring threads read neighbouring
// words. A lane's 128-bit state (a, b) takes each word through two SplitMix64 rounds.
struct DigestLane {
  uint64_t a, b;
};

__device__ __host__ inline uint64_t RotateLeft(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

__device__ __host__ inline DigestLane DigestStart(uint64_t key, uint64_t lane) {
  return {SplitMix64(key ^ (lane * 0xD6E8FEB86659FD93ull)),
          SplitMix64(~key + lane * 0xA0761D6478BD642Full)};
}

__device__ __host__ inline void DigestStep(DigestLane& s, uint64_t w) {
  s.a = SplitMix64(s.a ^ w);
  s.b = SplitMix64(s.b ^ (w * 0x9E3779B97F4A7C15ull) ^ RotateLeft(s.a, 29));
}

// Bytes [i*8, i*8+8) of the buffer as a little-endian word; data is 2-byte aligned (every
// output dtype is), so a full word is four 16-bit loads; a short tail is read byte by byte.
__device__ inline uint64_t DigestWord(const uint8_t* data, size_t bytes, size_t i) {
  size_t at = i * 8, left = bytes - at;
  uint64_t w = 0;
  if (left >= 8 && (reinterpret_cast<uintptr_t>(data) & 1) == 0) {
    const uint16_t* h = reinterpret_cast<const uint16_t*>(data + at);
    for (int k = 0; k < 4; ++k) w |= static_cast<uint64_t>(h[k]) << (16 * k);
  } else {
    for (size_t k = 0; k < 8 && k < left; ++k) w |= static_cast<uint64_t>(data[at + k]) << (8 * k);
  }
  return w;
}

__global__ void ptxbench_digest(const uint8_t* data, size_t bytes, uint64_t key,
                                DigestLane* lanes) {
  size_t lane = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (lane >= static_cast<size_t>(kDigestLanes)) return;
  DigestLane s = DigestStart(key, lane);
  size_t words = (bytes + 7) / 8;
  for (size_t i = lane; i < words; i += kDigestLanes) DigestStep(s, DigestWord(data, bytes, i));
  lanes[lane] = s;
}

// The lanes, in order, into the final 128 bits (with the length: a prefix differs).
std::string DigestFinish(const DigestLane* lanes, size_t bytes, uint64_t key) {
  DigestLane d = {SplitMix64(key ^ bytes), SplitMix64(key + bytes)};
  for (int l = 0; l < kDigestLanes; ++l) {
    d.a = SplitMix64(d.a ^ lanes[l].a);
    d.b = SplitMix64(d.b ^ lanes[l].b ^ RotateLeft(d.a, 17));
  }
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(d.a),
                static_cast<unsigned long long>(d.b));
  return hex;
}

}  // namespace

void FillStandardNormal(void* data, DType dtype, size_t n, uint64_t seed, uint32_t tensor,
                        Stream stream) {
  if (dtype == DType::kBF16)
    ptxbench_fill_normal_bf16<<<GridFor(n), 256, 0, stream>>>(static_cast<__nv_bfloat16*>(data), n,
                                                              seed, tensor);
  else if (dtype == DType::kF16)
    ptxbench_fill_normal_f16<<<GridFor(n), 256, 0, stream>>>(static_cast<__half*>(data), n, seed,
                                                             tensor);
  else
    ptxbench_fill_normal_f32<<<GridFor(n), 256, 0, stream>>>(static_cast<float*>(data), n, seed,
                                                             tensor);
  PTXBENCH_CUDA_CHECK(cudaGetLastError());
}

void FillPoison(void* data, DType dtype, size_t n, Stream stream) {
  if (dtype != DType::kF32)
    ptxbench_fill_pattern<uint16_t><<<GridFor(n), 256, 0, stream>>>(
        static_cast<uint16_t*>(data), n, dtype == DType::kF16 ? kPoisonF16 : kPoisonBf16);
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

std::string DeviceDigest(const void* data, size_t bytes, uint64_t key, Stream stream) {
  DigestLane* lanes = nullptr;
  PTXBENCH_CUDA_CHECK(
      cudaMallocAsync(reinterpret_cast<void**>(&lanes), sizeof(DigestLane) * kDigestLanes, stream));
  ptxbench_digest<<<kDigestLanes / 256, 256, 0, stream>>>(static_cast<const uint8_t*>(data), bytes,
                                                          key, lanes);
  PTXBENCH_CUDA_CHECK(cudaGetLastError());
  std::vector<DigestLane> host(kDigestLanes);
  PTXBENCH_CUDA_CHECK(cudaMemcpyAsync(host.data(), lanes, sizeof(DigestLane) * kDigestLanes,
                                      cudaMemcpyDeviceToHost, stream));
  PTXBENCH_CUDA_CHECK(cudaFreeAsync(lanes, stream));
  PTXBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  return DigestFinish(host.data(), bytes, key);
}

std::string HostDigest(const void* data, size_t bytes, uint64_t key) {
  std::vector<DigestLane> lanes(kDigestLanes);
  for (int l = 0; l < kDigestLanes; ++l) lanes[l] = DigestStart(key, static_cast<uint64_t>(l));
  const uint8_t* p = static_cast<const uint8_t*>(data);
  size_t words = (bytes + 7) / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w = 0;
    size_t at = i * 8, n = bytes - at < 8 ? bytes - at : 8;
    std::memcpy(&w, p + at, n);  // little-endian host, zero-padded tail: as on the device
    DigestStep(lanes[i % kDigestLanes], w);
  }
  return DigestFinish(lanes.data(), bytes, key);
}

}  // namespace ptxbench

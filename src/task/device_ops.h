// The harness's own small device operations (child processes only): seeded inputs, poison
// fills and input checksums. Their kernels are named ptxbench_* so that tools (the memory
// checker, later the profiler) can tell them from the candidate's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "task/family.h"

namespace ptxbench {

// The bit patterns that outputs are pre-filled with. Both are NaNs with a payload that no
// arithmetic produces, so a surviving pattern means "never written", distinct from a NaN
// the candidate computed.
constexpr uint16_t kPoisonBf16 = 0xFFB7;
constexpr uint16_t kPoisonF16 = 0xFFB7;  // a NaN in IEEE half too
constexpr uint32_t kPoisonF32 = 0xFFB7D1E5u;

void FillStandardNormal(void* data, DType dtype, size_t elements, uint64_t seed, uint32_t tensor,
                        Stream stream);
void FillPoison(void* data, DType dtype, size_t elements, Stream stream);
// A position-dependent 64-bit sum over the 16-bit words of a buffer: any single changed word
// changes it. Synchronizes `stream`.
uint64_t DeviceChecksum(const void* data, size_t bytes, Stream stream);
// The same function on the host, for tests and for checking data read back.
uint64_t HostChecksum(const void* data, size_t bytes);

// A keyed 128-bit digest of a buffer (32 hex digits), computed on the device by the child at
// the end of the witness phase and on the host by the parent over the bytes handed over
// later: a witness output that changed after the phase (work deferred past the parent's GPM
// window) no longer matches what the child committed to while the window was open. Unlike
// the checksum above it is not a sum: each of kDigestLanes lanes chains its 8-byte words
// through a nonlinear mix, so steering a result towards a chosen digest costs ~2^64 work.
constexpr int kDigestLanes = 16384;
std::string DeviceDigest(const void* data, size_t bytes, uint64_t key, Stream stream);
std::string HostDigest(const void* data, size_t bytes, uint64_t key);

}  // namespace ptxbench

// Seeded standard-normal inputs, identical on the host and the device: element i of tensor t
// for seed s is a pure function of (s, t, i), so children generate inputs on the GPU without
// copying them around, and tests can regenerate any element on the CPU.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define PTXBENCH_HD __host__ __device__
#else
#define PTXBENCH_HD
#endif

namespace ptxbench {

PTXBENCH_HD inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Box–Muller in double precision over a pair of 53-bit uniforms; even i takes the cosine,
// odd i the sine of the same pair, so both halves of every pair are used.
PTXBENCH_HD inline double StandardNormal(uint64_t seed, uint32_t tensor, uint64_t i) {
  uint64_t key = SplitMix64(seed ^ (0xA0761D6478BD642Full * (tensor + 1)));
  uint64_t h1 = SplitMix64(key ^ SplitMix64(i >> 1));
  uint64_t h2 = SplitMix64(h1 ^ 0xE7037ED1A0B428DBull);
  double u1 = (static_cast<double>(h1 >> 11) + 0.5) * 0x1.0p-53;  // (0, 1)
  double u2 = static_cast<double>(h2 >> 11) * 0x1.0p-53;          // [0, 1)
  double r = sqrt(-2.0 * log(u1));
  double angle = 6.283185307179586476925 * u2;
  return (i & 1) ? r * sin(angle) : r * cos(angle);
}

}  // namespace ptxbench

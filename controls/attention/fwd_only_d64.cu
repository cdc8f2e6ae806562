/*
Control: fwd_only_d64
Expected verdict: RUNTIME_ERROR on mha_with_lse_d128 (run returns 2: the shape is refused)

A kernel written for one head dimension only: one thread per query row with its D = 64
accumulator in registers, online softmax in fp32. For any other D it launches nothing and
returns 2, as the ABI asks of a kernel that does not support a shape. The harness must say
"refused", precisely, and not crash, hang or blame the (poisoned) outputs.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

constexpr int kD = 64;

__global__ void attn_fwd_d64(const __nv_bfloat16* Q, const __nv_bfloat16* K,
                             const __nv_bfloat16* V, __nv_bfloat16* O, float* LSE, int64_t BH,
                             int S) {
  int64_t row = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (row >= BH * S) return;
  const int64_t head = row / S;
  const __nv_bfloat16* q = Q + row * kD;
  const __nv_bfloat16* k = K + head * S * kD;
  const __nv_bfloat16* v = V + head * S * kD;
  float qf[kD], acc[kD];
  for (int d = 0; d < kD; ++d) qf[d] = __bfloat162float(q[d]), acc[d] = 0.f;
  const float scale = 1.f / sqrtf(float(kD));
  float m = -INFINITY, l = 0.f;
  for (int j = 0; j < S; ++j) {
    float s = 0.f;
    for (int d = 0; d < kD; ++d) s = fmaf(qf[d], __bfloat162float(k[int64_t(j) * kD + d]), s);
    s *= scale;
    float m_new = fmaxf(m, s);
    float correction = expf(m - m_new), p = expf(s - m_new);
    l = l * correction + p;
    for (int d = 0; d < kD; ++d)
      acc[d] = fmaf(p, __bfloat162float(v[int64_t(j) * kD + d]), acc[d] * correction);
    m = m_new;
  }
  for (int d = 0; d < kD; ++d) O[row * kD + d] = __float2bfloat16_rn(acc[d] / l);
  LSE[row] = m + logf(l);
}

extern "C" int run(const __nv_bfloat16* Q, const __nv_bfloat16* K, const __nv_bfloat16* V,
                   __nv_bfloat16* O, float* LSE, int B, int H, int S, int D,
                   cudaStream_t stream) {
  if (D != kD || B < 1 || H < 1 || S < 1) return 2;  // only the shape it was written for
  const int64_t rows = int64_t(B) * H * S;
  attn_fwd_d64<<<unsigned((rows + 127) / 128), 128, 0, stream>>>(Q, K, V, O, LSE,
                                                                 int64_t(B) * H, S);
  return 0;
}

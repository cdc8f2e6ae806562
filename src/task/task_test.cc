#include <gtest/gtest.h>

#include "common/error.h"
#include "common/strings.h"
#include "task/definition.h"
#include "task/expression.h"
#include "task/family.h"
#include "task/random_normal.h"

#include <cmath>
#include <fstream>
#include <set>

namespace ptxbench {
namespace {

Catalog Load() { return Catalog::Load(std::string(PTXBENCH_SOURCE_DIR) + "/tasks"); }

TEST(Formula, EvaluatesWithAxes) {
  EXPECT_DOUBLE_EQ(EvaluateFormula("2*M*N*K", {{"M", 8192}, {"N", 7168}, {"K", 5120}}),
                   2.0 * 8192 * 7168 * 5120);
  EXPECT_DOUBLE_EQ(EvaluateFormula("4*B*H*S*S*D/2", {{"B", 4}, {"H", 48}, {"S", 4096}, {"D", 128}}),
                   2.0 * 4 * 48 * 4096.0 * 4096 * 128);
  EXPECT_DOUBLE_EQ(EvaluateFormula("(M+1)*-2", {{"M", 3}}), -8);
  EXPECT_THROW(EvaluateFormula("2*Q", {{"M", 1}}), Error);
  EXPECT_THROW(EvaluateFormula("2*(M", {{"M", 1}}), Error);
  EXPECT_THROW(EvaluateFormula("M M", {{"M", 1}}), Error);
}

TEST(Catalog, HoldsEveryUpstreamGemmWorkload) {
  Catalog c = Load();
  // Every gemm row of the upstream list (a copy is kept beside the data) is a workload here,
  // with its identifier and its axes.
  std::ifstream csv(std::string(PTXBENCH_SOURCE_DIR) + "/tasks/upstream-workloads.csv");
  ASSERT_TRUE(csv.good());
  std::string line;
  std::getline(csv, line);  // header
  size_t rows = 0;
  while (std::getline(csv, line)) {
    auto f = Split(line, ',');
    ASSERT_EQ(f.size(), 5u) << line;
    if (f[0] != "gemm") continue;
    ++rows;
    const Definition& d = c.Find(f[1]);
    const Workload& w = d.FindWorkload(f[3]);
    Axes full = d.FullAxes(w);
    for (const auto& kv : Split(f[2], ';')) {
      auto p = Split(kv, '=');
      EXPECT_EQ(full.at(p[0]), std::stoll(p[1])) << line;
    }
    EXPECT_EQ(w.headline, f[4] == "yes") << line;
  }
  size_t gemm_workloads = 0;
  for (const auto& d : c.definitions()) {
    if (d.family != "gemm") continue;
    gemm_workloads += d.workloads.size();
    EXPECT_EQ(d.flops_formula, "2*M*N*K");
    EXPECT_EQ(d.tolerance.rule, ToleranceRule::kPublished);
    EXPECT_EQ(d.tolerance.atol, 1e-2);
    EXPECT_EQ(d.tolerance.rtol, 1e-2);
    EXPECT_EQ(d.required_families.at("sm_90a"), std::vector<std::string>{"gmma"});
    EXPECT_EQ(d.required_families.at("sm_100a"), std::vector<std::string>{"tcgen05"});
    EXPECT_FALSE(d.baseline.empty());
    EXPECT_FALSE(d.description.empty());
  }
  EXPECT_EQ(rows, 82u);
  EXPECT_EQ(gemm_workloads, rows);
}

TEST(Catalog, HeadlineIsTheDefaultWorkload) {
  Catalog c = Load();
  const Definition& d = c.Find("gemm_n7168_k5120");
  const Workload& w = d.DefaultWorkload();
  EXPECT_TRUE(w.headline);
  EXPECT_EQ(w.id, "94920358-01a8-4c5b-9209-3103fd490e94");
  Axes a = d.FullAxes(w);
  EXPECT_EQ(a.at("M"), 8192);
  EXPECT_EQ(a.at("N"), 7168);
  EXPECT_EQ(a.at("K"), 5120);
  EXPECT_DOUBLE_EQ(d.Flops(w), 2.0 * 8192 * 7168 * 5120);
}

TEST(Catalog, FindsWorkloadsByAxesOrId) {
  Catalog c = Load();
  const Definition& d = c.Find("gemm_n7168_k5120");
  EXPECT_EQ(d.FindWorkload("M=70").axes.at("M"), 70);
  EXPECT_EQ(d.FindWorkload("M=8192,N=7168").axes.at("M"), 8192);
  EXPECT_EQ(d.FindWorkload("3817345d-2b16-47dc-ae55-710bf42cfd86").axes.at("M"), 70);
  auto message = [&](const std::string& spec) {
    try {
      d.FindWorkload(spec);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("M=71").find("defines no workload"), std::string::npos);
  EXPECT_NE(message("M=abc").find("malformed value"), std::string::npos);
  EXPECT_NE(message("M=-5").find("malformed value"), std::string::npos);
  EXPECT_NE(message("Q=5").find("no axis 'Q'"), std::string::npos);
  EXPECT_NE(message("M8192").find("malformed workload"), std::string::npos);
  EXPECT_NE(message("N=4096,M=70").find("defines no workload"), std::string::npos);
}

TEST(Catalog, UnknownTaskSuggestsTheNearest) {
  Catalog c = Load();
  try {
    c.Find("gemm_n7168_k512");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean gemm_n7168_k5120"), std::string::npos);
  }
}

TEST(Catalog, MalformedDataFilesNameTheFile) {
  char tmpl[] = "/tmp/ptxbench-tasks-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string mk = "mkdir -p " + dir + "/definitions " + dir + "/workloads";
  ASSERT_EQ(std::system(mk.c_str()), 0);
  std::ofstream(dir + "/definitions/bad.json") << "{\"name\": \"bad\", ";
  std::ofstream(dir + "/workloads/bad.jsonl") << "{}\n";
  try {
    Catalog::Load(dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos);
  }
  std::system(("rm -rf " + dir).c_str());
}

TEST(Gemm, TensorsFollowTheAbi) {
  const Family* f = FindFamily("gemm");
  ASSERT_NE(f, nullptr);
  auto t = f->Tensors({{"M", 3}, {"N", 5}, {"K", 7}});
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].shape, (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(t[1].shape, (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(t[2].shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(t[2].role, TensorRole::kOutput);
  EXPECT_NE(f->Signature().find("cudaStream_t stream"), std::string::npos);
}

// The fp16 GEMM (FlashInfer-Bench's definitions) is the bf16 one in IEEE half: same shapes,
// fp16 tensors and signature, and a reference cache key of its own.
TEST(Gemm, TheFp16FamilyIsTheGemmInHalf) {
  const Family* bf = FindFamily("gemm");
  const Family* f16 = FindFamily("gemm_f16");
  ASSERT_NE(f16, nullptr);
  const Axes axes = {{"M", 3}, {"N", 5}, {"K", 7}};
  auto a = bf->Tensors(axes), b = f16->Tensors(axes);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].shape, b[i].shape);
    EXPECT_EQ(a[i].dtype, DType::kBF16);
    EXPECT_EQ(b[i].dtype, DType::kF16);
    EXPECT_EQ(b[i].Bytes(), a[i].Bytes());
  }
  EXPECT_NE(f16->Signature().find("const __half* A"), std::string::npos) << f16->Signature();
  EXPECT_NE(f16->Semantics().find("rounded to fp16"), std::string::npos);
  EXPECT_NE(f16->ReferenceVersion(), bf->ReferenceVersion());
  EXPECT_EQ(ToString(DType::kF16), "f16");
  EXPECT_EQ(SizeOf(DType::kF16), 2u);
}

TEST(RandomNormal, IsDeterministicAndStandard) {
  double sum = 0, sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    double x = StandardNormal(7, 0, i);
    EXPECT_EQ(x, StandardNormal(7, 0, i));
    sum += x;
    sq += x * x;
  }
  double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.02);
  EXPECT_NE(StandardNormal(7, 0, 5), StandardNormal(8, 0, 5));
  EXPECT_NE(StandardNormal(7, 0, 5), StandardNormal(7, 1, 5));
}

}  // namespace
}  // namespace ptxbench

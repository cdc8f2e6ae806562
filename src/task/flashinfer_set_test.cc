// FlashInfer-Bench trace sets as task catalogs: the fixture set under tests/fixtures (written for
// these tests, in the shape of upstream PTXBench's fib-profile dataset) is read field by field;
// what maps onto no family is left out with the reason; malformed files are errors that name the
// file and line.
#include "task/flashinfer_set.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/error.h"
#include "common/files.h"
#include "task/family.h"

namespace ptxbench {
namespace {

namespace fs = std::filesystem;

std::string Fixture() {
  return std::string(PTXBENCH_SOURCE_DIR) + "/tests/fixtures/flashinfer-trace-set";
}

const LeftOutDefinition* LeftOut(const Catalog& c, const std::string& name) {
  for (const auto& l : c.left_out())
    if (l.name == name) return &l;
  return nullptr;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(FlashInferSet, TheFixtureIsDetectedAndOurTasksAreNot) {
  EXPECT_TRUE(IsFlashInferTraceSet(Fixture()));
  EXPECT_FALSE(IsFlashInferTraceSet(Catalog::DefaultDir()));
  EXPECT_FALSE(Catalog::Load(Catalog::DefaultDir()).is_flashinfer_set());
  EXPECT_TRUE(Catalog::Load(Fixture()).is_flashinfer_set());
}

TEST(FlashInferSet, AGemmDefinitionBecomesAGemmTask) {
  Catalog c = Catalog::Load(Fixture());
  const Definition& d = c.Find("gemm_n256_k512");
  EXPECT_EQ(d.family, "gemm");
  EXPECT_EQ(d.constant_axes, (Axes{{"N", 256}, {"K", 512}}));
  EXPECT_EQ(d.variable_axes, std::vector<std::string>{"M"});
  EXPECT_EQ(d.tolerance.rule, ToleranceRule::kPublished);
  EXPECT_DOUBLE_EQ(d.tolerance.atol, 1e-2);
  EXPECT_DOUBLE_EQ(d.tolerance.rtol, 1e-2);
  EXPECT_EQ(d.flops_formula, "2*M*N*K");
  EXPECT_EQ(d.baseline, "cublaslt_bf16_fp32acc");
  EXPECT_EQ(d.required_families.at("sm_90a"), std::vector<std::string>{"gmma"});
  EXPECT_TRUE(Contains(d.description, "Fixture: C = A @ B.T"));
  ASSERT_EQ(d.workloads.size(), 2u);
  EXPECT_EQ(d.workloads[0].id, "0b6a7f2e-5d1c-4e8a-9f3b-2c4d6e8f0a11");
  EXPECT_EQ(d.workloads[0].axes, (Axes{{"M", 64}}));
  // A workload may repeat the constant axes (upstream's do); only the variable ones are kept.
  EXPECT_EQ(d.workloads[1].axes, (Axes{{"M", 300}}));
  EXPECT_EQ(&d.FindWorkload("M=300"), &d.workloads[1]);
  EXPECT_EQ(&d.DefaultWorkload(), &d.workloads[1]);  // no headline: the most FLOPs
  EXPECT_TRUE(d.refused_workloads.empty());
  ASSERT_TRUE(d.flashinfer.has_value());
  const FlashInferLink& f = *d.flashinfer;
  EXPECT_EQ(f.trace_set, Fixture());
  EXPECT_EQ(f.file, Fixture() + "/definitions/gemm/gemm_n256_k512.json");
  EXPECT_EQ(f.op_type, "gemm");
  EXPECT_EQ(f.tensor_names, (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(f.axis_names, (std::map<std::string, std::string>{{"M", "M"}, {"N", "N"}, {"K", "K"}}));
  EXPECT_TRUE(f.scalar_inputs.empty());
  // Their workload object, verbatim, for the trace.
  EXPECT_EQ(f.workloads.at("7c1e9d3a-2b4f-4a6c-8e0d-1f3a5b7c9d22")["axes"],
            (nlohmann::json{{"M", 300}, {"N", 256}, {"K", 512}}));
  // The family's tensors, in the order their `run` takes them.
  auto tensors = FindFamily(d.family)->Tensors(d.FullAxes(d.workloads[0]));
  EXPECT_EQ(tensors[1].shape, (std::vector<int64_t>{256, 512}));
}

TEST(FlashInferSet, AnAttentionForwardMapsByStructureAndItsScaleIsChecked) {
  Catalog c = Catalog::Load(Fixture());
  const Definition& d = c.Find("attn_fwd_h8_d64_causal");
  EXPECT_EQ(d.family, "mha_fwd");
  EXPECT_EQ(d.constant_axes, (Axes{{"B", 2}, {"H", 8}, {"D", 64}, {"causal", 1}}));
  EXPECT_EQ(d.variable_axes, std::vector<std::string>{"S"});
  EXPECT_EQ(d.flops_formula, "2*B*H*S*S*D");  // causal
  EXPECT_EQ(d.baseline, "cudnn_sdpa_fwd");
  const FlashInferLink& f = *d.flashinfer;
  EXPECT_EQ(f.tensor_names, (std::vector<std::string>{"q", "k", "v", "output", "lse"}));
  EXPECT_EQ(f.axis_names,
            (std::map<std::string, std::string>{
                {"B", "batch_size"}, {"H", "num_heads"}, {"S", "seq_len"}, {"D", "head_dim"}}));
  EXPECT_EQ(f.scalar_inputs, std::vector<std::string>{"sm_scale"});
  ASSERT_EQ(d.workloads.size(), 1u);  // sm_scale 0.125 = 1/sqrt(64)
  EXPECT_EQ(d.workloads[0].axes, (Axes{{"S", 128}}));
  ASSERT_EQ(d.refused_workloads.size(), 1u);  // sm_scale 0.1
  EXPECT_EQ(d.refused_workloads[0].id, "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c44");
  EXPECT_TRUE(Contains(d.refused_workloads[0].reason, "sm_scale = 0.1;"));
  EXPECT_TRUE(Contains(d.refused_workloads[0].reason, "1/sqrt(D) = 0.125 (D=64)"));
  try {
    d.FindWorkload("9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c44");
    ADD_FAILURE() << "a refused workload was found";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_TRUE(Contains(e.what(), "is not judged here: scalar input sm_scale")) << e.what();
  }
}

TEST(FlashInferSet, AnAttentionBackwardRefusesSafetensorsWorkloads) {
  Catalog c = Catalog::Load(Fixture());
  const Definition& d = c.Find("attn_bwd_h4_d64");
  EXPECT_EQ(d.family, "mha_bwd");
  EXPECT_EQ(d.constant_axes, (Axes{{"B", 1}, {"H", 4}, {"D", 64}, {"causal", 0}}));
  EXPECT_EQ(d.flops_formula, "10*B*H*S*S*D");
  EXPECT_EQ(d.flashinfer->tensor_names,
            (std::vector<std::string>{"Q", "K", "V", "O", "dO", "L", "dQ", "dK", "dV"}));
  EXPECT_EQ(d.flashinfer->axis_names.at("D"), "d");
  ASSERT_EQ(d.workloads.size(), 1u);
  EXPECT_EQ(d.workloads[0].id, "3d4e5f6a-7b8c-4d9e-8f0a-1b2c3d4e5f55");
  ASSERT_EQ(d.refused_workloads.size(), 1u);
  EXPECT_TRUE(Contains(d.refused_workloads[0].reason,
                       "input Q is read from a safetensors file "
                       "(./blob/workloads/attention/attn_bwd_h4_d64/e1f2.safetensors)"))
      << d.refused_workloads[0].reason;
}

TEST(FlashInferSet, DefinitionsNoFamilyJudgesAreLeftOutWithTheReason) {
  Catalog c = Catalog::Load(Fixture());
  std::vector<std::string> names;
  for (const auto& d : c.definitions()) names.push_back(d.name);
  EXPECT_EQ(names, (std::vector<std::string>{"attn_bwd_h4_d64", "attn_fwd_h8_d64_causal",
                                             "gemm_n256_k512"}));
  ASSERT_EQ(c.left_out().size(), 4u);
  const LeftOutDefinition* rms = LeftOut(c, "rmsnorm_h4096");
  ASSERT_TRUE(rms);
  EXPECT_EQ(rms->op_type, "rmsnorm");
  EXPECT_EQ(rms->reason,
            "not gemm (whose tensor counts it has): the gemm family takes 2-D tensors (A[M,K], "
            "B[N,K] -> C[M,N]); weight[hidden_size] is not");
  const LeftOutDefinition* paged = LeftOut(c, "gqa_paged_decode_h8_kv2_d64_ps1");
  ASSERT_TRUE(paged);
  EXPECT_TRUE(Contains(paged->reason, "5 tensor inputs and 2 outputs: no family judged here"))
      << paged->reason;
  const LeftOutDefinition* kn = LeftOut(c, "gemm_kn_n256_k512");
  ASSERT_TRUE(kn);
  EXPECT_TRUE(Contains(kn->reason, "B is [K,N] (B[K,N]); the gemm family takes B as [N,K]"))
      << kn->reason;
  const LeftOutDefinition* unstated = LeftOut(c, "attn_fwd_h8_d64_unmasked_unstated");
  ASSERT_TRUE(unstated);
  EXPECT_TRUE(Contains(unstated->reason, "the tag causal:true or causal:false"))
      << unstated->reason;
  // Asking for one by name says why, instead of "unknown task".
  try {
    c.Find("rmsnorm_h4096");
    ADD_FAILURE() << "a left-out definition was found";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_TRUE(Contains(e.what(), "task rmsnorm_h4096 (FlashInfer-Bench definition " + Fixture() +
                                       "/definitions/rmsnorm/rmsnorm_h4096.json) is "
                                       "not judged here: not gemm"))
        << e.what();
  }
}

// What their files do not say (FLOPs, instruction families, baseline) is what our own
// definitions of the family say.
TEST(FlashInferSet, FamilyDefaultsAgreeWithOurDefinitions) {
  Catalog ours = Catalog::Load(Catalog::DefaultDir());
  ASSERT_FALSE(ours.definitions().empty());
  for (const Definition& d : ours.definitions()) {
    const bool causal = d.constant_axes.count("causal") && d.constant_axes.at("causal") == 1;
    FamilyTaskDefaults f = DefaultsForFamily(d.family, causal);
    EXPECT_EQ(f.flops_formula, d.flops_formula) << d.name;
    EXPECT_EQ(f.required_families, d.required_families) << d.name;
    EXPECT_EQ(f.baseline, d.baseline) << d.name;
    EXPECT_EQ(d.tolerance.rule, ToleranceRule::kPublished) << d.name;
  }
}

// A copy of the fixture to break one file of.
class BrokenSet {
 public:
  BrokenSet() : dir_("fib-set") {
    fs::copy(Fixture(), dir_.File("set"), fs::copy_options::recursive);
  }
  std::string Path(const std::string& rel = "") const {
    return rel.empty() ? dir_.File("set") : dir_.File("set/" + rel);
  }
  void Write(const std::string& rel, const std::string& text) const {
    MakeDirs(fs::path(Path(rel)).parent_path().string());
    WriteFileAtomic(Path(rel), text);
  }
  void Append(const std::string& rel, const std::string& text) const {
    Write(rel, ReadFile(Path(rel)) + text);
  }
  // The message of the InputError that loading throws ("" when it loads).
  std::string LoadError() const {
    try {
      Catalog::Load(Path());
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput) << e.what();
      return e.what();
    }
    return "";
  }

 private:
  ScratchDir dir_;
};

TEST(FlashInferSet, MalformedFilesAreErrorsNamingTheFileAndLine) {
  const std::string gemm_def = "definitions/gemm/gemm_n256_k512.json";
  const std::string gemm_wl = "workloads/gemm/gemm_n256_k512.jsonl";
  const std::string line =
      R"({"definition": "gemm_n256_k512", "solution": null, "workload": )"
      R"({"uuid": "u-new", "axes": {"M": 8}, "inputs": {"A": {"type": "random"}, )"
      R"("B": {"type": "random"}}}, "evaluation": null})";
  struct Case {
    std::string file, text, expect;
    bool append = false;
  };
  std::vector<Case> cases = {
      {gemm_def, "{\"name\": \"gemm_n256_k512\", \"op_type\": \"gemm\", \"axes\": {",
       gemm_def + ": not valid JSON"},
      {gemm_wl, "{\"definition\": \"gemm_n256_k512\"\n", gemm_wl + ":3: not valid JSON", true},
      {gemm_wl, "{\"definition\": \"gemm_n256_k512\", \"workload\": {\"axes\": {}}}\n",
       gemm_wl + ":3: the workload has no \"uuid\"", true},
      {gemm_wl, R"({"definition": "nope", "workload": {"uuid": "x", "axes": {}, "inputs": {}}})",
       gemm_wl + ":3: a workload of definition nope, which definitions/ does not hold", true},
      {gemm_wl,
       R"({"definition": "gemm_n256_k512", "solution": "s", "workload": {"uuid": "x", "axes": {}, "inputs": {}}, "evaluation": {"status": "PASSED"}})",
       gemm_wl + ":3: \"solution\" is set: this line is a trace, not a workload", true},
      {gemm_wl,
       R"({"definition": "gemm_n256_k512", "workload": {"uuid": "0b6a7f2e-5d1c-4e8a-9f3b-2c4d6e8f0a11", "axes": {"M": 1}, "inputs": {}}})",
       "workload 0b6a7f2e-5d1c-4e8a-9f3b-2c4d6e8f0a11 of gemm_n256_k512 appears twice", true},
      {gemm_wl,
       R"({"definition": "gemm_n256_k512", "workload": {"uuid": "y", "axes": {"M": 1.5}, "inputs": {}}})",
       gemm_wl + ":3: axis M is number, expected an integer", true},
      {"definitions/gemm/x.json",
       R"({"name": "x", "op_type": "gemm", "axes": {"M": {"type": "var"}}, "inputs": {"A": {"shape": ["M", "Q"], "dtype": "bfloat16"}}, "outputs": {"C": {"shape": ["M"], "dtype": "bfloat16"}}})",
       "definitions/gemm/x.json: inputs.A: shape names axis \"Q\", which \"axes\" does not define"},
      {"definitions/gemm/x.json",
       R"({"name": "x", "op_type": "gemm", "axes": {"M": {"type": "const", "value": 0}}, "inputs": {}, "outputs": {}})",
       "definitions/gemm/x.json: axes.M: a const axis needs a positive integer \"value\""},
      {"definitions/gemm/x.json", R"({"op_type": "gemm"})",
       "definitions/gemm/x.json: missing field \"name\""},
      {"definitions/gemm/again.json", ReadFile(Fixture() + "/" + gemm_def),
       "definition gemm_n256_k512 is also in"},
      {"definitions/ours.json",
       ReadFile(Catalog::DefaultDir() + "/definitions/gemm_n128_k2048.json"),
       "mixes ptxbench definitions"},
      {"definitions/neither.json", "{\"name\": \"n\"}",
       "neither a ptxbench definition (\"family\") nor a FlashInfer-Bench one (\"op_type\")"},
  };
  for (const Case& c : cases) {
    BrokenSet set;
    if (c.append)
      set.Append(c.file, c.text + "\n");
    else
      set.Write(c.file, c.text);
    const std::string error = set.LoadError();
    EXPECT_TRUE(Contains(error, c.expect)) << "expected: " << c.expect << "\ngot: " << error;
  }
  // Good lines appended load: the fixture's own lines are not what made those fail.
  BrokenSet ok;
  ok.Append(gemm_wl, line + "\n");
  EXPECT_EQ(ok.LoadError(), "");
  // No workloads folder at all.
  BrokenSet bare;
  fs::remove_all(bare.Path("workloads"));
  EXPECT_TRUE(Contains(bare.LoadError(), "needs a workloads/ folder")) << bare.LoadError();
}

// FlashInfer-Bench's own GEMM definitions are fp16: they become gemm_f16 tasks (fp16 tensors,
// an fp16 cuBLASLt baseline); a GEMM mixing types is left out with the reason.
TEST(FlashInferSet, AnFp16GemmDefinitionBecomesAnFp16GemmTask) {
  BrokenSet set;
  std::string def = ReadFile(set.Path("definitions/gemm/gemm_n256_k512.json"));
  for (size_t at = def.find("bfloat16"); at != std::string::npos; at = def.find("bfloat16"))
    def.replace(at, 8, "float16");
  set.Write("definitions/gemm/gemm_n256_k512.json", def);
  Catalog c = Catalog::Load(set.Path());
  const Definition& d = c.Find("gemm_n256_k512");
  EXPECT_EQ(d.family, "gemm_f16");
  EXPECT_EQ(d.baseline, "cublaslt_f16_fp32acc");
  EXPECT_EQ(d.flops_formula, "2*M*N*K");
  EXPECT_EQ(d.constant_axes, (Axes{{"N", 256}, {"K", 512}}));  // no causal axis for a GEMM
  for (const TensorSpec& t : FindFamily(d.family)->Tensors(d.FullAxes(d.workloads[0])))
    EXPECT_EQ(t.dtype, DType::kF16) << t.name;

  std::string mixed = def;
  mixed.replace(mixed.find("float16"), 7, "bfloat16");  // A alone bf16
  set.Write("definitions/gemm/gemm_n256_k512.json", mixed);
  Catalog m = Catalog::Load(set.Path());
  const LeftOutDefinition* l = LeftOut(m, "gemm_n256_k512");
  ASSERT_TRUE(l);
  EXPECT_TRUE(Contains(l->reason,
                       "B is float16 and A is bfloat16; a gemm is bfloat16 or float16 "
                       "throughout"))
      << l->reason;
}

TEST(FlashInferSet, ADefinitionWithoutUsableWorkloadsIsLeftOut) {
  BrokenSet set;
  fs::remove(set.Path("workloads/gemm/gemm_n256_k512.jsonl"));
  Catalog c = Catalog::Load(set.Path());
  const LeftOutDefinition* l = LeftOut(c, "gemm_n256_k512");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->reason, "no workload of it in workloads/");
  // Every workload refused: the first reason is given.
  set.Write(
      "workloads/gemm/gemm_n256_k512.jsonl",
      R"({"definition": "gemm_n256_k512", "workload": {"uuid": "z", "axes": {"M": 8}, "inputs": {"A": {"type": "safetensors", "path": "a.st", "tensor_key": "A"}, "B": {"type": "random"}}}})"
      "\n");
  c = Catalog::Load(set.Path());
  l = LeftOut(c, "gemm_n256_k512");
  ASSERT_TRUE(l);
  EXPECT_TRUE(Contains(l->reason,
                       "none of its 1 workloads can be judged here (z: input A is "
                       "read from a safetensors file (a.st)"))
      << l->reason;
  // A workload whose constant axis disagrees, or that lacks the variable one.
  set.Write(
      "workloads/gemm/gemm_n256_k512.jsonl",
      R"({"definition": "gemm_n256_k512", "workload": {"uuid": "a", "axes": {"M": 8, "N": 7}, "inputs": {"A": {"type": "random"}, "B": {"type": "random"}}}})"
      "\n"
      R"({"definition": "gemm_n256_k512", "workload": {"uuid": "b", "axes": {}, "inputs": {"A": {"type": "random"}, "B": {"type": "random"}}}})"
      "\n");
  c = Catalog::Load(set.Path());
  const LeftOutDefinition* both = LeftOut(c, "gemm_n256_k512");
  ASSERT_TRUE(both);
  EXPECT_TRUE(Contains(both->reason, "axis N = 7, but the definition fixes it at 256"))
      << both->reason;
}

}  // namespace
}  // namespace ptxbench

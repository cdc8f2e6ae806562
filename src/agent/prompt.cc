#include "agent/prompt.h"

#include "agent/pack.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "common/error.h"
#include "common/files.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "record/vocabulary.h"
#include "task/family.h"

namespace ptxbench {
namespace fs = std::filesystem;

namespace {

std::string SourceSub(const char* env, const char* sub) {
  if (const char* v = std::getenv(env); v && *v) return v;
  return std::string(PTXBENCH_SOURCE_DIR) + "/" + sub;
}

std::string ArchName(const std::string& arch) {
  const ArchInfo* a = FindArchitecture(arch);
  return a ? std::string(a->gpus) : arch;
}

std::string ArchInstructions(const std::string& arch) {
  const ArchInfo* a = FindArchitecture(arch);
  return a ? std::string(a->instructions) : "its tensor-core instructions";
}

// How the instruction families read to a kernel writer.
std::string FamilyName(const std::string& f) {
  if (f == "gmma") return "GMMA (wgmma)";
  if (f == "tma") return "TMA (cp.async.bulk.tensor)";
  if (f == "tcgen05") return "tcgen05 (UTC* MMA)";
  if (f == "tmem") return "tensor memory (tcgen05.ld/st)";
  return f;
}

std::string BaselineName(const std::string& b) {
  if (b == "cublas") return "cuBLASLt (bf16, fp32 accumulation)";
  if (b == "cudnn_sdpa_fwd") return "cuDNN's fused SDPA forward with statistics";
  if (b == "cudnn_sdpa_bwd") return "cuDNN's fused SDPA backward";
  return b;
}

std::string ToleranceText(const Tolerance& t) {
  char buf[160];
  if (t.rule == ToleranceRule::kPublished)
    std::snprintf(buf, sizeof buf,
                  "an element fails iff |x - y| > %g and |x - y| / (|y| + 1e-8) > %g", t.atol,
                  t.rtol);
  else
    std::snprintf(buf, sizeof buf, "an element fails iff |x - y| > %g + %g * |y|", t.atol, t.rtol);
  return buf;
}

std::string Families(const Definition& def, const std::string& arch) {
  auto it = def.required_families.find(arch);
  if (it == def.required_families.end() || it->second.empty()) return "none";
  std::vector<std::string> names;
  for (const auto& f : it->second) names.push_back(FamilyName(f));
  return Join(names, ", ");
}

}  // namespace

std::string DefaultPromptsDir() { return SourceSub("PTXBENCH_PROMPTS", "prompts"); }
std::string DefaultPacksDir() { return SourceSub("PTXBENCH_PACKS", "packs"); }

std::string RenderTemplate(const std::string& text,
                           const std::map<std::string, std::string>& values) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = text.find("{{", pos);
    if (open == std::string::npos) break;
    size_t close = text.find("}}", open + 2);
    if (close == std::string::npos)
      throw InputError("template: unclosed placeholder at offset " + std::to_string(open));
    std::string name = Trim(text.substr(open + 2, close - open - 2));
    auto it = values.find(name);
    if (it == values.end()) throw InputError("template: no value for {{" + name + "}}");
    out += text.substr(pos, open - pos);
    out += it->second;
    pos = close + 2;
  }
  out += text.substr(pos);
  return out;
}

std::string LoadPack(const std::string& packs_dir, const std::string& arch,
                     const std::string& variant) {
  if (variant == "none") return "";
  return LoadPackManifest(packs_dir, arch).Render(variant);
}

Prompts RenderPrompts(const std::string& prompts_dir, const Definition& def, const Workload& wl,
                      const std::string& arch, const std::string& pack_text) {
  const Family& family = *FindFamily(def.family);
  Axes axes = def.FullAxes(wl);
  std::vector<std::string> shape, tensors;
  for (const auto& [k, v] : axes) shape.push_back(k + "=" + std::to_string(v));
  for (const auto& t : family.Tensors(axes)) {
    std::vector<std::string> dims;
    for (int64_t d : t.shape) dims.push_back(std::to_string(d));
    tensors.push_back("- `" + t.name + "`: " + ToString(t.dtype) + " [" + Join(dims, ", ") + "], " +
                      (t.role == TensorRole::kInput ? "input" : "output"));
  }
  char flops[64];
  std::snprintf(flops, sizeof flops, "%.6g", def.Flops(wl));
  std::string number = arch.size() > 3 ? arch.substr(3) : arch;
  std::map<std::string, std::string> v = {
      {"arch", arch},
      {"arch_number", number},
      {"gpu_arch_name", ArchName(arch)},
      {"arch_instructions", ArchInstructions(arch)},
      {"signature", family.Signature()},
      {"semantics", family.Semantics()},
      {"tolerance", ToleranceText(def.tolerance)},
      {"required_families", Families(def, arch)},
      {"baseline", BaselineName(def.baseline)},
      {"pack", pack_text.empty() ? "" : "\n## Architecture knowledge pack\n\n" + pack_text},
      {"task", def.name},
      {"family", def.family},
      {"description", def.description},
      {"shape", Join(shape, ", ")},
      {"tensors", Join(tensors, "\n")},
      {"flops_formula", def.flops_formula},
      {"flops", flops},
  };
  Prompts p;
  p.system = RenderTemplate(ReadFile(prompts_dir + "/system.md"), v);
  p.task = RenderTemplate(ReadFile(prompts_dir + "/task.md"), v);
  p.version = Sha256Hex(p.system + "\n\x1e\n" + p.task);
  return p;
}

}  // namespace ptxbench

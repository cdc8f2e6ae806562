// `ptxbench tasks [--family F] [NAME] [--json]`: the task catalog.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/shared_options.h"
#include "common/strings.h"
#include "evaluate/evaluation_options.h"
#include "task/definition.h"
#include "task/family.h"

namespace ptxbench {
namespace {

// The baseline `eval` times the task against with its default options. The definition's own
// `baseline` field is upstream's name (attention forward: cuDNN SDPA), while eval's default for
// attention forward is FlashInfer, the paper's baseline, of the paper's release: say both, so
// the two never disagree silently. The JSON's word is the option's canonical one.
std::string EvalBaseline(const Definition& d) {
  if (d.family != "mha_fwd") return d.baseline;
  return ToString(EvaluationOptions{}.attention_baseline);
}

std::string EvalBaselineLine(const Definition& d) {
  if (d.family != "mha_fwd") return d.baseline;
  auto name = [&d](const AttentionBaseline& b) {
    return b.IsFlashInfer() ? DisplayName(b) : d.baseline;
  };
  const AttentionBaseline dflt = EvaluationOptions{}.attention_baseline;
  std::vector<AttentionBaseline> choices;
  for (const std::string& v : FlashInferVersions())
    choices.push_back(AttentionBaseline::FlashInfer(v));
  choices.push_back(AttentionBaseline::Cudnn());
  std::string line = name(dflt) + ", eval's default";
  for (const AttentionBaseline& b : choices)
    if (b != dflt) line += "; --baseline " + ToString(b) + ": " + name(b);
  return line;
}

}  // namespace

CommandRunner AddTasksCommand(CLI::App& app) {
  struct Options {
    std::string name, family, tasks_dir;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("tasks", "List the task definitions, or show one in full");
  cmd->add_option("name", o->name, "A definition to show in full (its workloads too)");
  std::vector<std::string> families;
  for (const Family* f : AllFamilies()) families.push_back(f->Name());
  cmd->add_option("--family", o->family, "Only definitions of this family (gemm, …)")
      ->check(CLI::IsMember(families));
  AddTasksDirOption(cmd, &o->tasks_dir);
  cmd->add_flag("--json", o->json, "Machine-readable output");
  return [o]() {
    Catalog catalog = Catalog::Load(o->tasks_dir.empty() ? Catalog::DefaultDir() : o->tasks_dir);
    if (!o->name.empty()) {
      const Definition& d = catalog.Find(o->name);
      nlohmann::json j = ToJson(d, true);
      const Family* f = FindFamily(d.family);
      j["signature"] = f->Signature();
      j["semantics"] = f->Semantics();
      j["eval_baseline"] = EvalBaseline(d);
      if (o->json) {
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      std::cout << d.name << " (" << d.family << ")\n  " << d.description << "\n"
                << "  signature: " << f->Signature() << "\n"
                << "  semantics: " << f->Semantics() << "\n"
                << "  constant axes:";
      for (const auto& [k, v] : d.constant_axes) std::cout << " " << k << "=" << v;
      std::cout << "\n  tolerance: " << ToString(d.tolerance.rule) << " (atol " << d.tolerance.atol
                << ", rtol " << d.tolerance.rtol << ")\n  flops: " << d.flops_formula
                << "\n  baseline: " << EvalBaselineLine(d) << "\n  required instruction families:";
      for (const auto& [arch, fams] : d.required_families) {
        std::cout << " " << arch << "=";
        for (size_t i = 0; i < fams.size(); ++i) std::cout << (i ? "+" : "") << fams[i];
      }
      if (d.flashinfer) {
        const FlashInferLink& f = *d.flashinfer;
        std::cout << "\n  FlashInfer-Bench: " << f.file << " (op_type " << f.op_type
                  << "); tensors " << Join(f.tensor_names, ", ") << "; axes";
        for (const auto& [ours, theirs] : f.axis_names) std::cout << " " << ours << "=" << theirs;
        if (!f.scalar_inputs.empty())
          std::cout << "; scalar inputs " << Join(f.scalar_inputs, ", ") << " (1/sqrt(D))";
      }
      std::cout << "\n  workloads:\n";
      for (const auto& w : d.workloads) {
        std::cout << "    ";
        for (const auto& [k, v] : w.axes) std::cout << k << "=" << v << " ";
        std::printf(" %.3g GFLOP  %s%s\n", d.Flops(w) / 1e9, w.id.c_str(),
                    w.headline ? "  (headline)" : "");
      }
      for (const auto& r : d.refused_workloads)
        std::cout << "    refused " << r.id << ": " << r.reason << "\n";
      return 0;
    }
    nlohmann::json all = nlohmann::json::array();
    size_t shown = 0;
    for (const auto& d : catalog.definitions()) {
      if (!o->family.empty() && d.family != o->family) continue;
      ++shown;
      if (o->json) {
        all.push_back(ToJson(d, true));
        continue;
      }
      std::string axes;
      for (const auto& [k, v] : d.constant_axes) axes += k + "=" + std::to_string(v) + " ";
      bool headline = false;
      for (const auto& w : d.workloads) headline |= w.headline;
      std::printf("%-28s %-8s %-16s %2zu workloads%s\n", d.name.c_str(), d.family.c_str(),
                  axes.c_str(), d.workloads.size(), headline ? "  headline" : "");
    }
    // Definitions of a FlashInfer-Bench set that no family here judges, with why. With --json
    // they go to standard error, so that standard output stays a list of definitions.
    if (o->family.empty() && !catalog.left_out().empty()) {
      std::ostream& out = o->json ? std::cerr : std::cout;
      out << "left out (" << catalog.left_out().size()
          << " FlashInfer-Bench definitions no family here judges):\n";
      for (const auto& l : catalog.left_out())
        out << "  " << l.name << " (" << l.op_type << "): " << l.reason << "\n";
    }
    if (o->json) std::cout << all.dump(2) << "\n";
    if (shown == 0 && !o->family.empty()) {
      std::cerr << "ptxbench: no definitions of family '" << o->family << "'\n";
      return 2;
    }
    return 0;
  };
}

}  // namespace ptxbench

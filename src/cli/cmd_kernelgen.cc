// `ptxbench kernelgen export`: SFT rows from correct kernels that earned the architecture
// credit at run time (fixit/kernelgen_export.h), with the split and card of `fixit export`.
// This file declares the options and prints the summary.
#include <cstdio>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/shared_options.h"
#include "fixit/kernelgen_export.h"

namespace ptxbench {
namespace {

int Export(const KernelgenExportOptions& a) {
  std::vector<std::string> problems;
  ExportSummary s = RunKernelgenExport(a, &problems);
  std::printf("kernelgen export: %d train, %d validation rows -> %s", s.train, s.validation,
              a.sft.out_dir.c_str());
  for (const auto& [why, n] : s.dropped) std::printf("; dropped %d: %s", n, why.c_str());
  std::printf("\n");
  for (const std::string& p : problems) std::fprintf(stderr, "kernelgen export: %s\n", p.c_str());
  return 0;
}

}  // namespace

CommandRunner AddKernelgenCommand(CLI::App& app) {
  CLI::App* kg = app.add_subcommand("kernelgen", "SFT data from correct, verified kernels");
  kg->require_subcommand(1);
  auto a = std::make_shared<KernelgenExportOptions>();
  CLI::App* e = kg->add_subcommand("export", "SFT rows (chat JSONL), split, dataset card");
  AddStoreOption(e, &a->db, "The results store to read", StoreSource::kExistingFile);
  e->add_option("--runs", a->runs, "Run folders, or folders of them (instead of --db)")
      ->check(CLI::ExistingDirectory);
  e->add_option("--out", a->sft.out_dir, "Where to write")->required();
  AddRunFilterOptions(e, {&a->models, &a->tasks, &a->packs, &a->archs});
  e->add_option("--min-speedup", a->min_speedup, "Only kernels at least this fast (0: any)")
      ->check(ZeroOrMore())
      ->capture_default_str();
  AddSftExportOptions(e, &a->sft);
  return [a, e]() { return e->parsed() ? Export(*a) : 2; };
}

}  // namespace ptxbench

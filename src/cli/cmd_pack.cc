// `ptxbench pack list|show|stats|inline`: the architecture knowledge packs (agent/pack.h).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "agent/pack.h"
#include "agent/prompt.h"
#include "cli/commands.h"
#include "cli/shared_options.h"
#include "common/error.h"
#include "common/files.h"
#include "common/sha256.h"
#include "compile/nvcc.h"

namespace ptxbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

int List(const std::string& packs_dir, bool as_json) {
  json out = json::array();
  for (const std::string& arch : PackArchs(packs_dir)) {
    Pack pack = LoadPackManifest(packs_dir, arch);
    for (const std::string& v : pack.VariantNames()) {
      std::string text = pack.Render(v);
      out.push_back({{"arch", arch},
                     {"variant", v},
                     {"characters", text.size()},
                     {"estimated_tokens", EstimatedTokens(text.size())},
                     {"sha256", Sha256Hex(text)},
                     {"hardware_verified", pack.hardware_verified}});
    }
  }
  if (as_json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (out.empty()) {
    std::cout << "no packs in " << packs_dir << "\n";
    return 0;
  }
  std::printf("%-8s %-22s %10s %8s  %s\n", "arch", "variant", "chars", "~tokens", "hardware");
  for (const auto& r : out)
    std::printf("%-8s %-22s %10zu %8ld  %s\n", r["arch"].get<std::string>().c_str(),
                r["variant"].get<std::string>().c_str(), r["characters"].get<size_t>(),
                r["estimated_tokens"].get<long>(),
                r["hardware_verified"].get<bool>() ? "proven on hardware"
                                                   : "compiled only, not run on hardware");
  return 0;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Turn-1 prompt tokens (system + task message, as the provider counted them) of every
// trajectory in the run folders, by model, arch and pack variant; where the same model has
// runs without a pack, the difference is what the pack itself cost.
int Stats(const std::vector<std::string>& run_dirs, bool as_json) {
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<double>> groups;
  int runs = 0;
  for (const std::string& root : run_dirs) {
    std::vector<fs::path> candidates;
    if (FileExists(root + "/run.json")) candidates.push_back(root);
    std::error_code ec;
    if (candidates.empty() && fs::is_directory(root, ec))
      for (const auto& e : fs::directory_iterator(root))
        if (fs::exists(e.path() / "run.json")) candidates.push_back(e.path());
    for (const fs::path& run : candidates) {
      json info = json::parse(ReadFile((run / "run.json").string()), nullptr, false);
      if (info.is_discarded()) continue;
      std::string model = info.value("model", json::object()).value("name", "?");
      if (info.value("model", json::object()).value("provider", "") == "replay")
        continue;  // a replay's token counts are estimates, not a provider's
      std::string arch = info.value("arch", "?"), pack = info.value("pack", "?");
      ++runs;
      if (!fs::is_directory(run / "trajectories")) continue;
      for (const auto& t : fs::directory_iterator(run / "trajectories")) {
        json j = json::parse(ReadFile(t.path().string()), nullptr, false);
        if (j.is_discarded() || !j.contains("info")) continue;
        const json& turns = j["info"].value("turns", json::array());
        if (turns.empty()) continue;
        int64_t p = turns[0].value("usage", json::object()).value("prompt_tokens", int64_t{0});
        if (p > 0) groups[{model, arch, pack}].push_back(static_cast<double>(p));
      }
    }
  }
  json out = json::array();
  for (const auto& [key, v] : groups) {
    const auto& [model, arch, pack] = key;
    json row = {{"model", model},
                {"arch", arch},
                {"pack", pack},
                {"trajectories", v.size()},
                {"median_prompt_tokens_turn1", Median(v)}};
    auto none = groups.find({model, arch, "none"});
    if (pack != "none" && none != groups.end())
      row["pack_tokens"] = Median(v) - Median(none->second);
    out.push_back(row);
  }
  if (as_json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("%d runs with provider-reported usage\n", runs);
  std::printf("%-20s %-8s %-20s %6s %14s %12s\n", "model", "arch", "pack", "traj", "turn-1 prompt",
              "pack alone");
  for (const auto& r : out)
    std::printf("%-20s %-8s %-20s %6zu %14.0f %12s\n", r["model"].get<std::string>().c_str(),
                r["arch"].get<std::string>().c_str(), r["pack"].get<std::string>().c_str(),
                r["trajectories"].get<size_t>(), r["median_prompt_tokens_turn1"].get<double>(),
                r.contains("pack_tokens")
                    ? std::to_string(static_cast<long>(r["pack_tokens"].get<double>())).c_str()
                    : "-");
  return 0;
}

}  // namespace

CommandRunner AddPackCommand(CLI::App& app) {
  struct Options {
    std::string packs_dir, arch = "sm_90a", variant = "full", file, out;
    std::vector<std::string> runs = {"runs"};
    bool json = false;
    CLI::App *list = nullptr, *show = nullptr, *stats = nullptr, *inline_cmd = nullptr;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("pack", "The architecture knowledge packs");
  cmd->require_subcommand(1);
  cmd->add_option("--packs-dir", o->packs_dir, "Folder of packs (default: the source tree's)")
      ->envname("PTXBENCH_PACKS")
      ->check(CLI::ExistingDirectory);
  o->list = cmd->add_subcommand("list", "Every pack variant with its size");
  o->list->add_flag("--json", o->json, "Machine-readable output");
  o->show = cmd->add_subcommand("show", "Print a variant as the model reads it");
  AddArchOption(o->show, &o->arch);
  o->show->add_option("--variant", o->variant, "none, base, base+gemm, ..., full")
      ->capture_default_str();
  o->stats = cmd->add_subcommand("stats", "Prompt tokens that providers reported in past runs");
  o->stats->add_option("--runs", o->runs, "Run folders, or folders of them")
      ->check(CLI::ExistingDirectory)
      ->capture_default_str();
  o->stats->add_flag("--json", o->json, "Machine-readable output");
  o->inline_cmd = cmd->add_subcommand(
      "inline",
      "Replace the pack's #include \"<helper header>\" lines of a kernel with the header");
  o->inline_cmd->add_option("file", o->file, "A kernel written on the helper header")->required();
  AddArchOption(o->inline_cmd, &o->arch);
  o->inline_cmd->add_option("-o,--out", o->out, "Output file (default: stdout)");

  return [o]() {
    std::string dir = o->packs_dir.empty() ? DefaultPacksDir() : o->packs_dir;
    if (o->list->parsed()) return List(dir, o->json);
    if (o->stats->parsed()) return Stats(o->runs, o->json);
    if (o->show->parsed()) {
      std::cout << LoadPack(dir, o->arch, o->variant);
      return 0;
    }
    if (!FileExists(o->file)) throw InputError(o->file + ": no such readable file");
    std::string text = InlinePackHeaders(ReadFile(o->file), LoadPackManifest(dir, o->arch));
    if (o->out.empty())
      std::cout << text;
    else
      WriteFileAtomic(o->out, text);
    return 0;
  };
}

}  // namespace ptxbench

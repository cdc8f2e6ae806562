// `ptxbench inspect KERNEL.cu [--arch A] [--json]`: the static view alone, no GPU needed:
// screen, build, then the instruction families in the SASS of the built object.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/shared_options.h"
#include "common/error.h"
#include "common/files.h"
#include "common/source_policy.h"
#include "compile/nvcc.h"
#include "inspect/sass.h"
#include "report/flashinfer_bench.h"
#include "screen/screen.h"

namespace ptxbench {

CommandRunner AddInspectCommand(CLI::App& app) {
  struct Options {
    std::string kernel, arch = "sm_90a", cache_dir;
    bool json = false, all = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd =
      app.add_subcommand("inspect", "Show the instruction families in a kernel's SASS (no GPU)");
  AddCandidateArgument(cmd, &o->kernel);
  AddArchOption(cmd, &o->arch);
  AddCacheDirOption(cmd, &o->cache_dir, "Build cache");
  cmd->add_flag("--json", o->json, "Machine-readable output");
  cmd->add_flag("--evidence", o->all, "Print the matched instructions too");
  return [o]() {
    // The source policy first (empty, over 1 MiB, NUL bytes, invalid UTF-8): exit 2.
    std::string source = ReadCandidateFile(o->kernel, "").source;
    // With --json every answer is JSON on standard output, a refusal too.
    auto print_json = [](const nlohmann::json& j) {
      WriteOutput("-", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    };
    ScreenResult screen = ScreenSource(source);
    if (!screen.passed()) {
      if (o->json)
        print_json(
            {{"state", "rejected"}, {"message", screen.message()}, {"screen", ToJson(screen)}});
      else
        std::cout << "REJECTED  " << screen.message() << "\n";
      return 1;
    }
    BuildOptions bo;
    bo.arch = o->arch;
    if (!o->cache_dir.empty()) bo.cache_dir = o->cache_dir + "/build";
    BuildResult b = BuildCandidate(source, bo);
    if (b.outcome != BuildOutcome::kBuilt) {
      if (o->json)
        print_json({{"state", "compile_error"},
                    {"message", "the source did not compile"},
                    {"errors", b.errors}});
      else
        std::cout << "COMPILE_ERROR\n" << b.errors;
      return 1;
    }
    if (!b.foreign_device_code.empty()) {
      // Its SASS would be of bytes the source placed itself, not of what nvcc made.
      if (o->json)
        print_json({{"state", "foreign_device_code"}, {"message", b.foreign_device_code}});
      else
        std::cout << "FOREIGN_DEVICE_CODE  " << b.foreign_device_code << "\n";
      return 1;
    }
    ScratchDir scratch("ptxbench-inspect");
    StaticInspection s = InspectSharedObject(b.shared_object, scratch.path());
    if (o->json) {
      nlohmann::json j = s.ToJson();
      j["abi"] = ToString(b.abi);  // native, or tvm-ffi (upstream PTXBench's)
      print_json(j);
    } else if (s.state != "ran") {
      std::cout << "static inspection " << s.state << ": " << s.message << "\n";
    } else {
      nlohmann::json j = s.ToJson();
      std::cout << o->arch << "  fatbin sha256 " << s.fatbin_sha256 << "  (" << s.seconds
                << " s)\n";
      for (const auto& f : j["functions"]) {
        std::cout << "  " << f["demangled"].get<std::string>() << "  [" << f["instructions"]
                  << " instructions]";
        for (const auto& [fam, n] : f["families"].items()) std::cout << "  " << fam << "=" << n;
        std::cout << "\n";
        if (o->all)
          for (const auto& e : f["evidence"]) std::cout << "      " << e.get<std::string>() << "\n";
      }
      std::cout << "  totals:";
      for (const auto& [fam, n] : s.Totals()) std::cout << " " << fam << "=" << n;
      std::cout << "\n";
    }
    return s.state == "ran" ? 0 : 3;
  };
}

}  // namespace ptxbench

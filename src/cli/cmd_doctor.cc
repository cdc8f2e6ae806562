// `ptxbench doctor`: what this machine has for each layer, found or missing, with versions.
#include <filesystem>
#include <iostream>
#include <memory>
#include <regex>

#include "cli/commands.h"
#include "common/files.h"
#include "common/sandbox.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "compile/tvm_ffi.h"
#include "inspect/ncu.h"
#include "inspect/sass.h"
#include "measure/flashinfer_attention.h"
#include "measure/gpm.h"
#include "run/children.h"
#include "run/memcheck.h"

namespace ptxbench {

namespace {

namespace fs = std::filesystem;

// The version a tool prints first, e.g. "13.0.88" or "2025.3.1".
std::string ToolVersion(const std::string& path) {
  CommandResult r = RunCommand({path, "--version"}, std::chrono::seconds(30));
  static const std::regex v(R"((\d+\.\d+(\.\d+)*))");
  std::smatch m;
  for (const auto& line : SplitLines(r.output))
    if ((line.find("ersion") != std::string::npos || line.find("V") != std::string::npos) &&
        std::regex_search(line, m, v))
      return m[1];
  return std::regex_search(r.output, m, v) ? std::string(m[1]) : "unknown";
}

// A shared library on the loader's path or in the CUDA toolkit, with the version in its
// real file name (libcublas.so.13.1.0.3 → 13.1.0.3).
std::optional<std::pair<std::string, std::string>> FindLibrary(const std::string& stem) {
  std::vector<std::string> dirs;
  if (const char* ch = std::getenv("CUDA_HOME"); ch && *ch)
    dirs.push_back(std::string(ch) + "/lib64");
  for (const char* d :
       {"/usr/local/cuda/lib64", "/usr/local/cuda/extras/CUPTI/lib64", "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64", "/usr/local/nvidia/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"})
    dirs.push_back(d);
  if (const char* ld = std::getenv("LD_LIBRARY_PATH"))
    for (auto& d : Split(ld, ':'))
      if (!d.empty()) dirs.push_back(d);
  for (const auto& d : dirs) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      std::string name = e.path().filename().string();
      if (!StartsWith(name, stem + ".so")) continue;
      fs::path real = fs::canonical(e.path(), ec);
      if (ec) continue;
      std::string rn = real.filename().string();
      std::string version = rn.size() > stem.size() + 4 ? rn.substr(stem.size() + 4) : "unknown";
      return std::make_pair(real.string(), version.empty() ? "unknown" : version);
    }
  }
  return std::nullopt;
}

}  // namespace

CommandRunner AddDoctorCommand(CLI::App& app) {
  auto json_out = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("doctor", "Check the GPU, driver and tools each layer needs");
  cmd->add_flag("--json", *json_out, "Machine-readable output");
  return [json_out]() {
    nlohmann::json report = nlohmann::json::object();
    bool nvcc_found = false;
    // Each tool as the pipeline finds it (cuobjdump may be setup's pinned copy in .tools/).
    for (const char* tool : {"nvcc", "ncu", "cuobjdump", "nvdisasm", "compute-sanitizer"}) {
      std::string name = tool;
      auto p = name == "cuobjdump"           ? FindCuobjdump()
               : name == "ncu"               ? FindNcu()
               : name == "compute-sanitizer" ? FindComputeSanitizer()
                                             : FindProgram(tool);
      if (p)
        report[tool] = {{"found", true}, {"path", *p}, {"version", ToolVersion(*p)}};
      else
        report[tool] = {{"found", false}};
      if (std::string(tool) == "nvcc") nvcc_found = p.has_value();
    }
    for (const auto& [name, stem] :
         std::vector<std::pair<std::string, std::string>>{{"cudart", "libcudart"},
                                                          {"cupti", "libcupti"},
                                                          {"cublas", "libcublas"},
                                                          {"cublasLt", "libcublasLt"},
                                                          {"cudnn", "libcudnn"},
                                                          {"nvml", "libnvidia-ml"}}) {
      auto lib = FindLibrary(stem);
      if (lib)
        report[name] = {{"found", true}, {"path", lib->first}, {"version", lib->second}};
      else
        report[name] = {{"found", false}};
    }
    // The TVM-FFI runtime that upstream-style (tvm-ffi) candidates are built and run with.
    {
      std::string why;
      if (auto t = FindTvmFfi(&why))
        report["tvm-ffi"] = {{"found", true}, {"path", t->root}, {"version", t->version}};
      else
        report["tvm-ffi"] = {{"found", false}, {"reason", why}};
    }
    // FlashInfer's headers, each release's: the attention-forward baseline is built from them.
    // Keyed by the word --baseline takes for it.
    for (const std::string& version : FlashInferVersions()) {
      std::string why;
      nlohmann::json& entry = report["flashinfer@" + version];
      if (auto f = FindFlashInfer(version, &why))
        entry = {{"found", true}, {"path", f->root}, {"version", f->version}};
      else
        entry = {{"found", false}, {"reason", why}};
      entry["default"] = version == kDefaultFlashInferVersion;
    }
    // The GPU is asked about in a child, as in an evaluation: this process stays CUDA-free.
    ChildOutcome o = RunProbeChild();
    if (const nlohmann::json* d = o.First("device")) {
      report["gpu"] = *d;
      report["gpu"].erase("event");
      report["gpu"]["found"] = true;
    } else {
      std::string why = o.First("no_gpu") ? o.First("no_gpu")->value("message", "")
                                          : "probe child " + o.exit.Describe();
      report["gpu"] = {{"found", false}, {"reason", why}};
    }
    // The confinement of candidate processes, as probed on this machine, and the witness.
    const SandboxSupport& sb = ProbeSandbox();
    auto protection = [](bool on, const std::string& detail, const std::string& why) {
      nlohmann::json j = {{"found", on}};
      if (on && !detail.empty()) j["version"] = detail;
      if (!on) j["reason"] = why;
      return j;
    };
    report["sandbox namespaces"] = protection(
        sb.namespaces, sb.proc_remount ? "pid+mount+net+ipc, own /proc" : "pid+mount+net+ipc",
        sb.namespaces_why);
    report["sandbox landlock"] =
        protection(sb.landlock_abi > 0, "abi " + std::to_string(sb.landlock_abi), sb.landlock_why);
    report["sandbox seccomp"] = protection(sb.seccomp, "filter", sb.seccomp_why);
    report["sandbox user"] =
        protection(sb.user_drop, SandboxUserPolicy(), "not root: children run as the caller");
    report["sandbox /dev/shm"] =
        protection(sb.private_dev_shm, "a tmpfs per child",
                   sb.namespaces ? "no tmpfs could be mounted on /dev/shm" : sb.namespaces_why);
    nlohmann::json gpm = ProbeGpm(report["gpu"].value("pci_bus_id", ""));
    report["gpm witness"] = protection(gpm.value("state", "") == "available", "NVML GPM",
                                       gpm.value("reason", std::string("unavailable")));
    if (*json_out) {
      std::cout << report.dump(2) << "\n";
    } else {
      for (const auto& [k, v] : report.items()) {
        std::string line = v.value("found", false) ? "found" : "MISSING";
        if (k == "gpu" && v.value("found", false))
          line += "  " + v.value("name", "") + ", " + std::to_string(v.value("sm_count", 0)) +
                  " SMs, cc " + v.value("compute_capability", "") + ", driver " +
                  std::to_string(v.value("driver_version", 0));
        else if (v.contains("version"))
          line += "  " + v["version"].get<std::string>() + "  " + v.value("path", "");
        else if (v.contains("reason"))
          line += "  (" + v["reason"].get<std::string>() + ")";
        std::printf("  %-18s %s\n", k.c_str(), line.c_str());
      }
    }
    // Non-zero when a layer cannot run here: no compiler (nothing can be judged), no GPU (no
    // run, memory check or timing), no cuobjdump (no static inspection).
    bool layers = nvcc_found && report["gpu"].value("found", false) &&
                  report["cuobjdump"].value("found", false);
    if (!*json_out && !layers)
      std::printf("doctor: some layers cannot run on this machine (MISSING above)\n");
    return layers ? 0 : 1;
  };
}

}  // namespace ptxbench

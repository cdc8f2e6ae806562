// main() of the GPU tests: without a GPU they exit with 77, which ctest reports as a skip
// (SKIP_RETURN_CODE), after saying why on stdout.
#include "gpu/gpu_presence.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

#include "common/subprocess.h"

namespace ptxbench {

const nlohmann::json& DoctorReport() {
  static const nlohmann::json report = [] {
    const char* bin = std::getenv("PTXBENCH_BIN");
    if (!bin) return nlohmann::json::object();
    CommandResult r = RunCommand({bin, "doctor", "--json"}, std::chrono::seconds(120));
    auto j = nlohmann::json::parse(r.output, nullptr, false);
    return j.is_discarded() ? nlohmann::json::object() : j;
  }();
  return report;
}

}  // namespace ptxbench

int main(int argc, char** argv) {
  const auto& report = ptxbench::DoctorReport();
  if (!report.contains("gpu") || !report["gpu"].value("found", false)) {
    std::string why = report.contains("gpu") ? report["gpu"].value("reason", "unknown")
                                             : "ptxbench doctor did not answer";
    std::cout << "SKIPPED: no GPU (" << why << ")\n";
    return 77;
  }
  std::cout << "GPU: " << report["gpu"].value("name", "") << "\n";
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

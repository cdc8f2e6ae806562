// For GPU tests: what `ptxbench doctor` found, read once.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ptxbench {

// The doctor's report (`ptxbench doctor --json`), run in a child so this process stays
// CUDA-free until a test chooses otherwise.
const nlohmann::json& DoctorReport();

}  // namespace ptxbench

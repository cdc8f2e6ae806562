// Parent side of the child processes: start one with a spec, supervise it under a deadline,
// collect its channel messages and the tail of its log.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/subprocess.h"

namespace ptxbench {

struct ChildOutcome {
  ExitInfo exit;
  std::vector<nlohmann::json> messages;
  std::vector<std::string> garbage;  // channel lines that were not harness messages
  std::string log_tail;              // the child's stdout/stderr (the candidate's printf too)
  std::string log_path;

  // The first (or last) message with this event name.
  const nlohmann::json* First(const std::string& event) const;
  const nlohmann::json* Last(const std::string& event) const;
  std::vector<const nlohmann::json*> All(const std::string& event) const;
};

struct ChildRequest {
  nlohmann::json spec;   // what the child does (run/child_main.h)
  std::string work_dir;  // where the spec and the log are written
  std::string name;      // "reference", "candidate", "memcheck": names the files
  std::chrono::seconds timeout{60};
  std::vector<std::string> wrapper;  // a program to run the child under (compute-sanitizer …)
  std::string executable;            // the ptxbench binary; empty: this one
};

ChildOutcome RunChild(const ChildRequest& request);

}  // namespace ptxbench

// A failed turn chosen for repair, as `ptxbench fixit mine` writes it to the manifest and
// every later stage reads it. The manifest carries the exact conversation the failure is
// shown in (system, task, the failed kernel as the assistant's reply, its feedback as the
// user's): the repair teacher is seeded with it, the reasoning teacher reads it, and the SFT
// row shows it, byte for byte (its sha256 is checked at every stage).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/chat.h"

namespace ptxbench {

struct Failure {
  std::string id;   // the store-wide evaluation id: "<run>/<task>-<k>/turn<N>"
  std::string key;  // "fix-" + 12 hex digits of id's sha256: file names of its repair
  std::string run_id, run_dir, trajectory_id, model, task, workload, arch, pack;
  int turn = 0;
  std::string outcome, status, reason;
  std::string kernel_sha256;         // of the normalized source (NormalizeSource)
  std::vector<ChatMessage> context;  // system, task, failed kernel (assistant), feedback (user)
  std::string context_sha256;        // ContextSha256(context)
};

nlohmann::json ToJson(const Failure& f);
Failure FailureFromJson(const nlohmann::json& j);  // throws InputError naming the field

// The manifest file: {"schema": "ptxbench.fixit.manifest/1", "settings": ..., "failures": [...]}.
struct Manifest {
  nlohmann::json settings = nlohmann::json::object();  // how it was mined, for the card
  std::vector<Failure> failures;
};
nlohmann::json ToJson(const Manifest& m);
Manifest ReadManifest(const std::string& path);  // throws InputError; checks context hashes

// Source with comments removed and every run of whitespace made one space: two kernels
// that differ only in comments, indentation or blank lines normalize to the same text.
std::string NormalizeSource(std::string_view source);

// sha256 over the roles and contents, each length-prefixed (no two contexts collide by
// moving text between messages).
std::string ContextSha256(const std::vector<ChatMessage>& messages);

// The assistant message that shows a kernel: the one form used in every stage.
std::string FencedKernel(const std::string& source);

}  // namespace ptxbench

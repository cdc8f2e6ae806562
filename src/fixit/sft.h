// SFT rows in chat JSONL, their train/validation split and the dataset card: what
// `ptxbench fixit export` and `ptxbench kernelgen export` write.
//
// A row (one JSON line): {"id", "messages": [{"role", "content", "train"}...], "metadata"}.
// `train` is the per-message training flag: true on the last message only (the reasoning in
// <think>…</think> and the kernel), so the loss never falls on the system, task, failed kernel
// or feedback. --format prompt-completion writes {"id", "prompt": [...], "completion": [last],
// "metadata"} instead, the layout TRL's SFTTrainer trains on the completion only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/chat.h"

namespace ptxbench {

struct SftMessage {
  std::string role, content;
  bool train = false;
};

struct SftRow {
  std::string id;  // unique and stable: the evaluation ids it comes from
  std::string task;
  std::vector<SftMessage> messages;
  nlohmann::json metadata = nlohmann::json::object();  // provenance: evaluation ids, teachers
  std::string split;                                   // "train" or "validation"
  size_t Characters() const;
};

// The assistant message that ends a row: the reasoning in <think>…</think>, then the kernel.
std::string ThinkThenKernel(const std::string& reasoning, const std::string& kernel);

struct ExportOptions {
  std::string out_dir;
  std::string format = "messages";  // or "prompt-completion"
  int max_tokens = 32768;           // estimated: characters / chars_per_token, rounded up
  double chars_per_token = 4.0;
  double validation_fraction = 0.1;
  std::string split_seed = "ptxbench";
};

struct ExportSummary {
  int train = 0, validation = 0;
  std::map<std::string, int> dropped;  // why → rows
  nlohmann::json card;
};

// Splits per task, deterministically: the task's rows ordered by sha256(seed + id), the first
// round(n · fraction) to validation (at least one where a task has two rows or more and the
// fraction is positive; never all of a task's rows).
void SplitByTask(std::vector<SftRow>* rows, double validation_fraction, const std::string& seed);

// Applies the token cap, splits, writes train.jsonl, validation.jsonl, card.json and card.md
// into out_dir. `card` holds what the caller knows (kind, settings, provenance); counts by task,
// split, error type, turn and teacher are added from the rows' metadata ("outcome", "turn",
// "teachers").
ExportSummary WriteSftExport(std::vector<SftRow> rows, const ExportOptions& options,
                             nlohmann::json card);

nlohmann::json RowJson(const SftRow& row, const std::string& format);

}  // namespace ptxbench

#include "fixit/sft.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/files.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "fixit/failure.h"

namespace ptxbench {

using nlohmann::json;

size_t SftRow::Characters() const {
  size_t n = 0;
  for (const SftMessage& m : messages) n += m.content.size();
  return n;
}

std::string ThinkThenKernel(const std::string& reasoning, const std::string& kernel) {
  return "<think>\n" + Trim(reasoning) + "\n</think>\n\n" + FencedKernel(kernel);
}

json RowJson(const SftRow& r, const std::string& format) {
  auto message = [](const SftMessage& m, bool with_flag) {
    json j = {{"role", m.role}, {"content", m.content}};
    if (with_flag) j["train"] = m.train;
    return j;
  };
  json j = {{"id", r.id}};
  if (format == "prompt-completion") {
    json prompt = json::array();
    for (size_t k = 0; k + 1 < r.messages.size(); ++k)
      prompt.push_back(message(r.messages[k], false));
    j["prompt"] = prompt;
    j["completion"] = json::array({message(r.messages.back(), false)});
  } else {
    json messages = json::array();
    for (const SftMessage& m : r.messages) messages.push_back(message(m, true));
    j["messages"] = messages;
  }
  j["metadata"] = r.metadata;
  j["metadata"]["split"] = r.split;
  return j;
}

void SplitByTask(std::vector<SftRow>* rows, double fraction, const std::string& seed) {
  std::map<std::string, std::vector<SftRow*>> by_task;
  for (SftRow& r : *rows) by_task[r.task].push_back(&r);
  for (auto& [task, list] : by_task) {
    std::vector<std::pair<std::string, SftRow*>> order;
    for (SftRow* r : list) order.push_back({Sha256Hex(seed + "\n" + r->id), r});
    std::sort(order.begin(), order.end());
    size_t n = order.size();
    size_t v = static_cast<size_t>(std::llround(static_cast<double>(n) * fraction));
    if (fraction > 0 && n >= 2) v = std::max<size_t>(v, 1);
    if (v >= n) v = n > 0 ? n - 1 : 0;
    for (size_t k = 0; k < n; ++k) order[k].second->split = k < v ? "validation" : "train";
  }
}

namespace {

void Count(json* counts, const std::string& key) { (*counts)[key] = counts->value(key, 0) + 1; }

std::string CardMarkdown(const json& card) {
  std::string md = "# " + card.value("title", std::string("ptxbench dataset")) + "\n\n";
  md += card.value("description", std::string()) + "\n\n";
  md += "Rows: " + std::to_string(card["rows"]["train"].get<int>()) + " train, " +
        std::to_string(card["rows"]["validation"].get<int>()) + " validation.\n";
  auto table = [&](const char* title, const json& counts) {
    md += "\n## " + std::string(title) + "\n\n| value | train | validation |\n|---|---|---|\n";
    for (auto it = counts.begin(); it != counts.end(); ++it)
      md += "| " + it.key() + " | " + std::to_string(it.value().value("train", 0)) + " | " +
            std::to_string(it.value().value("validation", 0)) + " |\n";
  };
  // value(), never operator[]: on a const json a missing key is undefined behaviour (a card
  // made without provenance crashed here under ctest).
  const json counts = card.value("counts", json::object());
  for (const char* k : {"by_task", "by_outcome", "by_turn", "by_teacher"})
    if (counts.contains(k) && !counts[k].empty()) table(k, counts[k]);
  const json dropped = card.value("dropped", json::object());
  if (!dropped.empty()) {
    md += "\n## Dropped\n\n";
    for (auto it = dropped.begin(); it != dropped.end(); ++it)
      md += "- " + it.key() + ": " + std::to_string(it.value().get<int>()) + "\n";
  }
  md += "\n## Settings\n\n```json\n" + card.value("settings", json::object()).dump(2) + "\n```\n";
  md +=
      "\n## Provenance\n\n```json\n" + card.value("provenance", json::object()).dump(2) + "\n```\n";
  return md;
}

}  // namespace

ExportSummary WriteSftExport(std::vector<SftRow> rows, const ExportOptions& o, json card) {
  if (o.format != "messages" && o.format != "prompt-completion")
    throw UsageError("unknown --format '" + o.format + "' (messages or prompt-completion)");
  if (o.validation_fraction < 0 || o.validation_fraction >= 1)
    throw UsageError("--validation-fraction must be in [0, 1)");
  if (o.max_tokens < 1 || o.chars_per_token <= 0)
    throw UsageError("--max-tokens and --chars-per-token must be positive");
  ExportSummary s;
  std::vector<SftRow> kept;
  for (SftRow& r : rows) {
    double tokens = std::ceil(static_cast<double>(r.Characters()) / o.chars_per_token);
    if (tokens > o.max_tokens) {
      ++s.dropped["over the token cap (" + std::to_string(o.max_tokens) + ", estimated)"];
      continue;
    }
    r.metadata["estimated_tokens"] = static_cast<int64_t>(tokens);
    kept.push_back(std::move(r));
  }
  SplitByTask(&kept, o.validation_fraction, o.split_seed);
  MakeDirs(o.out_dir);
  std::string train, validation;
  json counts = {{"by_task", json::object()},
                 {"by_outcome", json::object()},
                 {"by_turn", json::object()},
                 {"by_teacher", json::object()}};
  for (const SftRow& r : kept) {
    std::string line = RowJson(r, o.format).dump() + "\n";
    (r.split == "validation" ? validation : train) += line;
    (r.split == "validation" ? s.validation : s.train) += 1;
    auto add = [&](const char* table, const std::string& value) {
      json& cell = counts[table][value.empty() ? "-" : value];
      if (cell.is_null()) cell = json::object();
      Count(&cell, r.split);
    };
    add("by_task", r.task);
    add("by_outcome", r.metadata.value("outcome", ""));
    if (r.metadata.contains("turn") && r.metadata["turn"].is_number())
      add("by_turn", std::to_string(r.metadata["turn"].get<int>()));
    const json teachers = r.metadata.value("teachers", json::object());
    for (const auto& [role, model] : teachers.items())
      add("by_teacher", role + ": " + (model.is_string() ? model.get<std::string>() : "?"));
  }
  WriteFileAtomic(o.out_dir + "/train.jsonl", train);
  WriteFileAtomic(o.out_dir + "/validation.jsonl", validation);
  card["schema"] = "ptxbench.sft_card/1";
  card["rows"] = {{"train", s.train}, {"validation", s.validation}};
  card["counts"] = counts;
  json dropped = card.value("dropped", json::object());
  for (const auto& [why, n] : s.dropped) dropped[why] = dropped.value(why, 0) + n;
  card["dropped"] = dropped;
  json settings = card.value("settings", json::object());
  settings["export"] = {{"format", o.format},
                        {"max_tokens", o.max_tokens},
                        {"chars_per_token", o.chars_per_token},
                        {"validation_fraction", o.validation_fraction},
                        {"split", "per task, by sha256(split_seed + row id)"},
                        {"split_seed", o.split_seed},
                        {"training_flag", "messages[].train: true on the last message only"}};
  card["settings"] = settings;
  card["created_at"] = card.value("created_at", std::string());
  WriteFileAtomic(o.out_dir + "/card.json", card.dump(2) + "\n");
  WriteFileAtomic(o.out_dir + "/card.md", CardMarkdown(card));
  s.card = card;
  for (const auto& [why, n] : dropped.items()) s.dropped[why] = n.get<int>();
  return s;
}

}  // namespace ptxbench

#include "evaluate/evaluation_options.h"

#include <algorithm>
#include <cctype>

#include "common/error.h"
#include "common/strings.h"

namespace ptxbench {

using nlohmann::json;

namespace {

// "a, b or c": how a message lists the words an option takes.
std::string WordList(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

// A range's end as JSON: a whole number as an integer (3600, not 3600.0), for the schema and
// the refusal's words alike.
json BoundJson(double v) {
  if (v == static_cast<double>(static_cast<long long>(v))) return static_cast<long long>(v);
  return v;
}

std::string Bound(double v) { return BoundJson(v).dump(); }

// Throws InputError, naming the option and what it takes, unless `v` fits `row`.
void CheckValue(const EvaluationOptionRow& row, const json& v) {
  const std::string name = "options." + row.key;
  switch (row.kind) {
    case OptionKind::kInteger:
      if (!v.is_number_integer() || v.get<double>() < row.minimum || v.get<double>() > row.maximum)
        throw InputError(name + " must be an integer between " + Bound(row.minimum) + " and " +
                         Bound(row.maximum));
      return;
    case OptionKind::kNumber:
      if (!v.is_number() || v.get<double>() < row.minimum || v.get<double>() > row.maximum)
        throw InputError(name + " must be a number of seconds between " + Bound(row.minimum) +
                         " and " + Bound(row.maximum));
      return;
    case OptionKind::kBoolean:
      if (!v.is_boolean()) throw InputError(name + " must be true or false");
      return;
    case OptionKind::kWord:
      if (!v.is_string()) throw InputError(name + " must be " + WordList(row.words));
      if (std::find(row.words.begin(), row.words.end(), v.get<std::string>()) == row.words.end())
        throw InputError(name + " must be " + WordList(row.words) + ", not \"" +
                         ValidUtf8(Truncate(v.get<std::string>(), 64)) + "\"");
      return;
    case OptionKind::kSeed:
      if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
        throw InputError(name + " must be a non-negative integer");
      return;
  }
}

using Getter = std::function<json(const EvaluationOptions&)>;
using Setter = std::function<void(const json&, EvaluationOptions*)>;

EvaluationOptionRow Row(std::string key, std::string flag, OptionKind kind, std::string help,
                        Getter get, Setter set, double minimum = 0, double maximum = 0,
                        std::vector<std::string> words = {}) {
  return {std::move(key),   std::move(flag), kind,           minimum,       maximum,
          std::move(words), std::move(help), std::move(get), std::move(set)};
}

std::string BaselineHelp() {
  std::vector<std::string> others;
  for (const std::string& v : FlashInferVersions())
    if (v != kDefaultFlashInferVersion) others.push_back("flashinfer@" + v);
  return std::string(
             "Attention-forward baseline: flashinfer (FlashInfer's sm90 prefill, the "
             "paper's: release ") +
         kDefaultFlashInferVersion + ", the same as flashinfer@" + kDefaultFlashInferVersion +
         "), " + Join(others, ", ") + " (another release) or cudnn (cuDNN's fused SDPA); the " +
         "backward's is always cuDNN, GEMM's cuBLASLt";
}

std::vector<EvaluationOptionRow> MakeTable() {
  using O = EvaluationOptions;
  auto integer = [](std::string key, std::string flag, double lo, double hi, std::string help,
                    int O::*member) {
    return Row(
        std::move(key), std::move(flag), OptionKind::kInteger, std::move(help),
        [member](const O& o) { return json(o.*member); },
        [member](const json& v, O* o) { o->*member = static_cast<int>(v.get<int64_t>()); }, lo, hi);
  };
  auto boolean = [](std::string key, std::string flag, std::string help, bool O::*member) {
    return Row(
        std::move(key), std::move(flag), OptionKind::kBoolean, std::move(help),
        [member](const O& o) { return json(o.*member); },
        [member](const json& v, O* o) { o->*member = v.get<bool>(); });
  };
  return {
      integer("trials", "--trials", 1, 100, "Correctness trials, each on fresh inputs", &O::trials),
      Row(
          "seed", "--seed", OptionKind::kSeed,
          "First seed (trial i uses seed+i), or `random` for a fresh one",
          [](const O& o) { return json(o.seed); },
          [](const json& v, O* o) { o->seed = v.get<uint64_t>(); }),
      Row(
          "tolerance", "--tolerance", OptionKind::kWord,
          "Tolerance rule: published (the upstream rule) or allclose (default: the task's)",
          [](const O& o) { return o.tolerance_rule ? json(ToString(*o.tolerance_rule)) : json(); },
          [](const json& v, O* o) { o->tolerance_rule = ParseToleranceRule(v.get<std::string>()); },
          0, 0, {"published", "allclose"}),
      Row(
          "sanitize", "--sanitize", OptionKind::kWord, "Memory check: always, on-failure or never",
          [](const O& o) { return json(ToString(o.sanitize)); },
          [](const json& v, O* o) { o->sanitize = ParseSanitizeMode(v.get<std::string>()); }, 0, 0,
          {"always", "on-failure", "never"}),
      Row(
          "timeout", "--timeout", OptionKind::kInteger,
          "Seconds for the candidate's run (all trials)",
          [](const O& o) { return json(o.timeout.count()); },
          [](const json& v, O* o) { o->timeout = std::chrono::seconds(v.get<int64_t>()); }, 1,
          3600),
      boolean("verify", "--no-verify", "Skip the instruction layer (static and dynamic)",
              &O::verify),
      boolean("timing", "--no-timing", "Skip the timing layer", &O::timing),
      integer("warmup", "--warmup", 0, 10000, "Timing: untimed calls before the timed ones",
              &O::warmup),
      integer("iterations", "--iterations", 1, 100000, "Timing: timed calls (median, p10, p90)",
              &O::iterations),
      Row(
          "timing_budget", "--timing-budget", OptionKind::kNumber,
          "Timing: seconds of candidate calls; a slow kernel gets fewer calls (at least 2 + 10), "
          "0 for no limit",
          [](const O& o) { return json(o.timing_budget_s); },
          [](const json& v, O* o) { o->timing_budget_s = v.get<double>(); }, 0, 3600),
      Row(
          "baseline", "--baseline", OptionKind::kWord, BaselineHelp(),
          // The canonical word, whatever was given: run.json and the records then name the
          // FlashInfer release, so a run is not resumed against another one.
          [](const O& o) { return json(ToString(o.attention_baseline)); },
          [](const json& v, O* o) {
            o->attention_baseline = *ParseAttentionBaseline(v.get<std::string>());
          },
          0, 0, AttentionBaselineWords()),
  };
}

}  // namespace

const std::vector<EvaluationOptionRow>& EvaluationOptionTable() {
  static const std::vector<EvaluationOptionRow> rows = MakeTable();
  return rows;
}

const EvaluationOptionRow& EvaluationOptionRowOf(const std::string& key) {
  for (const EvaluationOptionRow& row : EvaluationOptionTable())
    if (row.key == key) return row;
  throw InternalError("no evaluation option \"" + key + "\" in the table");
}

const std::set<std::string>& EvaluationOptionKeys() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> out;
    for (const EvaluationOptionRow& row : EvaluationOptionTable()) out.insert(row.key);
    return out;
  }();
  return keys;
}

void ApplyEvaluationOptionsJson(const json& o, EvaluationOptions* out) {
  if (!o.is_object()) throw InputError("\"options\" must be an object");
  for (const auto& [k, v] : o.items())
    if (!EvaluationOptionKeys().count(k))
      throw InputError("unknown option \"" + ValidUtf8(Truncate(k, 64)) + "\" (known: " +
                       Join({EvaluationOptionKeys().begin(), EvaluationOptionKeys().end()}) + ")");
  // Every value is checked before any is set: a refused request changes nothing.
  for (const EvaluationOptionRow& row : EvaluationOptionTable())
    if (o.contains(row.key)) CheckValue(row, o.at(row.key));
  for (const EvaluationOptionRow& row : EvaluationOptionTable())
    if (o.contains(row.key)) row.set(o.at(row.key), out);
}

json EvaluationOptionsJson(const EvaluationOptions& o, const std::vector<std::string>& keys) {
  json j = json::object();
  for (const std::string& k : keys) {
    if (!EvaluationOptionKeys().count(k))
      throw InternalError("no evaluation option \"" + k + "\" in the JSON form");
    json value = EvaluationOptionRowOf(k).get(o);
    if (!value.is_null()) j[k] = std::move(value);
  }
  return j;
}

json EvaluationOptionsSchema() {
  static const char* kTypes[] = {"integer", "number", "boolean", "string", "integer"};
  json properties = json::object();
  const EvaluationOptions defaults;
  for (const EvaluationOptionRow& row : EvaluationOptionTable()) {
    json p = {{"type", kTypes[static_cast<int>(row.kind)]}};
    if (row.kind == OptionKind::kInteger || row.kind == OptionKind::kNumber) {
      p["minimum"] = BoundJson(row.minimum);
      p["maximum"] = BoundJson(row.maximum);
    }
    if (row.kind == OptionKind::kSeed) p["minimum"] = 0;
    if (row.kind == OptionKind::kWord) p["enum"] = row.words;
    // A boolean's flag turns it off: its description says what false does.
    std::string description = row.help;
    if (row.kind == OptionKind::kBoolean && !description.empty()) {
      description[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(description[0])));
      description = "false: " + description;
    }
    p["description"] = description;
    if (json d = row.get(defaults); !d.is_null()) p["default"] = d;
    properties[row.key] = p;
  }
  return {{"type", "object"}, {"additionalProperties", false}, {"properties", properties}};
}

}  // namespace ptxbench

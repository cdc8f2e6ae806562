#include "evaluate/evaluation_options.h"

#include "common/error.h"
#include "common/strings.h"

namespace ptxbench {

using nlohmann::json;

namespace {

int64_t IntOption(const json& o, const char* key, int64_t lo, int64_t hi) {
  const json& v = o.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    throw InputError(std::string("options.") + key + " must be an integer between " +
                     std::to_string(lo) + " and " + std::to_string(hi));
  return v.get<int64_t>();
}

bool BoolOption(const json& o, const char* key) {
  const json& v = o.at(key);
  if (!v.is_boolean()) throw InputError(std::string("options.") + key + " must be true or false");
  return v.get<bool>();
}

// The options whose values are words, parsed by their own Parse* (which throw UsageError).
void ApplyWordOptions(const json& o, EvaluationOptions* out) {
  try {
    if (o.contains("sanitize")) {
      if (!o["sanitize"].is_string())
        throw InputError("options.sanitize must be always, on-failure or never");
      out->sanitize = ParseSanitizeMode(o["sanitize"].get<std::string>());
    }
    if (o.contains("tolerance")) {
      if (!o["tolerance"].is_string())
        throw InputError("options.tolerance must be published or allclose");
      out->tolerance_rule = ParseToleranceRule(o["tolerance"].get<std::string>());
    }
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInput) throw;
    throw InputError(std::string("options: ") + e.what());
  }
  if (o.contains("baseline")) {
    const json& v = o["baseline"];
    std::optional<AttentionBaseline> b =
        v.is_string() ? ParseAttentionBaseline(v.get<std::string>()) : std::nullopt;
    if (!b) throw InputError("options.baseline must be flashinfer or cudnn");
    out->attention_baseline = *b;
  }
}

}  // namespace

const std::set<std::string>& EvaluationOptionKeys() {
  static const std::set<std::string> keys = {"trials",     "seed",          "sanitize", "timeout",
                                             "timing",     "timing_budget", "verify",   "warmup",
                                             "iterations", "tolerance",     "baseline"};
  return keys;
}

void ApplyEvaluationOptionsJson(const json& o, EvaluationOptions* out) {
  if (!o.is_object()) throw InputError("\"options\" must be an object");
  for (const auto& [k, v] : o.items())
    if (!EvaluationOptionKeys().count(k))
      throw InputError("unknown option \"" + ValidUtf8(Truncate(k, 64)) + "\" (known: " +
                       Join({EvaluationOptionKeys().begin(), EvaluationOptionKeys().end()}) + ")");
  if (o.contains("trials")) out->trials = static_cast<int>(IntOption(o, "trials", 1, 100));
  if (o.contains("seed")) {
    const json& v = o.at("seed");
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      throw InputError("options.seed must be a non-negative integer");
    out->seed = v.get<uint64_t>();
  }
  ApplyWordOptions(o, out);
  if (o.contains("timeout")) out->timeout = std::chrono::seconds(IntOption(o, "timeout", 1, 3600));
  if (o.contains("timing")) out->timing = BoolOption(o, "timing");
  if (o.contains("verify")) out->verify = BoolOption(o, "verify");
  if (o.contains("warmup")) out->warmup = static_cast<int>(IntOption(o, "warmup", 0, 10000));
  if (o.contains("iterations"))
    out->iterations = static_cast<int>(IntOption(o, "iterations", 1, 100000));
  if (o.contains("timing_budget")) {
    const json& v = o["timing_budget"];
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 3600)
      throw InputError("options.timing_budget must be a number of seconds between 0 and 3600");
    out->timing_budget_s = v.get<double>();
  }
}

json EvaluationOptionsJson(const EvaluationOptions& o, const std::vector<std::string>& keys) {
  json j = json::object();
  for (const std::string& k : keys) {
    if (k == "trials") j[k] = o.trials;
    if (k == "seed") j[k] = o.seed;
    if (k == "sanitize") j[k] = ToString(o.sanitize);
    if (k == "timeout") j[k] = o.timeout.count();
    if (k == "timing") j[k] = o.timing;
    if (k == "timing_budget") j[k] = o.timing_budget_s;
    if (k == "verify") j[k] = o.verify;
    if (k == "warmup") j[k] = o.warmup;
    if (k == "iterations") j[k] = o.iterations;
    if (k == "tolerance" && o.tolerance_rule) j[k] = ToString(*o.tolerance_rule);
    if (k == "baseline") j[k] = ToString(o.attention_baseline);
    if (!EvaluationOptionKeys().count(k))
      throw InternalError("no evaluation option \"" + k + "\" in the JSON form");
  }
  return j;
}

}  // namespace ptxbench

#include "serve/job_request.h"

#include <set>

#include "compile/nvcc.h"
#include "common/error.h"
#include "common/source_policy.h"
#include "common/strings.h"
#include "run/memcheck.h"

namespace ptxbench {

using nlohmann::json;

namespace {

const std::set<std::string> kTopFields = {"task", "workload", "arch", "source", "options", "tag"};
// A tag is the client's note of which turn of which trajectory a job is (agent/loop.h
// EvaluationTag); the service keeps it with the job and reports group by it. Strings and
// integers only, and small: it is metadata, not a second source.
constexpr size_t kMaxTagBytes = 4096;
const std::set<std::string> kOptions = {"trials",     "seed",          "sanitize", "timeout",
                                        "timing",     "timing_budget", "verify",   "warmup",
                                        "iterations", "tolerance",     "baseline"};

std::string Known(const std::set<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

const json& Need(const json& j, const char* key, json::value_t type, const char* what) {
  auto it = j.find(key);
  if (it == j.end()) throw InputError(std::string("\"") + key + "\" is required (" + what + ")");
  if (it->type() != type) throw InputError(std::string("\"") + key + "\" must be " + what);
  return *it;
}

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

// Applies the options to `req`, checking each (also at the door, on a scratch request).
void ApplyOptions(const json& o, EvalRequest* req) {
  if (!o.is_object()) throw InputError("\"options\" must be an object");
  for (const auto& [k, v] : o.items())
    if (!kOptions.count(k))
      throw InputError("unknown option \"" + ValidUtf8(Truncate(k, 64)) +
                       "\" (known: " + Known(kOptions) + ")");
  if (o.contains("trials")) req->trials = static_cast<int>(IntOption(o, "trials", 1, 100));
  if (o.contains("seed")) {
    const json& v = o.at("seed");
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      throw InputError("options.seed must be a non-negative integer");
    req->seed = v.get<uint64_t>();
  }
  try {
    if (o.contains("sanitize")) {
      if (!o["sanitize"].is_string())
        throw InputError("options.sanitize must be always, on-failure or never");
      req->sanitize = ParseSanitizeMode(o["sanitize"].get<std::string>());
    }
    if (o.contains("tolerance")) {
      if (!o["tolerance"].is_string())
        throw InputError("options.tolerance must be published or allclose");
      req->tolerance_rule = ParseToleranceRule(o["tolerance"].get<std::string>());
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
    req->attention_baseline = *b;
  }
  if (o.contains("timeout")) req->timeout = std::chrono::seconds(IntOption(o, "timeout", 1, 3600));
  if (o.contains("timing")) req->timing = BoolOption(o, "timing");
  if (o.contains("verify")) req->verify = BoolOption(o, "verify");
  if (o.contains("warmup")) req->warmup = static_cast<int>(IntOption(o, "warmup", 0, 10000));
  if (o.contains("iterations"))
    req->iterations = static_cast<int>(IntOption(o, "iterations", 1, 100000));
  if (o.contains("timing_budget")) {
    const json& v = o["timing_budget"];
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 3600)
      throw InputError("options.timing_budget must be a number of seconds between 0 and 3600");
    req->timing_budget_s = v.get<double>();
  }
}

// The definition and workload a request names (InputError naming them otherwise).
std::pair<const Definition*, const Workload*> Resolve(const json& r, const Catalog& catalog) {
  const std::string& task =
      Need(r, "task", json::value_t::string, "a task name").get_ref<const std::string&>();
  // Refused before any lookup: the did-you-mean search costs time in the name's length.
  if (task.size() > kMaxRequestNameBytes)
    throw InputError("\"task\" is over " + std::to_string(kMaxRequestNameBytes) +
                     " bytes (no task has such a name)");
  if (r.contains("workload") && r["workload"].is_string() &&
      r["workload"].get_ref<const std::string&>().size() > kMaxRequestNameBytes)
    throw InputError("\"workload\" is over " + std::to_string(kMaxRequestNameBytes) + " bytes");
  try {
    const Definition& d = catalog.Find(task);
    std::string wl =
        r.contains("workload") && r["workload"].is_string() ? r["workload"].get<std::string>() : "";
    if (r.contains("workload") && !r["workload"].is_string() && !r["workload"].is_null())
      throw InputError("\"workload\" must be a string (an id or axis values such as M=8192)");
    return {&d, wl.empty() ? &d.DefaultWorkload() : &d.FindWorkload(wl)};
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInput) throw;
    throw InputError(e.what());
  }
}

}  // namespace

json NormalizeJobRequest(const json& body, const Catalog& catalog) {
  if (!body.is_object()) throw InputError("the body must be a JSON object");
  for (const auto& [k, v] : body.items())
    if (!kTopFields.count(k))
      throw InputError("unknown field \"" + ValidUtf8(Truncate(k, 64)) +
                       "\" (known: " + Known(kTopFields) + ")");
  const std::string& source =
      Need(body, "source", json::value_t::string, "the kernel's CUDA source as a string")
          .get_ref<const std::string&>();
  // The one source policy of eval, inspect and submit; the size against the server's own
  // limit is the server's to check (413), before this.
  if (auto problem = SourceFileProblem(source, source.size())) throw InputError(*problem);
  auto [def, wl] = Resolve(body, catalog);
  std::string arch = "sm_90a";
  if (body.contains("arch")) {
    if (!body["arch"].is_string()) throw InputError("\"arch\" must be a string such as sm_90a");
    arch = body["arch"].get<std::string>();
    if (arch.size() > 64) throw InputError("\"arch\" is over 64 bytes (sm_90a or sm_100a)");
  }
  try {
    RequireSupportedArch(arch);
  } catch (const Error& e) {
    throw InputError(std::string("arch: ") + e.what());
  }
  json options = body.value("options", json::object());
  EvalRequest scratch;
  ApplyOptions(options, &scratch);
  json normalized = {{"task", def->name},
                     {"workload", wl->id},
                     {"arch", arch},
                     {"source", source},
                     {"options", options}};
  if (body.contains("tag") && !body["tag"].is_null()) {
    const json& tag = body["tag"];
    if (!tag.is_object()) throw InputError("\"tag\" must be an object of strings and integers");
    for (const auto& [k, v] : tag.items())
      if (!v.is_string() && !v.is_number_integer())
        throw InputError("tag." + ValidUtf8(Truncate(k, 64)) + " must be a string or an integer");
    if (tag.dump().size() > kMaxTagBytes)
      throw InputError("\"tag\" is over " + std::to_string(kMaxTagBytes) + " bytes");
    normalized["tag"] = tag;
  }
  return normalized;
}

EvalRequest EvalRequestForJob(const json& request, const Catalog& catalog,
                              const std::string& kernel_path) {
  EvalRequest req;
  auto [def, wl] = Resolve(request, catalog);
  req.definition = def;
  req.workload = wl;
  req.kernel_path = kernel_path;
  req.arch = request.value("arch", "sm_90a");
  RequireSupportedArch(req.arch);
  ApplyOptions(request.value("options", json::object()), &req);
  return req;
}

}  // namespace ptxbench

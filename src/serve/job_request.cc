#include "serve/job_request.h"

#include <filesystem>
#include <regex>
#include <set>

#include "common/error.h"
#include "common/source_policy.h"
#include "common/strings.h"
#include "compile/nvcc.h"

namespace ptxbench {

using nlohmann::json;

namespace {

const std::set<std::string> kTopFields = {"task", "workload", "arch", "source", "options", "tag"};
// A tag is the client's note of which turn of which trajectory a job is (agent/loop.h
// EvaluationTag); the service keeps it with the job and reports group by it. Strings and
// integers only, and small: it is metadata, not a second source.
constexpr size_t kMaxTagBytes = 4096;

const json& Need(const json& j, const char* key, json::value_t type, const char* what) {
  auto it = j.find(key);
  if (it == j.end()) throw InputError(std::string("\"") + key + "\" is required (" + what + ")");
  if (it->type() != type) throw InputError(std::string("\"") + key + "\" must be " + what);
  return *it;
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
    throw InputError(WithoutHostPaths(e.what()));
  }
}

}  // namespace

// A catalog's message for a client: absolute paths (where the service keeps its task
// definitions) become their file names, so no 4xx body shows the host's layout.
std::string WithoutHostPaths(const std::string& message) {
  static const std::regex kAbsolutePath(R"((^|[\s(\[:'"])(/[^\s)\]'"]+))");
  std::string out;
  std::sregex_iterator it(message.begin(), message.end(), kAbsolutePath), end;
  size_t at = 0;
  for (; it != end; ++it) {
    const std::smatch& m = *it;
    const size_t path_at = static_cast<size_t>(m.position(2));
    out += message.substr(at, path_at - at);
    out += std::filesystem::path(m.str(2)).filename().string();
    at = path_at + static_cast<size_t>(m.length(2));
  }
  return out + message.substr(at);
}

json NormalizeJobRequest(const json& body, const Catalog& catalog) {
  if (!body.is_object()) throw InputError("the body must be a JSON object");
  for (const auto& [k, v] : body.items())
    if (!kTopFields.count(k))
      throw InputError("unknown field \"" + ValidUtf8(Truncate(k, 64)) +
                       "\" (known: " + Join({kTopFields.begin(), kTopFields.end()}) + ")");
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
  EvaluationOptions checked;
  ApplyEvaluationOptionsJson(options, &checked);
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
  ApplyEvaluationOptionsJson(request.value("options", json::object()), &req.options);
  return req;
}

}  // namespace ptxbench

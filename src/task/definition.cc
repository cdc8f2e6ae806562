#include "task/definition.h"

#include <algorithm>
#include <filesystem>

#include "common/error.h"
#include "common/files.h"
#include "common/strings.h"
#include "task/family.h"
#include "task/flashinfer_set.h"

namespace ptxbench {

namespace fs = std::filesystem;
using nlohmann::json;

std::string ToString(ToleranceRule rule) {
  return rule == ToleranceRule::kPublished ? "published" : "allclose";
}

ToleranceRule ParseToleranceRule(const std::string& text) {
  if (text == "published") return ToleranceRule::kPublished;
  if (text == "allclose") return ToleranceRule::kAllclose;
  throw UsageError("unknown tolerance rule '" + text + "' (expected published or allclose)");
}

Axes Definition::FullAxes(const Workload& w) const {
  Axes all = constant_axes;
  for (const auto& [k, v] : w.axes) all[k] = v;
  return all;
}

double Definition::Flops(const Workload& w) const {
  return EvaluateFormula(flops_formula, FullAxes(w));
}

const Workload& Definition::DefaultWorkload() const {
  for (const auto& w : workloads)
    if (w.headline) return w;
  return *std::max_element(
      workloads.begin(), workloads.end(),
      [&](const Workload& a, const Workload& b) { return Flops(a) < Flops(b); });
}

const Workload& Definition::FindWorkload(const std::string& spec) const {
  for (const auto& w : workloads)
    if (w.id == spec) return w;
  for (const auto& r : refused_workloads)
    if (r.id == spec)
      throw UsageError("workload " + spec + " of task " + name +
                       " is not judged here: " + r.reason);
  Axes wanted;
  std::string text = spec;
  std::replace(text.begin(), text.end(), ';', ',');
  for (const auto& part : Split(text, ',')) {
    std::string p = Trim(part);
    if (p.empty()) continue;
    size_t eq = p.find('=');
    if (eq == std::string::npos)
      throw UsageError("malformed workload '" + spec +
                       "': expected AXIS=VALUE (e.g. M=8192) or an id");
    std::string name = Trim(p.substr(0, eq));
    std::string value = Trim(p.substr(eq + 1));
    long long v;
    if (!ParseInt64(value, &v) || v <= 0)
      throw UsageError("malformed value for axis " + name + ": '" + value +
                       "' (expected a positive integer)");
    bool known = constant_axes.count(name) > 0 ||
                 std::find(variable_axes.begin(), variable_axes.end(), name) != variable_axes.end();
    if (!known) throw UsageError("task " + this->name + " has no axis '" + name + "'");
    wanted[name] = v;
  }
  if (wanted.empty()) throw UsageError("empty workload specification");
  const Workload* match = nullptr;
  for (const auto& w : workloads) {
    Axes full = FullAxes(w);
    bool ok = std::all_of(wanted.begin(), wanted.end(),
                          [&](const auto& kv) { return full.at(kv.first) == kv.second; });
    if (ok) {
      if (match) throw UsageError("workload '" + spec + "' matches several workloads of " + name);
      match = &w;
    }
  }
  if (!match) {
    std::vector<std::string> defined;
    for (const auto& w : workloads)
      for (const auto& [k, v] : w.axes) defined.push_back(k + "=" + std::to_string(v));
    throw UsageError("task " + name + " defines no workload " + spec +
                     " (defined: " + Join(defined) + ")");
  }
  return *match;
}

json ToJson(const Definition& d, bool with_workloads) {
  json j = {{"name", d.name},
            {"family", d.family},
            {"description", d.description},
            {"constant_axes", d.constant_axes},
            {"variable_axes", d.variable_axes},
            {"tolerance",
             {{"rule", ToString(d.tolerance.rule)},
              {"atol", d.tolerance.atol},
              {"rtol", d.tolerance.rtol}}},
            {"flops", d.flops_formula},
            {"required_families", d.required_families},
            {"baseline", d.baseline}};
  if (d.flashinfer) {
    const FlashInferLink& f = *d.flashinfer;
    j["flashinfer_bench"] = {{"trace_set", f.trace_set},       {"file", f.file},
                             {"op_type", f.op_type},           {"axis_names", f.axis_names},
                             {"tensor_names", f.tensor_names}, {"scalar_inputs", f.scalar_inputs}};
    json refused = json::array();
    for (const auto& r : d.refused_workloads)
      refused.push_back({{"id", r.id}, {"reason", r.reason}});
    j["flashinfer_bench"]["refused_workloads"] = refused;
  }
  if (with_workloads) {
    j["workloads"] = json::array();
    for (const auto& w : d.workloads) {
      json wj = {{"id", w.id}, {"axes", w.axes}, {"flops", d.Flops(w)}};
      if (w.headline) wj["headline"] = true;
      j["workloads"].push_back(wj);
    }
  }
  return j;
}

namespace {

template <typename T>
T Get(const json& j, const char* key, const std::string& file) {
  if (!j.contains(key)) throw InputError(file + ": missing field \"" + key + "\"");
  try {
    return j.at(key).get<T>();
  } catch (const json::exception& e) {
    throw InputError(file + ": field \"" + key + "\": " + e.what());
  }
}

Definition LoadDefinition(const std::string& def_path, const std::string& workloads_path) {
  json j;
  try {
    j = json::parse(ReadFile(def_path));
  } catch (const json::parse_error& e) {
    throw InputError(def_path + ": not valid JSON: " + e.what());
  }
  Definition d;
  d.name = Get<std::string>(j, "name", def_path);
  d.family = Get<std::string>(j, "family", def_path);
  d.description = Get<std::string>(j, "description", def_path);
  d.constant_axes = Get<Axes>(j, "constant_axes", def_path);
  d.variable_axes = Get<std::vector<std::string>>(j, "variable_axes", def_path);
  json tol = Get<json>(j, "tolerance", def_path);
  d.tolerance.rule = ParseToleranceRule(Get<std::string>(tol, "rule", def_path));
  d.tolerance.atol = Get<double>(tol, "atol", def_path);
  d.tolerance.rtol = Get<double>(tol, "rtol", def_path);
  d.flops_formula = Get<std::string>(j, "flops", def_path);
  d.required_families =
      Get<std::map<std::string, std::vector<std::string>>>(j, "required_families", def_path);
  d.baseline = Get<std::string>(j, "baseline", def_path);
  if (fs::path(def_path).stem().string() != d.name)
    throw InputError(def_path + ": name \"" + d.name + "\" differs from the file name");
  const Family* family = FindFamily(d.family);
  if (!family) throw InputError(def_path + ": unknown family \"" + d.family + "\"");

  int line_no = 0;
  for (const auto& line : SplitLines(ReadFile(workloads_path))) {
    ++line_no;
    if (Trim(line).empty()) continue;
    std::string where = workloads_path + ":" + std::to_string(line_no);
    json w;
    try {
      w = json::parse(line);
    } catch (const json::parse_error& e) {
      throw InputError(where + ": not valid JSON: " + e.what());
    }
    Workload wl;
    wl.id = Get<std::string>(w, "id", where);
    wl.axes = Get<Axes>(w, "axes", where);
    wl.headline = w.value("headline", false);
    for (const auto& v : d.variable_axes)
      if (!wl.axes.count(v)) throw InputError(where + ": missing axis " + v);
    d.workloads.push_back(wl);
  }
  if (d.workloads.empty()) throw InputError(workloads_path + ": no workloads");
  // Every axis the family needs must be known, so a malformed file fails here, not in a child.
  for (const auto& axis : family->AxisNames()) {
    Axes full = d.FullAxes(d.workloads.front());
    if (!full.count(axis))
      throw InputError(def_path + ": family " + d.family + " needs axis " + axis);
  }
  d.Flops(d.workloads.front());  // validates the formula
  return d;
}

}  // namespace

std::string Catalog::DefaultDir() {
  if (const char* t = std::getenv("PTXBENCH_TASKS"); t && *t) return t;
  return std::string(PTXBENCH_SOURCE_DIR) + "/tasks";
}

Catalog Catalog::Load(const std::string& tasks_dir) {
  Catalog c;
  if (IsFlashInferTraceSet(tasks_dir)) {
    FlashInferTaskSet set = LoadFlashInferTaskSet(tasks_dir);
    c.definitions_ = std::move(set.definitions);
    c.left_out_ = std::move(set.left_out);
    c.flashinfer_set_ = true;
    return c;
  }
  fs::path defs = fs::path(tasks_dir) / "definitions";
  std::error_code ec;
  if (!fs::is_directory(defs, ec)) throw InputError(defs.string() + ": no task definitions folder");
  for (const auto& entry : fs::directory_iterator(defs)) {
    if (entry.path().extension() != ".json") continue;
    std::string stem = entry.path().stem().string();
    std::string workloads = (fs::path(tasks_dir) / "workloads" / (stem + ".jsonl")).string();
    c.definitions_.push_back(LoadDefinition(entry.path().string(), workloads));
  }
  std::sort(c.definitions_.begin(), c.definitions_.end(),
            [](const Definition& a, const Definition& b) { return a.name < b.name; });
  return c;
}

const Definition& Catalog::Find(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& d : definitions_) {
    if (d.name == name) return d;
    names.push_back(d.name);
  }
  for (const auto& l : left_out_)
    if (l.name == name)
      throw UsageError("task " + name + " (FlashInfer-Bench definition " + l.file +
                       ") is not judged here: " + l.reason);
  std::string msg = "unknown task '" + name + "'";
  if (auto s = DidYouMean(name, names)) msg += " (did you mean " + *s + "?)";
  msg += "; `ptxbench tasks` lists them";
  throw UsageError(msg);
}

std::optional<std::string> DidYouMean(const std::string& word,
                                      const std::vector<std::string>& candidates) {
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  std::optional<std::string> best;
  size_t best_d = std::max<size_t>(3, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    size_t d = distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace ptxbench

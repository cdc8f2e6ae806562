#include "report/flashinfer_bench.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

#include "common/error.h"
#include "common/json_fields.h"
#include "common/source_policy.h"
#include "common/strings.h"
#include "record/layers.h"
#include "record/record.h"
#include "screen/screen.h"
#include "task/abi.h"

namespace ptxbench {

using nlohmann::json;

namespace {

double MedianOr(const TimeDistribution& t) { return t.median.value_or(NAN); }

}  // namespace

std::string FlashInferStatus(const json& record) {
  return FlashInferStatusName(FromJson(record).status);
}

json FlashInferTrace(const json& json_record, const std::vector<std::string>& variable_axes,
                     const std::vector<std::string>& input_names,
                     const std::string& solution_name) {
  const EvaluationRecord record = FromJson(json_record);
  const std::string status = FlashInferStatusName(record.status);
  if (status.empty())
    throw InputError("a record with status " + ToString(record.status) +
                     " is no verdict on the solution: no trace");
  const TaskDetail task = TaskDetailOf(record);
  json axes = json::object();
  for (const std::string& a : variable_axes)
    if (!task.Axis(a).is_null()) axes[a] = task.Axis(a);
  json inputs = json::object();
  for (const std::string& n : input_names) inputs[n] = {{"type", "random"}};

  const ToolchainDetail toolchain = ToolchainDetailOf(record);
  json evaluation = {{"status", status},
                     {"environment",
                      {{"hardware", toolchain.gpu_name.empty() ? "unknown" : toolchain.gpu_name},
                       {"libs",
                        {{"ptxbench", record.ptxbench_version},
                         {"ptxbench_commit", record.ptxbench_commit},
                         {"nvcc", toolchain.nvcc}}}}},
                     {"timestamp", record.created_at},
                     {"log", record.message}};

  if (status == "PASSED" || status == "INCORRECT_NUMERICAL") {
    // The worst error over every trial and output, as their harness reports one pair.
    double max_abs = 0, max_rel = 0;
    for (const Trial& t : CorrectnessDetailOf(record).trials)
      for (const OutputCheck& o : t.outputs) {
        max_abs = std::max(max_abs, o.max_abs_error);
        max_rel = std::max(max_rel, o.max_rel_error);
      }
    evaluation["correctness"] = {{"max_relative_error", max_rel}, {"max_absolute_error", max_abs}};
  }
  const std::optional<double> speedup = record.Performance().speedup;
  if (status == "PASSED" && speedup) {
    const PerformanceDetail perf = PerformanceDetailOf(record);
    const double candidate = MedianOr(perf.candidate);
    // The baseline ran before and after the candidate; its latency is the mean of both medians.
    const double before = MedianOr(perf.baseline.before), after = MedianOr(perf.baseline.after);
    const double reference = std::isnan(after)    ? before
                             : std::isnan(before) ? after
                                                  : (before + after) / 2;
    if (std::isfinite(candidate) && std::isfinite(reference))
      evaluation["performance"] = {{"latency_ms", candidate * 1e3},
                                   {"reference_latency_ms", reference * 1e3},
                                   {"speedup_factor", *speedup}};
  }
  // A task read from a FlashInfer-Bench trace set: their definition name and their workload
  // (uuid, axes under their names, inputs as their file gives them), verbatim.
  if (task.flashinfer_workload.is_object())
    return {{"definition", task.flashinfer_definition},
            {"workload", task.flashinfer_workload},
            {"solution", solution_name},
            {"evaluation", evaluation}};
  return {{"definition", task.definition},
          {"workload", {{"uuid", task.workload_id}, {"axes", axes}, {"inputs", inputs}}},
          {"solution", solution_name},
          {"evaluation", evaluation}};
}

namespace {

// A solution's files by path, each path relative and inside the solution (no absolute path,
// no "..", no empty or "." part), each given once.
std::map<std::string, std::string> ReadSources(const json& sources) {
  if (!sources.is_array() || sources.empty())
    throw InputError("the solution has no \"sources\" array of {path, content}");
  std::map<std::string, std::string> files;
  for (const json& f : sources) {
    if (!f.is_object()) throw InputError("the solution's \"sources\" holds a non-object");
    const std::string path = StrField(f, "path");
    // Quoted as JSON in messages: the name is the solution's, and may hold anything.
    const std::string quoted = json(path).dump();
    if (!f.contains("content") || !f["content"].is_string())
      throw InputError("the solution's source " + quoted + " has no text content");
    // A plain relative path: it names a #line directive's file and resolves includes.
    bool inside = !path.empty() && path.front() != '/';
    for (char c : path)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' &&
          c != '/')
        inside = false;
    for (const std::string& part : Split(path, '/'))
      if (part.empty() || part == "." || part == "..") inside = false;
    if (!inside)
      throw InputError("the solution's source path " + quoted +
                       " is not a relative path inside the solution (letters, digits, _ - . /)");
    if (auto problem = SourceFileProblem(f["content"].get<std::string>()))
      throw InputError("the solution's " + path + ": " + *problem);
    if (!files.emplace(path, f["content"].get<std::string>()).second)
      throw InputError("the solution gives \"" + path + "\" twice");
  }
  return files;
}

// The folder part of a path ("" at the top), and a path joined to it with "." and ".." parts
// resolved, as an include "x.h" in "dir/a.cu" names "dir/x.h". Empty when it leaves the top.
std::string FolderOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}
std::string Resolve(const std::string& folder, const std::string& name) {
  std::vector<std::string> parts;
  for (const std::string& part : Split(folder + name, '/')) {
    if (part.empty() || part == ".") continue;
    if (part != "..") {
      parts.push_back(part);
    } else if (parts.empty()) {
      return "";
    } else {
      parts.pop_back();
    }
  }
  return Join(parts, "/");
}

bool IsIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool IsIdentifier(std::string_view s) {
  return !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0])) &&
         std::all_of(s.begin(), s.end(), IsIdentifierChar);
}

size_t SkipBlanks(std::string_view text, size_t p) {
  while (p < text.size() && std::isspace(static_cast<unsigned char>(text[p]))) ++p;
  return p;
}

// X of a line that is `#include "X"` and nothing else; "" for any other line. Scanned by hand:
// std::regex recurses per character and a long line would exhaust the stack.
std::string QuotedInclude(std::string_view line) {
  size_t p = SkipBlanks(line, 0);
  if (p >= line.size() || line[p] != '#') return "";
  p = SkipBlanks(line, p + 1);
  constexpr std::string_view kInclude = "include";
  if (line.substr(p, kInclude.size()) != kInclude) return "";
  p = SkipBlanks(line, p + kInclude.size());
  if (p >= line.size() || line[p] != '"') return "";
  const size_t close = line.find('"', p + 1);
  if (close == std::string_view::npos || close == p + 1) return "";
  if (SkipBlanks(line, close + 1) != line.size()) return "";
  return std::string(line.substr(p + 1, close - p - 1));
}

// One translation unit from the entry file: each `#include "X"` that names a file of the
// solution is replaced by that file (once; later includes of it are dropped, as an include
// guard would), between #line directives so that the compiler's messages name the files.
// Other includes stay. A source file (not a header) that the entry does not include would be
// a second translation unit: refused.
class Bundler {
 public:
  explicit Bundler(const std::map<std::string, std::string>& files) : files_(files) {}

  std::string Bundle(const std::string& entry) {
    if (!files_.count(entry))
      throw InputError("the solution has no source \"" + entry + "\" (its entry point's file)");
    std::string out;
    Inline(entry, &out);
    for (const auto& [path, text] : files_)
      if (!done_.count(path) && !IsHeader(path))
        throw InputError("the solution's " + path + " is not included by its entry file " + entry +
                         ": a candidate here is one translation unit");
    return out;
  }

 private:
  static bool IsHeader(const std::string& path) {
    for (const char* ext : {".h", ".hpp", ".hh", ".cuh", ".inc", ".inl"})
      if (EndsWith(path, ext)) return true;
    return false;
  }

  void Inline(const std::string& path, std::string* out) {
    done_.insert(path);
    const std::vector<std::string> lines = Split(files_.at(path), '\n');
    // The part after a final newline is empty: the file's last line has ended.
    const size_t count = !lines.empty() && lines.back().empty() ? lines.size() - 1 : lines.size();
    for (size_t i = 0; i < count; ++i) {
      const std::string name = QuotedInclude(lines[i]);
      const std::string target = name.empty() ? "" : Resolve(FolderOf(path), name);
      if (target.empty() || !files_.count(target)) {
        *out += lines[i] + "\n";
        continue;
      }
      if (!done_.count(target)) {
        *out += "#line 1 \"" + LastPart(target) + "\"\n";
        Inline(target, out);
      }
      *out += "#line " + std::to_string(i + 2) + " \"" + LastPart(path) + "\"\n";
    }
  }

  // #line takes a plain name here (the screen refuses a path there).
  static std::string LastPart(const std::string& path) {
    return path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  }

  const std::map<std::string, std::string>& files_;
  std::set<std::string> done_;  // inlined, or being inlined: a later include is dropped
};

std::string BundleSources(const std::string& entry,
                          const std::map<std::string, std::string>& files) {
  std::string bundle = Bundler(files).Bundle(entry);
  if (auto problem = SourceFileProblem(bundle))
    throw InputError("the solution's files together: " + *problem);
  return bundle;
}

// A TVM-FFI entry point of another name is exported as run too (the symbol the harness
// loads): the export macro's name is rewritten. Where run is exported already, or the symbol
// is not exported at all, or it is ptxbench's own ABI (whose entry point is the C function
// run), there is nothing to load by that name: refused.
void ExportEntryAsRun(FlashInferSolution& s) {
  const std::string& name = s.entry_symbol;
  if (s.binding != "tvm-ffi")
    throw InputError("the solution's entry point is " + name +
                     ": without a binding the entry point is ptxbench's C function run");
  // Counted in the code only: a comment may mention the macro (upstream's kernels do).
  // Comments and literals are blanked at the same offsets, so an export found in the code is
  // rewritten at its place in the source.
  const std::vector<TvmFfiExport> exports = TvmFfiExports(StripCommentsAndStrings(s.source));
  const auto named = [&](const std::string& n) {
    return std::count_if(exports.begin(), exports.end(),
                         [&](const TvmFfiExport& e) { return e.name == n; });
  };
  if (named(name) != 1)
    throw InputError("the solution's entry point " + name +
                     " is not exported once by TVM_FFI_DLL_EXPORT_TYPED_FUNC(" + name + ", ...)");
  if (named("run") != 0)
    throw InputError("the solution exports run besides its entry point " + name +
                     ": which one to call is ambiguous");
  for (const TvmFfiExport& e : exports)
    if (e.name == name) s.source.replace(e.name_begin, name.size(), "run");
}

}  // namespace

FlashInferSolution ReadFlashInferSolution(const json& solution) {
  if (!solution.is_object()) throw InputError("a FlashInfer-Bench solution is a JSON object");
  FlashInferSolution s;
  s.name = StrField(solution, "name");
  s.definition = StrField(solution, "definition");
  const json spec = solution.value("spec", json());
  if (!spec.is_object()) throw InputError("the solution has no \"spec\" object");
  if (StrField(spec, "language") != "cuda")
    throw InputError("the solution's spec.language is \"" + StrField(spec, "language") +
                     "\": only cuda solutions run here");
  // The binding says how the entry point is loaded. TVM-FFI's (upstream PTXBench's) and none
  // (ptxbench's own C entry point) load here; any other (a torch extension) cannot, and is
  // refused by name rather than loaded as if it were one of these.
  s.binding = StrField(spec, "binding");
  if (!s.binding.empty() && s.binding != "tvm-ffi")
    throw InputError("the solution's spec.binding is \"" + s.binding +
                     "\": solutions load here through TVM-FFI (\"tvm-ffi\") or ptxbench's own "
                     "entry point (no binding), not through \"" +
                     s.binding + "\"");
  const std::string entry = StrField(spec, "entry_point");
  const size_t sep = entry.find("::");
  if (sep == std::string::npos || sep == 0 || sep + 2 == entry.size())
    throw InputError("the solution's spec.entry_point \"" + entry + "\" is not FILE::SYMBOL");
  s.entry_file = entry.substr(0, sep);
  s.entry_symbol = entry.substr(sep + 2);
  if (!IsIdentifier(s.entry_symbol))
    throw InputError("the solution's spec.entry_point \"" + entry + "\" names no C identifier");
  s.source = BundleSources(s.entry_file, ReadSources(solution.value("sources", json())));
  if (s.entry_symbol != "run") ExportEntryAsRun(s);
  return s;
}

CandidateFile ReadCandidateFile(const std::string& path, const std::string& task) {
  CandidateFile f;
  f.source = ReadSourceFile(path);
  if (!EndsWith(path, ".json")) return f;
  json parsed = json::parse(f.source, nullptr, false);
  if (parsed.is_discarded())
    throw InputError(path + ": not JSON (a .json candidate is a FlashInfer-Bench solution)");
  try {
    f.solution = ReadFlashInferSolution(parsed);
  } catch (const Error& e) {
    throw Error(e.kind(), path + ": " + e.what());
  }
  if (!task.empty() && !f.solution->definition.empty() && f.solution->definition != task)
    throw InputError(path + ": the solution is for " + f.solution->definition + ", not --task " +
                     task);
  f.source = f.solution->source;
  return f;
}

}  // namespace ptxbench

#include "agent/feedback.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <regex>
#include <string_view>
#include <vector>

#include "common/enum_names.h"
#include "common/strings.h"
#include "record/layers.h"
#include "record/outcome.h"
#include "record/record.h"

namespace ptxbench {

using nlohmann::json;

namespace {

// The record is read through its typed API: the verdict through record/record.h, the detail
// of its layers through the views of record/layers.h.

// --- formatting ---

std::string G3(double v) { return FormatNumber("%.3g", v); }

// Seconds as s, ms or us with three significant digits.
std::string Duration(double s) {
  char buf[48];
  if (s >= 1)
    std::snprintf(buf, sizeof buf, "%.3g s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3g us", s * 1e6);
  return buf;
}

std::string Count(double v) { return HumanCount(v); }

std::string JsonScalar(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return G3(v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

// Cuts at `max` bytes (never inside a UTF-8 sequence), with "…" when cut.
std::string Cap(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n)) + "…";
}

// One line: line breaks become spaces.
std::string OneLine(std::string_view s, size_t max) {
  std::string out;
  for (char c : s) out += (c == '\n' || c == '\r') ? ' ' : c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return Cap(out, max);
}

std::vector<std::string> SplitLinesOf(const std::string& s) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    std::string l = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(l);
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return lines;
}

bool ContainsError(const std::string& line) {
  std::string l = line;
  for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return l.find("error") != std::string::npos;
}

// "H" for Hopper, "B" for Blackwell: the record's tag, else from the arch.
std::string ArchTagOf(const EvaluationRecord& record) {
  std::string tag = record.Instructions().arch_tag;
  return tag.empty() ? CreditTag(ArchFamilyOf(record.arch)) : tag;
}

// When the paper's rule gives a tag that ours does not: one line saying so and why (ours adds
// a tensor-core work fraction of at least 0.5 and an out-of-process witness). "" otherwise.
std::string RuleDifference(const InstructionsView& instructions) {
  const std::string &ours = instructions.arch_tag, &upstream = instructions.UpstreamArchTag();
  if (upstream.empty() || upstream == ours) return "";
  std::string why;
  // The evaluator's own reasons, where the record has them.
  for (const auto& w : instructions.tag_withheld)
    why += (why.empty() ? "" : "; ") + OneLine(w, 200);
  // Else what can be told from the record: the fraction, or what is left, the witness.
  const auto& fraction = instructions.tensor_core_work_fraction;
  if (why.empty()) {
    if (!fraction)
      why = "no tensor-core work fraction was measured (ours needs >= 0.5)";
    else if (*fraction < 0.5)
      why = "tensor-core work fraction " + G3(*fraction) + " < 0.5";
    else
      why = "the out-of-process witness did not confirm the tensor-core work";
  }
  return "Tag " + upstream + " under the paper's rule, but " +
         (ours.empty() ? std::string("not ours") : ours + " under ours") + ": " + why + "\n";
}

std::string CreditName(const std::string& tag) {
  return tag.empty() ? "the architecture credit" : "the " + tag + " credit";
}

// The turn, from an evaluation id the loop writes ("<trajectory>/turn3"); 0 when none.
int TurnOf(const EvaluationRecord& record) {
  static const std::regex re(R"(/turn([0-9]{1,6})$)");
  const std::string& id = record.evaluation_id;
  std::smatch m;
  return std::regex_search(id, m, re) ? std::stoi(m[1].str()) : 0;
}

// What a status means, in a sentence addressed to the model.
constexpr EnumName<Status> kMeanings[] = {
    {Status::kPassed, "Your kernel is correct."},
    {Status::kRejected,
     "Your source was rejected before compilation (a forbidden header, library or construct)."},
    {Status::kCompileError,
     "Your file did not build (it is compiled by nvcc as candidate.cu; line numbers below refer "
     "to your code block)."},
    {Status::kRuntimeError, "Your code failed while running."},
    {Status::kTimeout,
     "Your code did not finish in time (a hang, a deadlock or a far too slow kernel)."},
    {Status::kMemoryError, "compute-sanitizer found invalid memory accesses."},
    {Status::kIncorrect, "Your kernel ran, but its outputs are wrong."},
    {Status::kRuleViolation, "Your kernel broke a rule of the benchmark."},
    {Status::kInfraError,
     "The harness could not judge this kernel; this is not counted against you."},
};
std::string Meaning(Status status) { return NameOf<Status>(kMeanings, status, ""); }

// --- the sections ---

void Header(const EvaluationRecord& record, std::string* out) {
  int turn = TurnOf(record);
  *out += "## Evaluation of your kernel";
  if (turn > 0) *out += " (turn " + std::to_string(turn) + ")";
  *out += "\n";
  const TaskDetail task = TaskDetailOf(record);
  if (!task.definition.empty()) {
    *out += "Task: " + task.definition;
    if (!task.axes.empty()) {
      std::string list;
      for (const auto& [k, v] : task.axes)
        list += (list.empty() ? "" : ", ") + k + "=" + JsonScalar(v);
      *out += " (" + list + ")";
    }
    if (!record.arch.empty()) *out += " on " + record.arch;
    *out += "\n";
  }
  *out += "Status: " + ToString(record.status);
  if (!record.reason.empty()) *out += " (" + record.reason + ")";
  *out += "\n";
  std::string meaning = Meaning(record.status);
  if (!meaning.empty()) *out += meaning + "\n";
  if (!record.message.empty()) *out += OneLine(record.message, 1000) + "\n";
}

void Screening(const EvaluationRecord& record, std::string* out) {
  const std::vector<ScreeningFinding> findings = ScreeningFindingsOf(record);
  if (findings.empty()) return;
  *out += "\n## Screening\n";
  size_t shown = 0;
  for (const ScreeningFinding& f : findings) {
    if (shown == 10) break;
    ++shown;
    std::string line = "- ";
    if (f.line) line += "line " + std::to_string(*f.line) + ": ";
    line += f.what;
    if (!f.library.empty()) line += " (" + f.library + ")";
    if (!f.excerpt.empty()) line += ": " + OneLine(f.excerpt, 200);
    *out += OneLine(line, 400) + "\n";
  }
  if (findings.size() > shown)
    *out += "[" + std::to_string(findings.size() - shown) + " more findings not shown]\n";
}

// The compiler's first errors: each line mentioning an error, with the source and caret lines
// nvcc prints under it; where no line mentions an error, the log's first lines.
void CompilerErrors(const EvaluationRecord& record, const FeedbackOptions& o, std::string* out) {
  const CompilerOutput compiler = CompilerOutputOf(record);
  std::string text = compiler.errors;
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) text = compiler.log;
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return;
  std::vector<std::string> lines = SplitLinesOf(text);
  const size_t max_lines = static_cast<size_t>(std::max(1, o.max_compiler_lines));
  std::vector<std::string> kept;
  size_t error_lines = 0, error_lines_kept = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!ContainsError(lines[i])) continue;
    ++error_lines;
    if (kept.size() >= max_lines) continue;
    kept.push_back(lines[i]);
    ++error_lines_kept;
    for (size_t j = i + 1; j < lines.size() && j <= i + 2 && kept.size() < max_lines; ++j) {
      if (lines[j].empty() || lines[j][0] != ' ' || ContainsError(lines[j])) break;
      kept.push_back(lines[j]);
    }
  }
  if (kept.empty()) {
    for (const auto& l : lines) {
      if (kept.size() >= max_lines) break;
      if (l.empty() || l.rfind("ptxas info", 0) == 0) continue;
      kept.push_back(l);
    }
  }
  if (kept.empty()) return;
  *out += "\n## Compiler errors\n```text\n";
  for (const auto& l : kept) *out += Cap(l, 300) + "\n";
  *out += "```\n";
  if (error_lines > error_lines_kept)
    *out += "[" + std::to_string(error_lines - error_lines_kept) +
            " more error lines not shown; fix the first ones first]\n";
}

std::string OutputLine(const OutputCheck& o) {
  if (!o.summary.empty()) return OneLine(o.summary, 400);
  // The same facts, from the fields, when the record has no summary.
  std::string s = (o.name.empty() ? std::string("output") : o.name) + ": ";
  const std::string elements = std::to_string(o.elements);
  std::string errors = "max abs " + G3(o.max_abs_error) + ", max rel " + G3(o.max_rel_error);
  if (o.verdict == "match")
    return s + "all " + elements + " elements within tolerance (" + errors + ")";
  if (o.verdict == "unwritten")
    s += std::to_string(o.unwritten) + " of " + elements + " elements never written";
  else if (o.verdict == "non_finite")
    s += std::to_string(o.non_finite) + " of " + elements + " elements NaN or Inf";
  else if (o.verdict == "numerical")
    s += std::to_string(o.mismatched) + " of " + elements + " elements outside tolerance (" +
         errors + ")";
  else
    s += o.verdict.empty() ? "no verdict" : o.verdict;
  if (const auto& fb = o.first_bad) {
    s += "; first at flat index " + std::to_string(fb->index);
    if (fb->got) s += ": got " + G3(*fb->got);
    if (fb->got_non_finite) s += ": got NaN or Inf";
    if (fb->expected) s += ", expected " + G3(*fb->expected);
  }
  return s;
}

void Correctness(const EvaluationRecord& record, std::string* out) {
  const bool passed = record.status == Status::kPassed;
  const CorrectnessDetail c = CorrectnessDetailOf(record);
  if (c.state != "ran") return;
  const std::vector<Trial>& trials = c.trials;
  std::string section;
  if (c.tolerance && !passed) {
    section += "Tolerance: rule " + c.tolerance->rule;
    if (auto a = c.tolerance->atol) section += ", atol " + G3(*a);
    if (auto r = c.tolerance->rtol) section += ", rtol " + G3(*r);
    section += "\n";
  }
  if (passed) {
    // Per output, the largest errors over the trials.
    std::vector<std::string> names;
    std::vector<double> abs_err, rel_err;
    for (const Trial& t : trials)
      for (const OutputCheck& o : t.outputs) {
        size_t k = std::find(names.begin(), names.end(), o.name) - names.begin();
        if (k == names.size()) {
          names.push_back(o.name);
          abs_err.push_back(0);
          rel_err.push_back(0);
        }
        abs_err[k] = std::max(abs_err[k], o.max_abs_error);
        rel_err[k] = std::max(rel_err[k], o.max_rel_error);
      }
    for (size_t k = 0; k < names.size(); ++k)
      section += names[k] + ": correct on " + std::to_string(trials.size()) +
                 " trials, max abs error " + G3(abs_err[k]) + ", max rel error " + G3(rel_err[k]) +
                 "\n";
  } else {
    size_t shown = 0, bad_trials = 0;
    for (const Trial& t : trials) {
      if (!t.Failed()) continue;
      ++bad_trials;
      if (shown == 4) continue;
      ++shown;
      std::string seed = t.seed.is_number() ? JsonScalar(t.seed) : "?";
      section += "Trial (seed " + seed + "):\n";
      if (!t.inputs_unchanged)
        section += "  your kernel modified its inputs (they are read-only)\n";
      for (const OutputCheck& o : t.outputs) section += "  " + OutputLine(o) + "\n";
    }
    if (bad_trials > shown)
      section += "[" + std::to_string(bad_trials - shown) + " more failing trials not shown]\n";
    if (!trials.empty())
      section += bad_trials == 0
                     ? "All " + std::to_string(trials.size()) + " trials matched the reference\n"
                     : std::to_string(bad_trials) + " of " + std::to_string(trials.size()) +
                           " trials failed\n";
  }
  if (!c.new_vendor_libraries.empty()) {
    std::string list;
    for (const json& l : c.new_vendor_libraries) list += (list.empty() ? "" : ", ") + JsonScalar(l);
    section += "Loaded at run time (forbidden): " + list + "\n";
  }
  if (!section.empty()) *out += "\n## Correctness\n" + section;
}

// How the process ended and what it printed last: for crashes, CUDA errors and hangs.
void ProcessDetails(const EvaluationRecord& record, std::string* out) {
  std::string section;
  const std::pair<const char*, ChildEnd> runs[] = {
      {"correctness run", CorrectnessDetailOf(record).child},
      {"timed run", PerformanceDetailOf(record).child}};
  for (const auto& [what, child] : runs) {
    std::string exit = child.exit;
    if (exit == "exit code 0") exit.clear();  // says nothing about the failure
    const std::string& tail = child.log_tail;
    if (exit.empty() && tail.find_first_not_of(" \t\r\n") == std::string::npos) continue;
    if (!exit.empty())
      section += std::string("Process (") + what + "): " + OneLine(exit, 200) + "\n";
    std::vector<std::string> lines = SplitLinesOf(tail);
    while (!lines.empty() && lines.back().find_first_not_of(" \t") == std::string::npos)
      lines.pop_back();
    if (lines.empty()) continue;
    size_t first = lines.size() > 15 ? lines.size() - 15 : 0;
    section += "Its last output:\n```text\n";
    for (size_t i = first; i < lines.size(); ++i) section += Cap(lines[i], 300) + "\n";
    section += "```\n";
  }
  if (!section.empty()) *out += "\n## Run\n" + section;
}

void Memcheck(const EvaluationRecord& record, std::string* out) {
  const MemcheckDetail m = MemcheckDetailOf(record);
  const std::string& state = m.state;
  if (state != "ran" && state != "timed_out" && state != "failed") return;
  const std::vector<MemcheckDetail::Error>& errors = m.errors;
  const long long count = m.error_count;
  std::string section;
  if (state == "timed_out") section += "The memory check timed out; its report is incomplete.\n";
  if (state == "failed")
    section +=
        "compute-sanitizer did not produce a report (judged your failure unless the GPU failed a "
        "health probe).\n";
  if (count == 0 && errors.empty()) {
    if (state == "ran") section += "No memory error found.\n";
  } else {
    section += std::to_string(std::max<long long>(count, static_cast<long long>(errors.size()))) +
               " errors in all" + (errors.empty() ? "" : "; the first:") + "\n";
    size_t shown = 0;
    for (const MemcheckDetail::Error& e : errors) {
      if (shown == 5) break;
      ++shown;
      std::string s = e.summary;
      if (s.empty()) {
        for (const std::string* v : {&e.kind, &e.location, &e.thread, &e.address})
          if (!v->empty()) s += (s.empty() ? "" : "; ") + *v;
      }
      section += "- " + OneLine(s, 400) + "\n";
    }
    if (errors.size() > shown)
      section += "[" + std::to_string(errors.size() - shown) + " more not shown]\n";
    if (errors.empty() && !m.first_error.empty())
      section += "- " + OneLine(m.first_error, 400) + "\n";
  }
  if (section.empty()) return;
  if (record.status == Status::kPassed && section == "No memory error found.\n") {
    *out += "Memory check (compute-sanitizer): no error found.\n";
    return;
  }
  *out += "\n## Memory check (compute-sanitizer)\n" + section;
}

std::string VerificationText(const InstructionsView& ins, const std::string& credit) {
  using enum Verification;
  switch (ins.verification) {
    case kDynamicPresent:
      return "verified: " + credit + " is earned";
    case kSassAbsent:
      return "not verified: a required family is absent from the SASS";
    case kDynamicNotExecuted:
      return "not verified: a required family is in the SASS but never executed";
    case kProfileError:
      return "not verified: the profiler failed (a harness problem)";
    case kNotRequested:
      return "not requested";
    case kNotCorrect:
      return "not attempted: the kernel is not correct";
    default:
      return ins.verification_text;
  }
}

void Instructions(const EvaluationRecord& record, std::string* out) {
  if (!record.instructions.is_object() || record.instructions.empty()) return;
  const InstructionsView view = record.Instructions();
  const InstructionDetail detail = InstructionDetailOf(record);
  const std::string tag = ArchTagOf(record), credit = CreditName(tag);
  std::string section;
  std::vector<std::string> required = view.required_families;
  if (required.empty()) required = TaskDetailOf(record).required_families;
  const std::string& arch = record.arch;
  if (!required.empty()) {
    std::string list;
    for (const auto& f : required) list += (list.empty() ? "" : ", ") + f;
    section += "Required for " + credit + (arch.empty() ? "" : " on " + arch) + ": " + list + "\n";
  }
  if (detail.has_static) {
    if (detail.static_state == "ran" && detail.sass_totals) {
      std::string list;
      for (const InstructionDetail::FamilyCount& f : *detail.sass_totals)
        list +=
            (list.empty() ? "" : ", ") + f.family + " " + (f.count > 0 ? Count(f.count) : "absent");
      section +=
          "SASS of your shared object: " + (list.empty() ? "no instruction family" : list) + "\n";
    } else {
      const std::string& why = detail.static_message;
      section += "SASS: not inspected (" +
                 (detail.static_state.empty() ? "?" : detail.static_state) +
                 (why.empty() ? "" : ": " + OneLine(why, 200)) + ")\n";
    }
  }
  if (detail.executed && !detail.executed->empty()) {
    std::string list;
    for (const InstructionDetail::FamilyCount& f : *detail.executed)
      list += (list.empty() ? "" : ", ") + f.family + " " +
              (f.count > 0 ? Count(f.count) : "not executed");
    section +=
        "Executed at run time (ncu, thread instructions with a true predicate): " + list + "\n";
  }
  if (const auto& f = view.tensor_core_work_fraction)
    section += "Tensor-core work fraction: " + G3(100 * *f) +
               "% of the task's FLOPs done by GMMA (wgmma)\n";
  const Verification verification = view.verification;
  std::string message = view.message;
  std::string difference = RuleDifference(view);
  if (verification == Verification::kNotCorrect) message.clear();  // says the same as the text
  // The paper's rule met but not ours: the credit is not earned, whatever the verdict says.
  std::string verdict = !difference.empty() && verification == Verification::kDynamicPresent
                            ? "met under the paper's rule only: " + credit + " is not earned"
                            : VerificationText(view, credit);
  if (!view.verification_text.empty())
    section += "Verification: " + verdict +
               (message.empty() ? "" : " (" + OneLine(message, 300) + ")") + "\n";
  else if (!message.empty())
    section += OneLine(message, 300) + "\n";
  section += difference;
  if (verification != Verification::kDynamicPresent && !required.empty() &&
      verification != Verification::kNotRequested) {
    std::vector<std::string> missing;
    if (record.status != Status::kPassed || verification == Verification::kNotCorrect)
      missing.push_back("a correct kernel");
    for (const auto& f : required) {
      if (detail.sass_totals && InstructionDetail::CountOf(*detail.sass_totals, f) <= 0)
        missing.push_back(f + " (absent from the SASS)");
      else if (detail.executed && InstructionDetail::CountOf(*detail.executed, f) <= 0)
        missing.push_back(f + " (in the SASS, never executed)");
    }
    if (verification == Verification::kProfileError)
      missing.push_back("a profile (a harness problem)");
    if (!missing.empty()) {
      std::string list;
      for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
      section += "Missing for " + credit + ": " + list + "\n";
    }
  }
  if (!section.empty()) *out += "\n## Instructions\n" + section;
}

std::string Spread(const TimeDistribution& t) {
  if (t.p10 && t.p90) return "p10 " + Duration(*t.p10) + ", p90 " + Duration(*t.p90);
  return "";
}

void Performance(const EvaluationRecord& record, std::string* out) {
  const PerformanceView view = record.Performance();
  const std::string& state = view.state;
  std::string section;
  if (state != "ran") {
    const std::string& why = view.reason;
    section += "Not timed" + (state.empty() ? "" : " (" + state + ")") +
               (why.empty() ? "" : ": " + OneLine(why, 300)) + "\n";
  } else {
    const PerformanceDetail p = PerformanceDetailOf(record);
    const TimeDistribution& c = p.candidate;
    if (c.median) {
      std::string extra = Spread(c);
      if (c.count)
        extra += (extra.empty() ? "" : ", ") + std::to_string(static_cast<long long>(*c.count)) +
                 " timed calls";
      section += "Your kernel: " + Duration(*c.median) + " median" +
                 (extra.empty() ? "" : " (" + extra + ")") + "\n";
    } else {
      section += "Your kernel: no time recorded\n";
    }
    const PerformanceDetail::Baseline& b = p.baseline;
    const std::string bname = b.name.empty() ? "the baseline" : b.name;
    if (b.state == "ran" && b.time.median) {
      std::string spread = Spread(b.time);
      section += "Baseline " + bname + ": " + Duration(*b.time.median) + " median" +
                 (spread.empty() ? "" : " (" + spread + ")");
      if (b.tflops) section += ", " + G3(*b.tflops) + " TFLOP/s";
      section += "\n";
      if (b.drift_flagged)
        section += "Note: the baseline's time drifted by " + G3(100 * b.drift) +
                   "% between before and after your kernel; the speedup is less certain.\n";
    } else if (b.present) {
      section += "Baseline " + (b.name.empty() ? std::string("") : bname + " ") + "not timed" +
                 (b.state.empty() ? "" : " (" + b.state + ")") +
                 (b.reason.empty() ? "" : ": " + OneLine(b.reason, 300)) + "; no speedup\n";
    }
    if (const auto& s = view.speedup) {
      section += "Speedup: " + G3(*s) + "x the baseline";
      if (const auto& r = p.speedup_range)
        section += " (range " + G3(r->first) + "x to " + G3(r->second) + "x)";
      section += "\n";
    }
    if (const auto& t = view.tflops) {
      section += "Throughput: " + G3(*t) + " TFLOP/s";
      if (p.percent_of_peak) {
        section += ", " + G3(*p.percent_of_peak) + "% of the GPU's bf16 dense peak";
        if (p.peak_tflops) section += " (" + G3(*p.peak_tflops) + " TFLOP/s)";
      }
      section += "\n";
    }
  }
  *out += "\n## Performance\n" + section;
}

std::string BestSection(const std::optional<BestSoFar>& best, const std::string& tag) {
  std::string s = "\n## Best so far\n";
  if (!best) return s + "No correct kernel yet.\n";
  s += "turn " + std::to_string(best->turn) + ": correct";
  s += best->speedup > 0 ? ", speedup " + G3(best->speedup) + "x" : ", not timed";
  if (best->tflops > 0) s += ", " + G3(best->tflops) + " TFLOP/s";
  s += best->verified
           ? ", " + (tag.empty() ? std::string("architecture credit") : tag) + " verified"
           : ", " + (tag.empty() ? std::string("architecture credit") : tag) + " not verified";
  return s + "\n";
}

// The length of the longest prefix of `s` within `n` bytes that does not split a UTF-8
// sequence.
size_t Utf8Prefix(std::string_view s, size_t n) {
  if (n >= s.size()) return s.size();
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

// `head` and `tail` within `max_chars`: the head cut at a line break, with a note saying so;
// the tail (the best kernel so far) always kept whole.
std::string Fit(const std::string& head, const std::string& tail, size_t max_chars) {
  if (head.size() + tail.size() <= max_chars) return head + tail;
  const char* kNote = "[feedback truncated: %zu of %zu characters shown]\n";
  // Room for the note with its numbers and for a closing fence.
  const size_t reserve = tail.size() + std::strlen(kNote) + 48;
  size_t budget = max_chars > reserve ? max_chars - reserve : 0;
  std::string cut = head.substr(0, Utf8Prefix(head, budget));
  size_t nl = cut.rfind('\n');
  if (nl != std::string::npos && nl + 1 > budget / 2)
    cut.resize(nl + 1);
  else if (!cut.empty())
    cut += "\n";
  // A fenced block cut open is closed, so that the note is not read as its content.
  size_t fences = 0;
  for (size_t pos = cut.find("```"); pos != std::string::npos; pos = cut.find("```", pos + 3))
    ++fences;
  if (fences % 2) cut += "```\n";
  char note[128];
  std::snprintf(note, sizeof note, kNote, cut.size(), head.size());
  return cut + note + tail;
}

}  // namespace

std::string RenderFeedback(const json& record, const std::optional<BestSoFar>& best,
                           const FeedbackOptions& options) {
  return RenderFeedback(FromJson(record), best, options);
}

std::string RenderFeedback(const EvaluationRecord& r, const std::optional<BestSoFar>& best,
                           const FeedbackOptions& options) {
  std::string out;
  Header(r, &out);
  switch (r.status) {
    case Status::kRejected:
      Screening(r, &out);
      break;
    case Status::kCompileError:
      CompilerErrors(r, options, &out);
      break;
    case Status::kRuntimeError:
    case Status::kTimeout:
      ProcessDetails(r, &out);
      break;
    case Status::kIncorrect:
    case Status::kRuleViolation:
    case Status::kPassed:
    case Status::kMemoryError:
      Correctness(r, &out);
      break;
    case Status::kInfraError:
    case Status::kUnknown:
      break;
  }
  Memcheck(r, &out);
  Instructions(r, &out);
  if (r.status == Status::kPassed) Performance(r, &out);
  std::string tail = BestSection(best, ArchTagOf(r));
  return Fit(out, tail, static_cast<size_t>(std::max(0, options.max_chars)));
}

namespace {

// How a passed turn stands: its speed, and its credit under our rule and the paper's.
std::string PassedDetail(const EvaluationRecord& record) {
  const PerformanceView perf = record.Performance();
  std::string detail = perf.speedup ? "speedup " + G3(*perf.speedup) + "x" : "not timed";
  if (perf.tflops) detail += ", " + G3(*perf.tflops) + " TFLOP/s";
  const InstructionsView ins = record.Instructions();
  std::string tag = ArchTagOf(record);
  const std::string& v = ins.verification_text;
  const std::string &ours = ins.arch_tag, &upstream = ins.UpstreamArchTag();
  if (!upstream.empty() && upstream != ours)
    detail += ", " + upstream + " under the paper's rule only";
  else if (ins.verification == Verification::kDynamicPresent)
    detail += ", " + (tag.empty() ? std::string("credit") : tag) + " verified";
  else if (!v.empty() && ins.verification != Verification::kNotRequested)
    detail += ", " + (tag.empty() ? std::string("credit") : tag) + " not verified (" + v + ")";
  return detail;
}

// The first failing output of an incorrect turn, without its detail after ';'.
std::string IncorrectDetail(const EvaluationRecord& record) {
  std::string detail;
  for (const Trial& t : CorrectnessDetailOf(record).trials) {
    for (const OutputCheck& o : t.outputs)
      if (o.verdict != "match") {
        detail = OutputLine(o);
        break;
      }
    if (!detail.empty()) break;
  }
  if (detail.empty()) detail = record.message;
  detail = detail.substr(0, detail.find(';'));
  size_t paren = detail.find(" (max abs");
  if (paren != std::string::npos) detail.resize(paren);
  return detail;
}

}  // namespace

std::string SummarizeTurn(int turn, const json& record) {
  return SummarizeTurn(turn, FromJson(record));
}

std::string SummarizeTurn(int turn, const EvaluationRecord& record) {
  std::string s = "turn " + std::to_string(turn) + ": " + ToString(record.status);
  std::string detail = record.status == Status::kPassed      ? PassedDetail(record)
                       : record.status == Status::kIncorrect ? IncorrectDetail(record)
                                                             : record.message;
  const std::string& reason = record.reason;
  if (!reason.empty() && record.status != Status::kIncorrect)
    detail = reason + (detail.empty() ? "" : ": " + detail);
  if (!detail.empty()) s += " (" + OneLine(detail, 160) + ")";
  return OneLine(s, 240);
}

nlohmann::json ToolSummary(int turn, const EvaluationRecord& r, const std::string& arch) {
  const PerformanceView p = r.Performance();
  return {{"turn", turn},
          {"status", ToString(r.status)},
          {"reason", r.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.reason)},
          {"outcome", ToString(JudgeTurn(r, arch).outcome)},
          {"arch_tag", r.Instructions().arch_tag},
          {"speedup", p.speedup ? nlohmann::json(*p.speedup) : nlohmann::json(nullptr)}};
}

}  // namespace ptxbench

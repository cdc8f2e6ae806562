#include "fixit/reasoning.h"

#include <cctype>
#include <set>
#include <sstream>

#include "agent/prompt.h"
#include "common/files.h"
#include "common/strings.h"

namespace ptxbench {

std::vector<ChatMessage> ReasoningRequest(const std::string& prompts_dir, const Failure& f,
                                          const std::string& fixed_kernel,
                                          const std::string& fix_summary,
                                          const ReasoningLimits& limits) {
  std::map<std::string, std::string> v = {
      {"original_system", f.context[0].content},
      {"original_task", f.context[1].content},
      {"failed_kernel", f.context[2].content},
      {"feedback", f.context[3].content},
      {"fixed_kernel", FencedKernel(fixed_kernel)},
      {"fix_summary", fix_summary},
      {"min_chars", std::to_string(limits.min_chars)},
      {"max_chars", std::to_string(limits.max_chars)},
      {"max_code_lines", std::to_string(limits.max_code_lines)},
  };
  return {{"system", RenderTemplate(ReadFile(prompts_dir + "/fixit_reason_system.md"), v)},
          {"user", RenderTemplate(ReadFile(prompts_dir + "/fixit_reason_task.md"), v)}};
}

namespace {

int FirstPersonWords(const std::string& text) {
  static const std::set<std::string> words = {"i",  "i'm",    "i'll", "i've", "i'd", "my",
                                              "me", "myself", "i’m",  "i’ll", "i’ve"};
  int n = 0;
  std::string w;
  auto flush = [&] {
    if (!w.empty() && words.count(w)) ++n;
    w.clear();
  };
  for (char c : text) {
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '\'' ||
        static_cast<unsigned char>(c) >= 0x80)
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else
      flush();
  }
  flush();
  return n;
}

// The longest fenced block, in lines.
int LongestFence(const std::string& text) {
  int longest = 0, current = -1;
  for (const std::string& line : SplitLines(text)) {
    if (StartsWith(Trim(line), "```")) {
      if (current >= 0) {
        longest = std::max(longest, current);
        current = -1;
      } else {
        current = 0;
      }
    } else if (current >= 0) {
      ++current;
    }
  }
  if (current >= 0) longest = std::max(longest, current);  // unterminated
  return longest;
}

}  // namespace

ReasoningCheck ValidateReasoning(const std::string& raw, const std::string& fixed_kernel,
                                 const ReasoningLimits& limits) {
  std::string text = Trim(raw);
  auto no = [](std::string why) { return ReasoningCheck{false, std::move(why)}; };
  if (text.size() < limits.min_chars)
    return no("too short: " + std::to_string(text.size()) + " characters, at least " +
              std::to_string(limits.min_chars));
  if (text.size() > limits.max_chars)
    return no("too long: " + std::to_string(text.size()) + " characters, at most " +
              std::to_string(limits.max_chars));
  if (text.find("<think>") != std::string::npos || text.find("</think>") != std::string::npos)
    return no("it contains <think> tags; write the reasoning alone");
  int fence = LongestFence(text);
  if (fence > limits.max_code_lines)
    return no("it quotes a code block of " + std::to_string(fence) + " lines (at most " +
              std::to_string(limits.max_code_lines) + "): explain the fix, do not paste it");
  std::set<std::string> kernel_lines;
  for (const std::string& l : SplitLines(fixed_kernel)) {
    std::string t = Trim(l);
    if (t.size() >= 16) kernel_lines.insert(t);
  }
  std::set<std::string> quoted;
  for (const std::string& l : SplitLines(text))
    if (kernel_lines.count(Trim(l))) quoted.insert(Trim(l));
  if (static_cast<int>(quoted.size()) > limits.max_quoted_lines)
    return no("it quotes " + std::to_string(quoted.size()) +
              " lines of the fixed kernel verbatim (at most " +
              std::to_string(limits.max_quoted_lines) + ")");
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* giveaway :
       {"the fixed kernel", "the repaired kernel", "the given fix", "the provided solution",
        "the reference solution", "the solution provided", "the teacher"})
    if (lower.find(giveaway) != std::string::npos)
      return no(std::string("it refers to \"") + giveaway +
                "\": write as the one who finds the fix, not as one who was shown it");
  int fp = FirstPersonWords(text);
  if (fp < limits.min_first_person)
    return no("not in the first person (" + std::to_string(fp) + " first-person words, at least " +
              std::to_string(limits.min_first_person) + ")");
  return {true, ""};
}

}  // namespace ptxbench

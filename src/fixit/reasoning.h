// `ptxbench fixit reason`: a reasoning teacher writes, in the first person, how one gets from
// the failed kernel and its feedback to the fix. It reads exactly the conversation the SFT
// row will show (the failure's context) plus the verified fix; what it writes must read as a
// derivation, not a copy of the answer, and is checked before it is accepted.
#pragma once

#include <string>
#include <vector>

#include "agent/chat.h"
#include "fixit/failure.h"

namespace ptxbench {

struct ReasoningLimits {
  size_t min_chars = 300, max_chars = 8000;
  int max_quoted_lines = 8;  // lines of the fixed kernel that may appear verbatim
  int max_code_lines = 12;   // the longest fenced snippet allowed
  int min_first_person = 3;  // I, I'm, I'll, I've, my, me, ...
};

// The request to the reasoning teacher: the system message of prompts/fixit_reason_system.md
// and one user message (prompts/fixit_reason_task.md) holding the failure's four messages, the
// fixed kernel and how it was judged. A retry after a rejection appends the rejected text and
// why it was rejected.
std::vector<ChatMessage> ReasoningRequest(const std::string& prompts_dir, const Failure& failure,
                                          const std::string& fixed_kernel,
                                          const std::string& fix_summary,
                                          const ReasoningLimits& limits);

struct ReasoningCheck {
  bool ok = false;
  std::string why;  // when not ok: one line, said to the teacher on the retry
};

ReasoningCheck ValidateReasoning(const std::string& text, const std::string& fixed_kernel,
                                 const ReasoningLimits& limits);

}  // namespace ptxbench

#include "agent/chat.h"

#include "common/enum_names.h"

namespace ptxbench {

constexpr EnumName<ChatOutcome> kChatOutcomeNames[] = {{ChatOutcome::kOk, "ok"},
                                                       {ChatOutcome::kInfraError, "infra_error"},
                                                       {ChatOutcome::kModelError, "model_error"},
                                                       {ChatOutcome::kEnded, "ended"}};
std::string ToString(ChatOutcome o) { return NameOf<ChatOutcome>(kChatOutcomeNames, o, "unknown"); }

}  // namespace ptxbench

#include "agent/chat.h"

namespace ptxbench {

std::string ToString(ChatOutcome o) {
  switch (o) {
    case ChatOutcome::kOk:
      return "ok";
    case ChatOutcome::kInfraError:
      return "infra_error";
    case ChatOutcome::kModelError:
      return "model_error";
  }
  return "unknown";
}

}  // namespace ptxbench

#include "evaluate/gpu_gate.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "common/gpu_trace.h"
#include "run/protocol.h"

namespace ptxbench {

bool GpuGateEnabled() {
  static const bool on = [] {
    const char* g = std::getenv("PTXBENCH_GPU_GATE");
    return g && std::string(g) == "on";
  }();
  return on;
}

std::shared_ptr<GpuGateState> GateChildOnGpu(ChildRequest* child, GpuAccess* gpu,
                                             bool alone_before_load) {
  auto state = std::make_shared<GpuGateState>();
  child->spec[kGpuGateKey] = true;
  // The wait for the lock happens in the answer, and is not the child's time: a candidate
  // that hangs under the memory check still has only its own deadline.
  child->answer_time_is_not_the_childs = true;
  auto forward = std::move(child->on_message);
  child->on_message = [state, gpu, alone_before_load, forward](const nlohmann::json& m,
                                                               const ChildRequest::Reply& reply) {
    const std::string ev = m.is_object() ? m.value("event", "") : "";
    if (ev == kLoadingEvent && !state->candidate_loading) {
      state->candidate_loading = true;
      if (alone_before_load && !gpu->Holds(GpuLock::Mode::kAlone))
        state->loaded_without_alone = true;
    }
    const bool shared = ev == event::kGpuWanted && !state->shared_asked;
    const bool alone = alone_before_load && ev == event::kCandidateReady && !state->alone_asked;
    if (state->candidate_loading || !(shared || alone)) {
      if (forward) forward(m, reply);
      return;
    }
    (shared ? state->shared_asked : state->alone_asked) = true;
    GpuTrace("gate_ask", {{"event", ev}});
    const bool held = gpu->Hold(shared ? GpuLock::Mode::kShared : GpuLock::Mode::kAlone);
    if (!held) state->refused = true;
    reply(held ? kGateGo : kGateStop);
  };
  return state;
}

}  // namespace ptxbench

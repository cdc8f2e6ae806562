// The GPU gate (evaluate/gpu_gate.h): a child holds the lock from its first CUDA call, not
// from its start; only the harness's requests before the candidate's load are honoured; a
// refused hold stops the child before it touches the GPU; the wait is not the child's time.
#include "evaluate/gpu_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "common/files.h"
#include "run/gpu_lock.h"
#include "run/protocol.h"

namespace ptxbench {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::atomic<bool> kNever{false};

// The answers a gated handler gives, and the messages it passes on.
struct Conversation {
  std::vector<std::string> answers;
  std::vector<std::string> forwarded;
  ChildRequest::Reply reply = [this](const std::string& line) {
    answers.push_back(line);
    return true;
  };
};

ChildRequest ForwardingChild(Conversation* talk) {
  ChildRequest r;
  r.on_message = [talk](const json& m, const ChildRequest::Reply&) {
    talk->forwarded.push_back(m.value("event", ""));
  };
  return r;
}

bool FreeFor(const std::string& path, GpuLock::Mode mode) {
  return GpuLock(path, 0ms, kNever, mode).outcome() == GpuLock::Outcome::kHeld;
}

TEST(GpuGate, HoldsTheGpuSharedAtTheFirstCudaCallThenAloneBeforeTheLoad) {
  ScratchDir dir("gpu-gate");
  const std::string path = dir.File("gpu.lock");
  GpuAccess gpu(path, std::chrono::seconds(0), nullptr);
  Conversation talk;
  ChildRequest r = ForwardingChild(&talk);
  auto state = GateChildOnGpu(&r, &gpu, /*alone_before_load=*/true);
  EXPECT_TRUE(r.spec.value(kGpuGateKey, false));
  EXPECT_TRUE(r.answer_time_is_not_the_childs);
  EXPECT_TRUE(FreeFor(path, GpuLock::Mode::kAlone));  // nothing held before the child asks

  r.on_message({{"event", event::kGpuWanted}}, talk.reply);
  ASSERT_EQ(talk.answers, std::vector<std::string>{kGateGo});
  EXPECT_TRUE(FreeFor(path, GpuLock::Mode::kShared));
  EXPECT_FALSE(FreeFor(path, GpuLock::Mode::kAlone));

  r.on_message({{"event", event::kCandidateReady}}, talk.reply);
  ASSERT_EQ(talk.answers.size(), 2u);
  EXPECT_EQ(talk.answers[1], kGateGo);
  EXPECT_FALSE(FreeFor(path, GpuLock::Mode::kShared));  // alone now

  // Every other message reaches the child's own handler.
  r.on_message({{"event", "trial"}}, talk.reply);
  EXPECT_EQ(talk.forwarded, std::vector<std::string>{"trial"});
  EXPECT_FALSE(state->refused);
  gpu.Release();
  EXPECT_TRUE(FreeFor(path, GpuLock::Mode::kAlone));
}

// What the candidate's process sends after its load is the candidate's: it can neither take
// the GPU alone (stalling every other evaluation) nor trade an alone hold for a shared one.
TEST(GpuGate, RequestsAfterTheLoadOrRepeatedAreNotHonoured) {
  ScratchDir dir("gpu-gate");
  const std::string path = dir.File("gpu.lock");
  GpuAccess gpu(path, std::chrono::seconds(0), nullptr);
  Conversation talk;
  ChildRequest r = ForwardingChild(&talk);
  auto state = GateChildOnGpu(&r, &gpu);  // a shared child: no alone request at all
  r.on_message({{"event", event::kCandidateReady}}, talk.reply);
  EXPECT_TRUE(talk.answers.empty());
  EXPECT_TRUE(FreeFor(path, GpuLock::Mode::kAlone));

  r.on_message({{"event", event::kGpuWanted}}, talk.reply);
  r.on_message({{"event", kLoadingEvent}}, talk.reply);
  r.on_message({{"event", event::kGpuWanted}}, talk.reply);
  EXPECT_EQ(talk.answers, std::vector<std::string>{kGateGo});
  EXPECT_EQ(talk.forwarded,
            (std::vector<std::string>{event::kCandidateReady, kLoadingEvent, event::kGpuWanted}));
  EXPECT_TRUE(FreeFor(path, GpuLock::Mode::kShared));  // still shared, never alone

  Conversation second;
  ChildRequest timed = ForwardingChild(&second);
  GpuAccess other(path + ".2", std::chrono::seconds(0), nullptr);
  GateChildOnGpu(&timed, &other, /*alone_before_load=*/true);
  timed.on_message({{"event", event::kGpuWanted}}, second.reply);
  timed.on_message({{"event", kLoadingEvent}}, second.reply);
  timed.on_message({{"event", event::kCandidateReady}}, second.reply);
  EXPECT_EQ(second.answers, std::vector<std::string>{kGateGo});
  EXPECT_TRUE(FreeFor(path + ".2", GpuLock::Mode::kShared));  // not taken alone
  EXPECT_FALSE(state->refused);
}

// A forwarding child gated on `gpu` that sends `events` in order; the hold let go after.
std::shared_ptr<GpuGateState> Converse(GpuAccess* gpu, bool alone_before_load,
                                       const std::vector<std::string>& events) {
  Conversation talk;
  ChildRequest r = ForwardingChild(&talk);
  auto state = GateChildOnGpu(&r, gpu, alone_before_load);
  for (const std::string& e : events) r.on_message({{"event", e}}, talk.reply);
  gpu->Release();
  return state;
}

// Fail closed: the parent does not take the child's word that it will ask for the GPU alone. A
// timed child whose candidate loads while the GPU is held only shared (it never asked, as when
// its spec lost the request on the way, or it asked after the load) is marked, and its
// evaluation's timings are void; one that asked first is not.
TEST(GpuGate, ATimedChildThatLoadsWithoutTheGpuAloneIsMarked) {
  ScratchDir dir("gpu-gate");
  GpuAccess gpu(dir.File("gpu.lock"), std::chrono::seconds(0), nullptr);
  EXPECT_TRUE(Converse(&gpu, /*alone_before_load=*/true, {event::kGpuWanted, kLoadingEvent})
                  ->loaded_without_alone);
  EXPECT_FALSE(Converse(&gpu, /*alone_before_load=*/true,
                        {event::kGpuWanted, event::kCandidateReady, kLoadingEvent})
                   ->loaded_without_alone);
  // A shared child (the trials, the memory check) loads under a shared hold by design.
  EXPECT_FALSE(Converse(&gpu, /*alone_before_load=*/false, {event::kGpuWanted, kLoadingEvent})
                   ->loaded_without_alone);
}

std::string Bin() {
  const char* bin = std::getenv("PTXBENCH_BIN");
  return bin ? bin : "";
}

ChildRequest ProbeChild(const ScratchDir& dir, const std::string& name) {
  ChildRequest r;
  r.spec = ProbeSpecJson();
  r.work_dir = dir.path();
  r.name = name;
  r.executable = Bin();
  r.timeout = std::chrono::seconds(5);
  return r;
}

// The real child: it asks over its channel and waits on its control descriptor. Refused, it
// stops before its first CUDA call (no device report, no "no GPU" either).
TEST(GpuGate, ARefusedChildNeverReachesTheGpu) {
  if (Bin().empty()) GTEST_SKIP() << "PTXBENCH_BIN is not set";
  ScratchDir dir("gpu-gate");
  const std::string path = dir.File("gpu.lock");
  GpuLock other(path, 0ms, kNever, GpuLock::Mode::kAlone);  // another evaluation times
  ASSERT_EQ(other.outcome(), GpuLock::Outcome::kHeld);
  GpuAccess gpu(path, std::chrono::seconds(0), nullptr);
  ChildRequest r = ProbeChild(dir, "refused");
  auto state = GateChildOnGpu(&r, &gpu);
  ChildOutcome o = RunChild(r);
  EXPECT_TRUE(state->refused);
  ASSERT_NE(o.First(event::kGpuWanted), nullptr) << o.log_tail;
  ASSERT_NE(o.First("error"), nullptr) << o.log_tail;
  EXPECT_EQ(o.First("error")->value("stage", ""), "gpu_gate");
  EXPECT_EQ(o.First(event::kDevice), nullptr);
  EXPECT_EQ(o.First(event::kNoGpu), nullptr);
  EXPECT_NE(o.First(event::kDone), nullptr);
}

// Granted after a wait longer than the child's own deadline: the wait was the lock's, so the
// child still finishes (on this machine with its device report or its "no GPU").
TEST(GpuGate, TheWaitForTheLockIsNotTheChildsTime) {
  if (Bin().empty()) GTEST_SKIP() << "PTXBENCH_BIN is not set";
  ScratchDir dir("gpu-gate");
  const std::string path = dir.File("gpu.lock");
  auto other = std::make_unique<GpuLock>(path, 0ms, kNever, GpuLock::Mode::kAlone);
  ASSERT_EQ(other->outcome(), GpuLock::Outcome::kHeld);
  std::thread release([&] {
    std::this_thread::sleep_for(6s);  // past the child's 5 s
    other.reset();
  });
  GpuAccess gpu(path, std::chrono::seconds(60), nullptr);
  ChildRequest r = ProbeChild(dir, "waited");
  auto state = GateChildOnGpu(&r, &gpu);
  ChildOutcome o = RunChild(r);
  release.join();
  gpu.Release();
  EXPECT_FALSE(state->refused);
  EXPECT_NE(o.exit.kind, ExitKind::kTimedOut) << o.exit.Describe();
  EXPECT_TRUE(o.First(event::kDevice) || o.First(event::kNoGpu)) << o.log_tail;
  EXPECT_NE(o.First(event::kDone), nullptr);
  EXPECT_GE(gpu.wait_seconds(), 5.0);
}

}  // namespace
}  // namespace ptxbench

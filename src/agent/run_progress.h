// Where a run stands, for its progress lines: trajectories and turns done, evaluations waiting
// for a GPU slot, and an estimate of the time left. Thread-safe; the loop's workers call it.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

namespace ptxbench {

class RunProgress {
 public:
  using Clock = std::chrono::steady_clock;
  // `trajectories` in the run, each with at most `turn_limit` turns.
  RunProgress(int trajectories, int turn_limit, Clock::time_point start = Clock::now());

  // A trajectory found finished on --resume, or resumed with `spent` turns already taken:
  // those turns are not part of this session's work (nor of its pace).
  void Resumed(int spent, bool finished);
  void EvaluationWaiting();  // a kernel waits for an evaluation slot
  void EvaluationStarted();  // ...and got one
  void TurnDone();
  // A trajectory ended with `spent` turns (fewer than the limit: target reached, model error,
  // infrastructure): its unused turns leave the estimate.
  void TrajectoryDone(int spent);

  // "run: 2/6 trajectories, 9/48 turns, 1 evaluation waiting, about 3 min left (at most)".
  std::string Line(Clock::time_point now = Clock::now()) const;

 private:
  mutable std::mutex mu_;
  Clock::time_point start_;
  int trajectories_, turn_limit_;
  int trajectories_done_ = 0;
  int turns_done_ = 0;      // in all, resumed ones included
  int turns_this_run_ = 0;  // done by this process: the pace
  int turns_dropped_ = 0;   // the unused turns of trajectories that ended early
  int waiting_ = 0;
};

// "45 s", "3 min", "1 h 20 min".
std::string ShortDuration(double seconds);

}  // namespace ptxbench

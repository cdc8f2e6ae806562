#include "agent/run_progress.h"

#include <algorithm>
#include <cmath>

namespace ptxbench {

RunProgress::RunProgress(int trajectories, int turn_limit, Clock::time_point start)
    : start_(start), trajectories_(trajectories), turn_limit_(turn_limit) {}

void RunProgress::Resumed(int spent, bool finished) {
  std::lock_guard lock(mu_);
  turns_done_ += spent;
  if (finished) {
    ++trajectories_done_;
    turns_dropped_ += std::max(0, turn_limit_ - spent);
  }
}

void RunProgress::EvaluationWaiting() {
  std::lock_guard lock(mu_);
  ++waiting_;
}

void RunProgress::EvaluationStarted() {
  std::lock_guard lock(mu_);
  waiting_ = std::max(0, waiting_ - 1);
}

void RunProgress::TurnDone() {
  std::lock_guard lock(mu_);
  ++turns_done_;
  ++turns_this_run_;
}

void RunProgress::TrajectoryDone(int spent) {
  std::lock_guard lock(mu_);
  ++trajectories_done_;
  turns_dropped_ += std::max(0, turn_limit_ - spent);
}

std::string RunProgress::Line(Clock::time_point now) const {
  std::lock_guard lock(mu_);
  const int total_turns = trajectories_ * turn_limit_;
  std::string line = "run: " + std::to_string(trajectories_done_) + "/" +
                     std::to_string(trajectories_) + " trajectories, " +
                     std::to_string(turns_done_) + "/" + std::to_string(total_turns) + " turns";
  if (waiting_ > 0)
    line += ", " + std::to_string(waiting_) + " evaluation" + (waiting_ == 1 ? "" : "s") +
            " waiting for a GPU";
  // The pace of this process's turns, over the turns still possible. An upper bound: a
  // trajectory that reaches its target stops early.
  const int left = std::max(0, total_turns - turns_done_ - turns_dropped_);
  if (left == 0) return line + ", done";
  if (turns_this_run_ == 0) return line;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  return line + ", at most about " + ShortDuration(elapsed / turns_this_run_ * left) + " left";
}

std::string ShortDuration(double seconds) {
  if (!(seconds >= 0)) seconds = 0;
  if (seconds < 90) return std::to_string(static_cast<long>(std::lround(seconds))) + " s";
  long minutes = std::lround(seconds / 60);
  if (minutes < 90) return std::to_string(minutes) + " min";
  return std::to_string(minutes / 60) + " h " + std::to_string(minutes % 60) + " min";
}

}  // namespace ptxbench

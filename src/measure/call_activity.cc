#include "measure/call_activity.h"

#include <algorithm>
#include <set>

namespace ptxbench {
namespace {

void AddName(std::vector<std::string>* names, const std::string& name) {
  if (names->size() < kMaxActivityNames &&
      std::find(names->begin(), names->end(), name) == names->end())
    names->push_back(name);
}

// The harness's work is recognised by where it runs (the stream the harness made before the
// candidate was loaded and never hands it), never by its name: a candidate can name a kernel
// anything, a module loaded at run time included.
bool IsHarness(const ActivitySpan& r, const HarnessMarks& m) {
  return r.stream == m.harness_stream;
}

}  // namespace

CallActivity AttributeCall(const std::vector<ActivitySpan>& records, const CallWindow& w,
                           const HarnessMarks& m) {
  CallActivity a;
  uint64_t first = UINT64_MAX, last = 0;
  std::vector<std::pair<uint64_t, uint64_t>> intervals;
  for (const ActivitySpan& r : records) {
    bool inside = r.start >= w.begin && r.start <= w.end;
    if (!inside) {
      if (!IsHarness(r, m)) {
        ++a.stray;
        AddName(&a.stray_names, r.name);
      }
      continue;
    }
    // The harness launches nothing during a call, so everything in the window is the
    // candidate's, whatever stream or name it carries.
    ++a.records;
    intervals.emplace_back(r.start, std::max(r.start, r.end));
    first = std::min(first, r.start);
    last = std::max(last, r.end);
    if (r.kind == ActivitySpan::Kind::kKernel) ++a.kernels[r.name];
    if (r.stream != m.candidate_stream && r.end > w.end + m.outlive_slack_ns) {
      ++a.outlived;
      a.outlived_by_ns = std::max(a.outlived_by_ns, r.end - w.end);
      AddName(&a.outlived_names, r.name);
    }
  }
  if (a.records > 0 && last > first) a.span_ns = last - first;
  std::sort(intervals.begin(), intervals.end());
  uint64_t run_start = 0, run_end = 0;
  bool open = false;
  for (const auto& [s, e] : intervals) {
    if (open && s <= run_end) {
      run_end = std::max(run_end, e);
      continue;
    }
    if (open) a.busy_ns += run_end - run_start;
    run_start = s;
    run_end = e;
    open = true;
  }
  if (open) a.busy_ns += run_end - run_start;
  return a;
}

nlohmann::json CallActivity::ToJson() const {
  nlohmann::json j = {
      {"span_ns", span_ns}, {"busy_ns", busy_ns}, {"records", records}, {"kernels", kernels}};
  if (outlived) {
    j["outlived"] = outlived;
    j["outlived_by_ns"] = outlived_by_ns;
    j["outlived_names"] = outlived_names;
  }
  if (stray) {
    j["stray"] = stray;
    j["stray_names"] = stray_names;
  }
  return j;
}

std::vector<std::string> ForeignKernels(const std::map<std::string, int>& seen,
                                        const std::vector<std::string>& allowed,
                                        const std::vector<std::string>& forbidden) {
  std::set<std::string> ok(allowed.begin(), allowed.end());
  std::set<std::string> bad(forbidden.begin(), forbidden.end());
  std::vector<std::string> foreign;
  for (const auto& [name, count] : seen)
    if (!ok.count(name) || bad.count(name)) foreign.push_back(name);
  return foreign;
}

}  // namespace ptxbench

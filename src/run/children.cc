#include "run/children.h"

#include "common/files.h"
#include "common/strings.h"
#include "run/channel.h"

namespace ptxbench {

const nlohmann::json* ChildOutcome::First(const std::string& event) const {
  for (const auto& m : messages)
    if (m.value("event", "") == event) return &m;
  return nullptr;
}

const nlohmann::json* ChildOutcome::Last(const std::string& event) const {
  for (auto it = messages.rbegin(); it != messages.rend(); ++it)
    if (it->value("event", "") == event) return &*it;
  return nullptr;
}

std::vector<const nlohmann::json*> ChildOutcome::All(const std::string& event) const {
  std::vector<const nlohmann::json*> v;
  for (const auto& m : messages)
    if (m.value("event", "") == event) v.push_back(&m);
  return v;
}

ChildOutcome RunChild(const ChildRequest& r) {
  std::string spec_path = r.work_dir + "/" + r.name + ".spec.json";
  WriteFileAtomic(spec_path, r.spec.dump(2));
  ProcessSpec p;
  p.argv = r.wrapper;
  p.argv.push_back(r.executable.empty() ? SelfExecutable() : r.executable);
  p.argv.push_back("__child");
  p.argv.push_back(spec_path);
  p.log_path = r.work_dir + "/" + r.name + ".log";
  p.channel_fd = kChannelFd;
  Child child = Child::Start(p);
  ChildOutcome o;
  o.exit = child.Wait(std::chrono::steady_clock::now() + r.timeout);
  o.messages = ParseChannel(child.channel_lines(), &o.garbage);
  o.log_path = p.log_path;
  try {
    o.log_tail = TailLines(ReadFile(p.log_path), 40);
  } catch (const std::exception&) {
  }
  return o;
}

}  // namespace ptxbench

// The child → parent channel: one JSON object per line on a dedicated descriptor.
// Bulk data (inputs, outputs) never travels here; children write it to files in a private
// scratch folder and name the files in their messages.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ptxbench {

// The descriptor number children write to; fixed so that no argument can point it at stdout.
constexpr int kChannelFd = 3;
// The descriptor children read the parent's instructions from (the control pipe).
constexpr int kControlFd = 4;

class ChannelWriter {
 public:
  explicit ChannelWriter(int fd) : fd_(fd) {}
  // Writes the message and a newline in one write(2), so that messages never interleave.
  void Send(const nlohmann::json& message);

 private:
  int fd_;
};

// Reads one line (without its newline) from the parent's control descriptor, waiting at most
// `timeout_ms`; empty when the parent closed it or said nothing in time.
std::string ReadControlLine(int fd, int timeout_ms);

// Parses the lines a child sent; lines that are not JSON objects are returned in `garbage`
// (a candidate may have written to the descriptor) rather than trusted.
std::vector<nlohmann::json> ParseChannel(const std::vector<std::string>& lines,
                                         std::vector<std::string>* garbage);

}  // namespace ptxbench

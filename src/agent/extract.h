// The kernel in a model's reply: the last fenced code block tagged cpp, c++, cuda, cu (or
// untagged) that defines `run`. An unterminated final block counts (replies cut at the token
// limit). Nothing found: the turn is spent, and `message` says why, for the model.
#pragma once

#include <string>

namespace ptxbench {

struct Extraction {
  bool found = false;
  std::string code;           // the block's text, without the fences
  std::string tag;            // "cuda", "cpp", "" (untagged), ...
  bool unterminated = false;  // the block ran to the end of the reply
  int blocks = 0;             // fenced blocks seen, of any tag
  int candidates = 0;         // of them, with an accepted tag and defining run
  std::string message;        // when !found: why, addressed to the model
};

Extraction ExtractKernel(const std::string& reply);

}  // namespace ptxbench

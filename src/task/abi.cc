#include "task/abi.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "screen/screen.h"

namespace ptxbench {

std::string ToString(CandidateAbi abi) {
  return abi == CandidateAbi::kTvmFfi ? "tvm-ffi" : "native";
}

std::optional<CandidateAbi> ParseCandidateAbi(std::string_view name) {
  if (name == "native") return CandidateAbi::kNative;
  if (name == "tvm-ffi") return CandidateAbi::kTvmFfi;
  return std::nullopt;
}

std::string EntrySymbol(CandidateAbi abi) {
  return abi == CandidateAbi::kTvmFfi ? "__tvm_ffi_run" : "run";
}

namespace {

bool IdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

size_t SkipSpace(std::string_view s, size_t p) {
  while (p < s.size() && std::isspace(static_cast<unsigned char>(s[p]))) ++p;
  return p;
}

// The identifier at p ("" if none), and p moved past it.
std::string_view Ident(std::string_view s, size_t* p) {
  size_t b = *p;
  if (b >= s.size() || !(IdentChar(s[b]) && !std::isdigit(static_cast<unsigned char>(s[b]))))
    return {};
  size_t e = b;
  while (e < s.size() && IdentChar(s[e])) ++e;
  *p = e;
  return s.substr(b, e - b);
}

// Calls f(position after the word) for each occurrence of `word` as a whole identifier,
// until f returns true; returns whether it did.
template <typename F>
bool ForEachWord(std::string_view s, std::string_view word, F f) {
  for (size_t at = s.find(word); at != std::string_view::npos; at = s.find(word, at + 1)) {
    if (at > 0 && IdentChar(s[at - 1])) continue;
    size_t end = at + word.size();
    if (end < s.size() && IdentChar(s[end])) continue;
    if (f(end)) return true;
  }
  return false;
}

// After `extern "C"` (literal blanked) at p: `int run(` in the declaration that follows,
// with `{` and attribute groups (`__attribute__((...))`, `__declspec(...)`) and other words
// (`__host__`, `inline`) allowed before it.
bool NativeRunAfterExternC(std::string_view s, size_t p) {
  p = SkipSpace(s, p);
  if (p >= s.size() || s[p] != '"') return false;
  p = SkipSpace(s, p + 1);
  if (p >= s.size() || s[p] != '"') return false;
  p = SkipSpace(s, p + 1);
  if (p < s.size() && s[p] == '{') p = SkipSpace(s, p + 1);
  std::string_view previous;
  for (int words = 0; words < 64; ++words) {
    std::string_view word = Ident(s, &p);
    if (word.empty()) return false;
    size_t q = SkipSpace(s, p);
    if (word == "run") return previous == "int" && q < s.size() && s[q] == '(';
    if (word == "__attribute__" || word == "__declspec" || word == "alignas") {
      if (q >= s.size() || s[q] != '(') return false;
      int depth = 0;
      do {
        if (s[q] == '(') ++depth;
        if (s[q] == ')') --depth;
        ++q;
      } while (q < s.size() && depth > 0);
      if (depth != 0) return false;
      q = SkipSpace(s, q);
    }
    previous = word;
    p = q;
  }
  return false;
}

// The closing bracket matching the opening one at `open` (any of ( [ { <... only the three
// kinds), npos when unbalanced.
size_t MatchingClose(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t p = open; p < s.size(); ++p) {
    if (s[p] == '(' || s[p] == '[' || s[p] == '{') ++depth;
    if (s[p] == ')' || s[p] == ']' || s[p] == '}') {
      if (--depth == 0) return p;
    }
  }
  return std::string_view::npos;
}

std::string Trimmed(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// "a, b<c, d>, e" between the parentheses: split at the commas outside brackets.
std::vector<std::string> SplitParameters(std::string_view list) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t p = 0; p <= list.size(); ++p) {
    const char ch = p < list.size() ? list[p] : ',';
    if (ch == '(' || ch == '[' || ch == '{' || ch == '<') ++depth;
    if (ch == ')' || ch == ']' || ch == '}' || ch == '>') --depth;
    if (ch == ',' && depth == 0) {
      std::string one = Trimmed(list.substr(start, p - start));
      if (!one.empty()) out.push_back(one);
      start = p + 1;
    }
  }
  if (out.size() == 1 && out[0] == "void") out.clear();
  return out;
}

// The parameter list of the definition of `name` (`name(...) ... {`), when there is exactly
// one; a declaration or a call (followed by `;` or an operator) is not a definition.
std::optional<std::vector<std::string>> DefinitionParameters(std::string_view code,
                                                             std::string_view name) {
  std::optional<std::vector<std::string>> found;
  int definitions = 0;
  ForEachWord(code, name, [&](size_t p) {
    p = SkipSpace(code, p);
    if (p >= code.size() || code[p] != '(') return false;
    size_t close = MatchingClose(code, p);
    if (close == std::string_view::npos) return false;
    size_t q = SkipSpace(code, close + 1);
    while (q < code.size() && IdentChar(code[q])) {  // noexcept, const, __host__ ...
      size_t w = q;
      Ident(code, &w);
      if (w == q) break;
      q = SkipSpace(code, w);
    }
    if (q < code.size() && code[q] == '{') {
      ++definitions;
      found = SplitParameters(code.substr(p + 1, close - p - 1));
    }
    return false;
  });
  if (definitions != 1) return std::nullopt;
  return found;
}

}  // namespace

bool IsTensorParameter(std::string_view parameter) {
  for (std::string_view word : {"TensorView", "Tensor", "DLTensor"})
    if (ForEachWord(parameter, word, [](size_t) { return true; })) return true;
  return false;
}

std::vector<TvmFfiExport> TvmFfiExports(std::string_view code) {
  std::vector<TvmFfiExport> found;
  ForEachWord(code, "TVM_FFI_DLL_EXPORT_TYPED_FUNC", [&](size_t p) {
    p = SkipSpace(code, p);
    if (p >= code.size() || code[p] != '(') return false;
    p = SkipSpace(code, p + 1);
    const size_t begin = p;
    const std::string_view name = Ident(code, &p);
    if (name.empty()) return false;
    p = SkipSpace(code, p);
    if (p >= code.size() || code[p] != ',') return false;
    found.push_back({std::string(name), begin, p + 1});
    return false;
  });
  return found;
}

std::optional<std::vector<std::string>> TvmFfiRunParameters(std::string_view source) {
  const std::string stripped = StripCommentsAndStrings(source);
  const std::string_view code = stripped;
  std::optional<std::vector<std::string>> params;
  int exports = 0;
  for (const TvmFfiExport& e : TvmFfiExports(code)) {
    if (e.name != "run") continue;
    ++exports;
    size_t p = SkipSpace(code, e.after_comma);
    if (p < code.size() && code[p] == '[') {  // a lambda: [captures](parameters) { ... }
      size_t q = MatchingClose(code, p);
      if (q == std::string_view::npos) continue;
      q = SkipSpace(code, q + 1);
      if (q >= code.size() || code[q] != '(') continue;
      size_t close = MatchingClose(code, q);
      if (close != std::string_view::npos)
        params = SplitParameters(code.substr(q + 1, close - q - 1));
      continue;
    }
    std::string_view name;  // the last part of a qualified name
    while (true) {
      std::string_view part = Ident(code, &p);
      if (part.empty()) break;
      name = part;
      if (p + 1 < code.size() && code[p] == ':' && code[p + 1] == ':')
        p += 2;
      else
        break;
    }
    if (!name.empty()) params = DefinitionParameters(code, name);
  }
  if (exports != 1) return std::nullopt;
  return params;
}

CandidateAbi DetectCandidateAbi(std::string_view source) {
  // Comments gone, literals blanked (`extern "C"` reads `extern " "`): a word in a comment
  // decides nothing.
  const std::string stripped = StripCommentsAndStrings(source);
  const std::string_view code = stripped;
  const std::vector<TvmFfiExport> exports = TvmFfiExports(code);
  const bool exports_tvm_run = std::any_of(exports.begin(), exports.end(),
                                           [](const TvmFfiExport& e) { return e.name == "run"; });
  if (!exports_tvm_run) return CandidateAbi::kNative;
  bool native_run =
      ForEachWord(code, "extern", [&](size_t p) { return NativeRunAfterExternC(code, p); });
  return native_run ? CandidateAbi::kNative : CandidateAbi::kTvmFfi;
}

}  // namespace ptxbench

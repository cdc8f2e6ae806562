#include "task/abi.h"

#include <cctype>

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

}  // namespace

CandidateAbi DetectCandidateAbi(std::string_view source) {
  // Comments gone, literals blanked (`extern "C"` reads `extern " "`): a word in a comment
  // decides nothing.
  const std::string stripped = StripCommentsAndStrings(source);
  const std::string_view code = stripped;
  bool exports_tvm_run = ForEachWord(code, "TVM_FFI_DLL_EXPORT_TYPED_FUNC", [&](size_t p) {
    p = SkipSpace(code, p);
    if (p >= code.size() || code[p] != '(') return false;
    p = SkipSpace(code, p + 1);
    if (Ident(code, &p) != "run") return false;
    p = SkipSpace(code, p);
    return p < code.size() && code[p] == ',';
  });
  if (!exports_tvm_run) return CandidateAbi::kNative;
  bool native_run =
      ForEachWord(code, "extern", [&](size_t p) { return NativeRunAfterExternC(code, p); });
  return native_run ? CandidateAbi::kNative : CandidateAbi::kTvmFfi;
}

}  // namespace ptxbench

// The source screen: a look at a candidate's .cu text, before it is compiled,
// for use of vendor math and kernel libraries (cuBLAS, cuDNN, CUTLASS, ...)
// and for ways around the rule (loading libraries at run time, linker
// directives). A benchmark of hand-written kernels means nothing if a
// candidate hands the work to cuBLAS, so such a source is rejected with a
// finding that names the line, and never reaches the compiler.
//
// What the screen sees: the text after C++ translation phases 1-3 as GCC
// (nvcc's preprocessor) performs them: backslash-newline splices joined,
// comments removed, string and character literals opaque. A forbidden word
// inside a comment or a literal is therefore no finding, but a forbidden
// header name in an #include is, and so is a symbol named inside asm(...),
// __attribute__((alias/weakref(...))) or _Pragma(...) strings, because those
// bind or call symbols even though they are spelled as literals.
//
// The screen also keeps the compiler on toolkit and system headers: an
// #include (#include_next, #import, #embed, __has_include) whose name is a
// path (absolute, `~`, a `..` component, /dev or /proc) is rejected, as is a
// #line that names a path (GCC quotes "source" lines from that file in its
// messages), a `#pragma GCC dependency` that names one (GCC opens it), and an
// string literal holding the assembler's .incbin or .include, or its macro
// directives (.irp, .irpc, .macro, .altmacro), which can spell one from
// pieces. An asm statement's text must be string literals written out (not a
// macro, # or ##: those are "computed asm" findings), `asm` may not be renamed
// by a macro, and a directive spelled in code tokens (`STR(.include "f")`) is
// a finding too. The build's confinement (compile/nvcc.h) is the second wall.
//
// What it does not do: run the preprocessor. Code inside `#if 0` still
// counts (a candidate should not carry library code at all), an include
// whose header is a macro is rejected because the screen cannot tell what it
// names, and identifiers built by token pasting (`a##b`) are not seen. Those
// are left to the build, which links no vendor library.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ptxbench {

// How a ScreenRule's pattern is compared with the source.
enum class ScreenRuleKind {
  // A component of an #include path (split at '/' and '\') starts with the
  // pattern, ignoring case: "cublas" matches <cublas_v2.h> and
  // "/usr/local/cuda/include/cublasLt.h".
  kHeaderPrefix,
  // A component of an #include path equals the pattern, ignoring case.
  kHeaderExact,
  // An identifier starts with the pattern (case matters): "cublas" matches
  // cublasGemmEx and cublas_handle, but not mycublas or cuBLAS.
  kIdentifierPrefix,
  // An identifier equals the pattern: "dlopen".
  kIdentifier,
  // The pattern names a top-level namespace in use: `cute::`, `::cute::`,
  // `using namespace cute`, `namespace x = cute`; but not `a.cute`,
  // `other::cute::` or a plain variable called cute.
  kNamespace,
  // A #pragma (or _Pragma) whose first word equals the pattern.
  kPragma,
};

// One row of the rule table. Rules are tried in table order and the first
// that matches names the library, so narrower patterns come first.
struct ScreenRule {
  ScreenRuleKind kind;
  std::string_view pattern;
  std::string_view library;  // as people know it: "cuBLAS", "run-time loading"
};

// The whole rule table (defined in screen.cc), for documentation and tests.
// Besides these rows, an #include whose operand is neither <...> nor "..."
// is a finding of library "computed #include" (likewise "computed #line"),
// and one whose header name is a path (when no row names its library) is a
// finding of library "file path"; both carry a reason.
std::span<const ScreenRule> ScreenRules();

struct ScreenFinding {
  int line = 0;         // 1-based line in the original source
  std::string library;  // e.g. "cuBLAS", "run-time loading"
  std::string what;     // e.g. "#include <cublas_v2.h>" or "call of cublasGemmEx"
  std::string excerpt;  // the original source line, trimmed, at most 120 bytes
  // Why the finding rejects the source, for findings that are no forbidden
  // library ("includes must name a toolkit or system header, not a path");
  // empty for library findings.
  std::string reason;
};

struct ScreenResult {
  std::vector<ScreenFinding> findings;  // every finding, in line order
  bool passed() const { return findings.empty(); }
  // One line for people, naming the first finding:
  //   line 3: #include <cublas_v2.h> (cuBLAS is forbidden): `#include <cublas_v2.h>`
  // or, for a finding with a reason,
  //   line 3: #include "/etc/passwd": includes must name a toolkit or system header, not a path
  // followed by " (and N more)" when there are several. Empty when passed.
  std::string message() const;
};

// Returns `source` with comments replaced by spaces and the contents of
// string and character literals (raw strings included) replaced by spaces.
// The result has the same length as `source` and every newline in the same
// place, so offsets and line numbers carry over. Literal delimiters and
// prefixes stay (`"   "`, `R"      "`), as do the header names of #include
// directives, which are not literals. Backslash-newline splices stay in code
// and are blanked (all but the newline) inside comments and literals.
std::string StripCommentsAndStrings(std::string_view source);

// Screens one candidate source. Never throws for anything in the source:
// malformed or unterminated constructs are screened as far as they go.
ScreenResult ScreenSource(std::string_view source);

// {"passed": bool, "findings": [{"line", "library", "what", "excerpt"}]}, with
// "reason" in a finding that has one.
// All strings are valid UTF-8 (invalid source bytes become '?').
nlohmann::json ToJson(const ScreenResult& result);

}  // namespace ptxbench

#include "screen/screen.h"

#include "common/strings.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace ptxbench {
namespace {

using K = ScreenRuleKind;

// The rule table. Decisions behind it:
// - Identifier prefixes are the libraries' own API prefixes, matched with
//   case, and only at the start of an identifier: every cuBLAS symbol starts
//   with cublas/CUBLAS, while a candidate's own `my_cublas_count` or
//   `mycublas` is not a use of cuBLAS. A candidate's `cublas_like_gemm` does
//   start with the prefix and is rejected; that name invites the question.
// - cuRAND is forbidden whole, device-side curand_kernel.h included: inputs
//   come from the harness, so a kernel has no use for a random generator.
// - Namespaces (cutlass, cute, torch, at, ...) count only as top-level
//   qualifiers, because `at` and `cute` are fine names for a variable.
// - Header rules ignore case: on a case-insensitive file system <CUBLAS_V2.H>
//   would still be found, and no allowed CUDA or CCCL header collides.
// - FlashAttention has no API prefix of its own (its namespace `flash` is a
//   natural name for a candidate's own code); its headers are caught, and
//   it cannot be used without CUTLASS/CuTe headers, which are caught too.
constexpr ScreenRule kRules[] = {
    // cuBLAS and cuBLASLt (cuBLASXt, cuBLASMp and cuBLASDx share the prefix).
    {K::kHeaderPrefix, "cublaslt", "cuBLASLt"},
    {K::kHeaderPrefix, "cublas", "cuBLAS"},
    {K::kHeaderPrefix, "nvblas", "cuBLAS"},
    {K::kIdentifierPrefix, "cublasLt", "cuBLASLt"},
    {K::kIdentifierPrefix, "CUBLASLT", "cuBLASLt"},
    {K::kIdentifierPrefix, "cublas", "cuBLAS"},
    {K::kIdentifierPrefix, "CUBLAS", "cuBLAS"},
    // cuDNN (the cudnn_frontend namespace shares the prefix).
    {K::kHeaderPrefix, "cudnn", "cuDNN"},
    {K::kIdentifierPrefix, "cudnn", "cuDNN"},
    {K::kIdentifierPrefix, "CUDNN", "cuDNN"},
    // cuFFT (cudalibxt.h is cuFFTXt's descriptor header).
    {K::kHeaderPrefix, "cufft", "cuFFT"},
    {K::kHeaderExact, "cudalibxt.h", "cuFFT"},
    {K::kIdentifierPrefix, "cufft", "cuFFT"},
    {K::kIdentifierPrefix, "CUFFT", "cuFFT"},
    {K::kIdentifierPrefix, "cudaLibXt", "cuFFT"},
    // cuSPARSE and cuSPARSELt.
    {K::kHeaderPrefix, "cusparselt", "cuSPARSELt"},
    {K::kHeaderPrefix, "cusparse", "cuSPARSE"},
    {K::kIdentifierPrefix, "cusparseLt", "cuSPARSELt"},
    {K::kIdentifierPrefix, "CUSPARSELT", "cuSPARSELt"},
    {K::kIdentifierPrefix, "cusparse", "cuSPARSE"},
    {K::kIdentifierPrefix, "CUSPARSE", "cuSPARSE"},
    // cuSOLVER, cuDSS.
    {K::kHeaderPrefix, "cusolver", "cuSOLVER"},
    {K::kIdentifierPrefix, "cusolver", "cuSOLVER"},
    {K::kIdentifierPrefix, "CUSOLVER", "cuSOLVER"},
    {K::kHeaderPrefix, "cudss", "cuDSS"},
    {K::kIdentifierPrefix, "cudss", "cuDSS"},
    {K::kIdentifierPrefix, "CUDSS", "cuDSS"},
    // cuRAND, host library and device API alike.
    {K::kHeaderPrefix, "curand", "cuRAND"},
    {K::kIdentifierPrefix, "curand", "cuRAND"},
    {K::kIdentifierPrefix, "CURAND", "cuRAND"},
    // cuTENSOR. Case matters here: cuTensorMapEncodeTiled and CUtensorMap
    // are the driver's TMA API, which candidates may use.
    {K::kHeaderPrefix, "cutensor", "cuTENSOR"},
    {K::kIdentifierPrefix, "cutensor", "cuTENSOR"},
    {K::kIdentifierPrefix, "CUTENSOR", "cuTENSOR"},
    // NCCL, NVSHMEM.
    {K::kHeaderPrefix, "nccl", "NCCL"},
    {K::kIdentifierPrefix, "nccl", "NCCL"},
    {K::kIdentifierPrefix, "NCCL", "NCCL"},
    {K::kHeaderPrefix, "nvshmem", "NVSHMEM"},
    {K::kIdentifierPrefix, "nvshmem", "NVSHMEM"},
    {K::kIdentifierPrefix, "NVSHMEM", "NVSHMEM"},
    // NPP has signal reductions (nppsSum...) that would do a task's work.
    {K::kHeaderPrefix, "npp", "NPP"},
    {K::kIdentifierPrefix, "npps", "NPP"},
    {K::kIdentifierPrefix, "nppi", "NPP"},
    {K::kIdentifierPrefix, "nppGetStream", "NPP"},
    {K::kIdentifierPrefix, "nppSetStream", "NPP"},
    {K::kIdentifierPrefix, "Npp", "NPP"},
    {K::kIdentifierPrefix, "NPP_", "NPP"},
    // MAGMA, TensorRT.
    {K::kHeaderPrefix, "magma", "MAGMA"},
    {K::kIdentifierPrefix, "magma_", "MAGMA"},
    {K::kIdentifierPrefix, "magmablas_", "MAGMA"},
    {K::kIdentifierPrefix, "MAGMA_", "MAGMA"},
    {K::kHeaderPrefix, "nvinfer", "TensorRT"},
    {K::kNamespace, "nvinfer1", "TensorRT"},
    // CUTLASS and CuTe.
    {K::kHeaderPrefix, "cutlass", "CUTLASS"},
    {K::kNamespace, "cutlass", "CUTLASS"},
    {K::kIdentifierPrefix, "CUTLASS_", "CUTLASS"},
    {K::kHeaderPrefix, "cute", "CuTe"},
    {K::kNamespace, "cute", "CuTe"},
    {K::kIdentifierPrefix, "CUTE_", "CuTe"},
    // FlashInfer, FlashAttention, ThunderKittens.
    {K::kHeaderPrefix, "flashinfer", "FlashInfer"},
    {K::kNamespace, "flashinfer", "FlashInfer"},
    {K::kIdentifierPrefix, "FLASHINFER_", "FlashInfer"},
    {K::kHeaderPrefix, "flash_attn", "FlashAttention"},
    {K::kHeaderPrefix, "flash_fwd", "FlashAttention"},
    {K::kHeaderPrefix, "flash_bwd", "FlashAttention"},
    {K::kHeaderExact, "flash.h", "FlashAttention"},
    {K::kHeaderPrefix, "kittens", "ThunderKittens"},
    {K::kNamespace, "kittens", "ThunderKittens"},
    // PyTorch (torch, ATen, c10) and Triton.
    {K::kHeaderPrefix, "torch", "PyTorch"},
    {K::kHeaderPrefix, "aten", "PyTorch"},
    {K::kHeaderExact, "c10", "PyTorch"},
    {K::kHeaderPrefix, "caffe2", "PyTorch"},
    {K::kNamespace, "torch", "PyTorch"},
    {K::kNamespace, "at", "PyTorch"},
    {K::kNamespace, "c10", "PyTorch"},
    {K::kHeaderPrefix, "triton", "Triton"},
    {K::kNamespace, "triton", "Triton"},
    // Loading a library at run time gets around every rule above. glibc's
    // private entry points are listed because they need no -ldl.
    {K::kHeaderExact, "dlfcn.h", "run-time loading"},
    {K::kIdentifier, "dlopen", "run-time loading"},
    {K::kIdentifier, "dlmopen", "run-time loading"},
    {K::kIdentifier, "dlsym", "run-time loading"},
    {K::kIdentifier, "dlvsym", "run-time loading"},
    {K::kIdentifier, "__libc_dlopen_mode", "run-time loading"},
    {K::kIdentifier, "__libc_dlsym", "run-time loading"},
    {K::kIdentifier, "__libc_dlvsym", "run-time loading"},
    {K::kIdentifier, "_dl_open", "run-time loading"},
    {K::kIdentifier, "_dl_sym", "run-time loading"},
    {K::kIdentifier, "_dl_vsym", "run-time loading"},
    // The TVM-FFI runtime that upstream-style (tvm-ffi) candidates link loads libraries too:
    // a module from a file (dlopen inside libtvm_ffi.so), or a global function by name (its
    // registry holds the module loader), so neither is for a kernel.
    {K::kIdentifier, "LoadFromFile", "run-time loading"},
    {K::kIdentifier, "GetGlobal", "run-time loading"},
    {K::kIdentifier, "GetGlobalRequired", "run-time loading"},
    {K::kIdentifier, "TVMFFIFunctionGetGlobal", "run-time loading"},
    {K::kIdentifier, "TVMFFIEnvModLookupFromImports", "run-time loading"},
    // `#pragma comment(lib, "cublas")` asks the linker for a library (MSVC,
    // and clang with lld on ELF through .deplibs).
    {K::kPragma, "comment", "linker directive"},
};

constexpr std::string_view kComputedInclude = "computed #include";
constexpr std::string_view kFilePath = "file path";
constexpr std::string_view kPathIncludeReason =
    "includes must name a toolkit or system header, not a path";
constexpr std::string_view kComputedIncludeReason =
    "the file a macro names cannot be judged before preprocessing";
constexpr std::string_view kAsmFileReason =
    "assembler directives that read files (.incbin, .include) are not allowed";
constexpr std::string_view kAsmMacroReason =
    "assembler macros (.irp, .irpc, .macro) can spell a file directive and are not allowed";
constexpr std::string_view kObjectSection = "object section";
constexpr std::string_view kObjectSectionReason =
    "placing bytes in a section of one's choosing (.nv_fatbin among them) can forge the device "
    "code the disassembler reads as the candidate's";
constexpr std::string_view kComputedAsm = "computed asm";
constexpr std::string_view kComputedAsmReason =
    "an asm statement's text must be written out as string literals (a macro, # or ## can "
    "spell an assembler directive the screen cannot see)";
constexpr std::string_view kPathLineReason =
    "a #line file name must be a plain name, not a path (compilers quote from that file)";

// ---------------------------------------------------------------------------
// Characters.

bool IsHorizontalSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}
bool IsSpace(char c) { return IsHorizontalSpace(c) || c == '\n'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
// GCC accepts '$' and (UTF-8) non-ASCII letters in identifiers; counting them
// keeps `my$cublas` one identifier, as the compiler sees it.
bool IsIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// ---------------------------------------------------------------------------
// Phase 2: line splicing, with a map back to the original offsets.

struct Splice {
  size_t at;  // the splice was removed just before text[at]
  size_t orig_begin;
  size_t orig_end;  // one past its newline
};

struct Spliced {
  std::string text;
  std::vector<size_t> orig;  // orig[k]: offset in the source of text[k]
  std::vector<Splice> splices;
};

// Like GCC, a backslash followed by horizontal whitespace and a newline is a
// splice too (GCC warns, but joins the lines).
Spliced SpliceLines(std::string_view src) {
  Spliced out;
  out.text.reserve(src.size());
  out.orig.reserve(src.size());
  size_t i = 0;
  while (i < src.size()) {
    if (src[i] == '\\') {
      size_t j = i + 1;
      while (j < src.size() && IsHorizontalSpace(src[j])) ++j;
      if (j < src.size() && src[j] == '\n') {
        out.splices.push_back({out.text.size(), i, j + 1});
        i = j + 1;
        continue;
      }
    }
    out.text.push_back(src[i]);
    out.orig.push_back(i);
    ++i;
  }
  return out;
}

// Whether a splice lies between text[a] and text[b] (a < b), which matters
// only for raw strings, where splices are undone.
bool SpliceBetween(const Spliced& sp, size_t a, size_t b) {
  auto it = std::upper_bound(sp.splices.begin(), sp.splices.end(), a,
                             [](size_t v, const Splice& s) { return v < s.at; });
  return it != sp.splices.end() && it->at <= b;
}

// ---------------------------------------------------------------------------
// Phase 3: comments and literals.

struct Literal {
  size_t begin;  // content range in the spliced text, delimiters excluded
  size_t end;
  bool raw;
};

struct Lexed {
  std::string code;         // the spliced text with comments and literal contents blanked
  std::vector<char> blank;  // 1 where code[k] was blanked
  std::vector<Literal> literals;
};

bool IsRawPrefix(std::string_view w) {
  return w == "R" || w == "u8R" || w == "uR" || w == "UR" || w == "LR";
}

class Lexer {
 public:
  explicit Lexer(const Spliced& sp) : sp_(sp), t_(sp.text), n_(sp.text.size()) {
    out_.code = t_;
    out_.blank.assign(n_, 0);
  }

  // One pass over the text; call once, it hands over its result.
  Lexed Run() {
    // Directive tracking exists only to read #include header names whole:
    // </usr/include//cublas_v2.h> holds "//" that is no comment.
    enum class Dir { kNone, kHash, kExpectHeader };
    bool line_start = true;
    Dir dir = Dir::kNone;
    size_t i = 0;
    while (i < n_) {
      const char c = t_[i];
      if (c == '\n') {
        line_start = true;
        dir = Dir::kNone;
        ++i;
        continue;
      }
      if (IsHorizontalSpace(c)) {
        ++i;
        continue;
      }
      if (c == '/' && i + 1 < n_ && t_[i + 1] == '/') {
        while (i < n_ && t_[i] != '\n') Blank(i++);
        continue;
      }
      if (c == '/' && i + 1 < n_ && t_[i + 1] == '*') {
        Blank(i);
        Blank(i + 1);
        i += 2;
        while (i < n_ && !(t_[i] == '*' && i + 1 < n_ && t_[i + 1] == '/')) {
          // The later line-based directive pass sees this newline, so the
          // lexer treats it as one too, and both agree on what a directive is.
          if (t_[i] == '\n') {
            line_start = true;
            dir = Dir::kNone;
          }
          Blank(i++);
        }
        if (i < n_) {
          Blank(i);
          Blank(i + 1);
          i += 2;
        }
        continue;
      }
      const bool at_line_start = line_start;
      line_start = false;
      const Dir prev_dir = dir;
      dir = Dir::kNone;
      if (prev_dir == Dir::kExpectHeader && (c == '<' || c == '"')) {
        const char close = c == '<' ? '>' : '"';
        ++i;
        while (i < n_ && t_[i] != '\n' && t_[i] != close) ++i;
        if (i < n_ && t_[i] == close) ++i;
        continue;
      }
      if (at_line_start && (c == '#' || (c == '%' && i + 1 < n_ && t_[i + 1] == ':'))) {
        dir = Dir::kHash;
        i += c == '#' ? 1 : 2;
        continue;
      }
      if (IsIdentStart(c)) {
        const size_t b = i;
        while (i < n_ && IsIdentChar(t_[i])) ++i;
        const std::string_view word(t_.data() + b, i - b);
        if (prev_dir == Dir::kHash &&
            (word == "include" || word == "include_next" || word == "import" || word == "embed")) {
          dir = Dir::kExpectHeader;
        } else if (i < n_ && t_[i] == '"' && IsRawPrefix(word)) {
          i = RawString(i);
        }
        continue;
      }
      if (IsDigit(c) || (c == '.' && i + 1 < n_ && IsDigit(t_[i + 1]))) {
        i = PpNumber(i);
        continue;
      }
      if (c == '"' || c == '\'') {
        i = Quoted(i);
        continue;
      }
      ++i;
    }
    return std::move(out_);
  }

 private:
  void Blank(size_t k) {
    if (t_[k] != '\n') out_.code[k] = ' ';
    out_.blank[k] = 1;
  }

  // A pp-number, so that the digit separator in 1'000'000 opens no literal.
  size_t PpNumber(size_t i) {
    while (i < n_) {
      const char c = t_[i];
      if ((c == 'e' || c == 'E' || c == 'p' || c == 'P') && i + 1 < n_ &&
          (t_[i + 1] == '+' || t_[i + 1] == '-')) {
        i += 2;
      } else if (IsIdentChar(c) || c == '.') {
        ++i;
      } else if (c == '\'' && i + 1 < n_ && IsIdentChar(t_[i + 1])) {
        i += 2;
      } else {
        break;
      }
    }
    return i;
  }

  // An ordinary string or character literal opening at t_[i]. It ends at its
  // closing quote or, unterminated, before the newline (as GCC recovers).
  size_t Quoted(size_t i) {
    const char quote = t_[i++];
    const size_t begin = i;
    while (i < n_ && t_[i] != '\n' && t_[i] != quote) {
      if (t_[i] == '\\' && i + 1 < n_ && t_[i + 1] != '\n') Blank(i++);
      Blank(i++);
    }
    out_.literals.push_back({begin, i, false});
    if (i < n_ && t_[i] == quote) ++i;
    return i;
  }

  // A raw string whose opening quote is t_[i]. A malformed delimiter makes it
  // an ordinary string, which is what the compiler's error recovery sees too.
  size_t RawString(size_t i) {
    size_t j = i + 1;
    while (j < n_ && j - (i + 1) <= 16 && t_[j] != '(' && t_[j] != ')' && t_[j] != '\\' &&
           t_[j] != '"' && !IsSpace(t_[j])) {
      ++j;
    }
    if (j >= n_ || t_[j] != '(' || j - (i + 1) > 16 || SpliceBetween(sp_, i, j)) {
      return Quoted(i);
    }
    const std::string_view delim(t_.data() + i + 1, j - (i + 1));
    const size_t begin = j + 1;
    size_t end = n_;  // unterminated: the rest of the file
    for (size_t p = t_.find(')', begin); p != std::string::npos; p = t_.find(')', p + 1)) {
      const size_t q = p + 1 + delim.size();  // where the closing quote must be
      if (q < n_ && t_[q] == '"' && t_.compare(p + 1, delim.size(), delim) == 0 &&
          !SpliceBetween(sp_, p, q)) {
        end = p;
        break;
      }
    }
    const size_t close = end == n_ ? n_ : end + 1 + delim.size();  // the closing quote
    for (size_t k = i + 1; k < close; ++k) Blank(k);
    out_.literals.push_back({begin, end, true});
    return close == n_ ? n_ : close + 1;
  }

  const Spliced& sp_;
  const std::string& t_;
  const size_t n_;
  Lexed out_;
};

// ---------------------------------------------------------------------------
// Tokens of the blanked text: enough to tell identifiers, `::`, `->` and
// brackets apart.

struct Token {
  size_t begin;
  size_t end;
  bool ident;
};

std::vector<Token> Tokenize(std::string_view s) {
  std::vector<Token> toks;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    const size_t b = i;
    if (IsSpace(c)) {
      ++i;
      continue;
    }
    if (IsIdentStart(c)) {
      while (i < s.size() && IsIdentChar(s[i])) ++i;
      toks.push_back({b, i, true});
    } else if (IsDigit(c)) {
      // Numbers are skipped whole so that 1e5cublas is no identifier.
      while (i < s.size() && (IsIdentChar(s[i]) || s[i] == '.')) ++i;
      toks.push_back({b, i, false});
    } else if (i + 1 < s.size() &&
               ((c == ':' && s[i + 1] == ':') || (c == '-' && s[i + 1] == '>'))) {
      i += 2;
      toks.push_back({b, i, false});
    } else {
      ++i;
      toks.push_back({b, i, false});
    }
  }
  return toks;
}

std::string_view Text(std::string_view s, const Token& t) {
  return s.substr(t.begin, t.end - t.begin);
}

// A raw finding, before it is placed on a line.
struct Hit {
  size_t pos;  // in the spliced text
  std::string library;
  std::string what;
  std::string reason = {};  // see ScreenFinding::reason
};

// Keywords that may stand right before a global `::name`.
bool IsKeyword(std::string_view w) {
  static constexpr std::string_view kKeywords[] = {
      "return", "typename",  "new",       "delete",   "throw",  "case",    "else",
      "do",     "co_return", "co_yield",  "co_await", "sizeof", "alignof", "decltype",
      "using",  "const",     "constexpr", "static",   "inline", "extern",  "volatile",
      "auto",   "void",      "int",       "unsigned", "float",  "double",  "char",
      "bool",   "long",      "short",     "signed",   "friend", "virtual", "typedef"};
  return std::find(std::begin(kKeywords), std::end(kKeywords), w) != std::end(kKeywords);
}

class IdentifierMatcher {
 public:
  IdentifierMatcher(std::string_view s, const std::vector<Token>& toks) : s_(s), toks_(toks) {}

  // The rule that token k matches, with its description, if any.
  const ScreenRule* Match(size_t k, std::string* what) const {
    const std::string_view word = Text(s_, toks_[k]);
    for (const ScreenRule& rule : kRules) {
      bool hit = false;
      switch (rule.kind) {
        case K::kIdentifierPrefix:
          hit = word.starts_with(rule.pattern);
          break;
        case K::kIdentifier:
          hit = word == rule.pattern;
          break;
        case K::kNamespace:
          hit = word == rule.pattern && NamespaceUse(k, what);
          break;
        default:
          break;
      }
      if (!hit) continue;
      if (rule.kind != K::kNamespace) {
        *what = (Is(k + 1, "(") ? "call of " : "use of ") + std::string(word);
      }
      return &rule;
    }
    return nullptr;
  }

 private:
  bool Is(size_t k, std::string_view text) const {
    return k < toks_.size() && Text(s_, toks_[k]) == text;
  }
  bool IsIdentAt(size_t k) const { return k < toks_.size() && toks_[k].ident; }

  bool NamespaceUse(size_t k, std::string* what) const {
    const std::string word(Text(s_, toks_[k]));
    // `using namespace cute;`, `namespace cute {`, `namespace c = cute;`.
    if (k >= 1 && Is(k - 1, "namespace")) {
      *what = "namespace " + word;
      return true;
    }
    if (k >= 3 && Is(k - 1, "=") && IsIdentAt(k - 2) && Is(k - 3, "namespace")) {
      *what = "namespace alias of " + word;
      return true;
    }
    if (!Is(k + 1, "::")) return false;
    if (k >= 1 && (Is(k - 1, ".") || Is(k - 1, "->"))) return false;
    // other::cute:: is someone else's nested namespace; ::cute:: is the
    // global one, also after a keyword (`return ::cute::x`). Without the
    // C++ grammar, "nested" is read as a name or `>` written right against
    // the `::`, which is how nested names are written.
    if (k >= 2 && Is(k - 1, "::") && toks_[k - 2].end == toks_[k - 1].begin &&
        (Is(k - 2, ">") || (IsIdentAt(k - 2) && !IsKeyword(Text(s_, toks_[k - 2]))))) {
      return false;
    }
    *what = "use of " + word + "::";
    return true;
  }

  std::string_view s_;
  const std::vector<Token>& toks_;
};

// ---------------------------------------------------------------------------
// Directives, read line by line from the blanked text.

struct DirectiveScan {
  std::vector<Hit> hits;
  std::string code;  // the blanked text with include, #error and #warning lines blanked too
};

size_t SkipHorizontal(std::string_view s, size_t i, size_t end) {
  while (i < end && IsHorizontalSpace(s[i])) ++i;
  return i;
}

const ScreenRule* MatchHeader(std::string_view header) {
  size_t i = 0;
  while (i <= header.size()) {
    size_t j = header.find_first_of("/\\", i);
    if (j == std::string_view::npos) j = header.size();
    const std::string part = Lower(header.substr(i, j - i));
    if (!part.empty()) {
      for (const ScreenRule& rule : kRules) {
        if ((rule.kind == K::kHeaderPrefix && part.starts_with(rule.pattern)) ||
            (rule.kind == K::kHeaderExact && part == rule.pattern)) {
          return &rule;
        }
      }
    }
    i = j + 1;
  }
  return nullptr;
}

std::string_view TrimHorizontal(std::string_view s) {
  while (!s.empty() && IsHorizontalSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsHorizontalSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Whether a header name reaches out of the include search path: an absolute path (/dev, /proc
// and /sys among them), a home folder (~), a ".." component, or a name whose first component
// is dev or proc (no toolkit or system header lives there). Both separators count, as in
// MatchHeader.
bool IsPathHeader(std::string_view header) {
  header = TrimHorizontal(header);
  if (header.empty()) return false;
  if (header.front() == '/' || header.front() == '\\' || header.front() == '~') return true;
  size_t i = 0;
  while (i <= header.size()) {
    size_t j = header.find_first_of("/\\", i);
    if (j == std::string_view::npos) j = header.size();
    const std::string_view part = header.substr(i, j - i);
    if (part == "..") return true;
    if (i == 0 && j < header.size() && (part == "dev" || part == "proc")) return true;
    i = j + 1;
  }
  return false;
}

// Whether the file name of a #line directive (a string literal, escapes not decoded) is more
// than a plain name in the compiler's working folder. GCC reads that file to quote "source"
// lines in its diagnostics, so `#line 1 "/etc/passwd"` would print the file's lines.
bool IsPathLineFile(std::string_view name) {
  name = TrimHorizontal(name);
  return name.find_first_of("/\\") != std::string_view::npos || name.starts_with("~") ||
         name == "..";
}

const ScreenRule* MatchPragma(std::string_view word) {
  for (const ScreenRule& rule : kRules) {
    if (rule.kind == K::kPragma && word == rule.pattern) return &rule;
  }
  return nullptr;
}

std::string Collapse(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (IsSpace(c)) {
      if (!out.empty() && out.back() != ' ') out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// `code` is the blanked text, `raw` the spliced text it was made from (same length), where
// the file names of #line directives, which the lexer blanked as literals, can be read.
DirectiveScan ScanDirectives(std::string_view code, std::string_view raw) {
  DirectiveScan out;
  out.code = std::string(code);
  size_t ls = 0;
  while (ls < code.size()) {
    size_t le = code.find('\n', ls);
    if (le == std::string_view::npos) le = code.size();
    size_t i = SkipHorizontal(code, ls, le);
    const size_t hash = i;
    bool directive = false;
    if (i < le && code[i] == '#') {
      directive = true;
      ++i;
    } else if (i + 1 < le && code[i] == '%' && code[i + 1] == ':') {
      directive = true;
      i += 2;
    }
    if (directive) {
      i = SkipHorizontal(code, i, le);
      size_t ne = i;
      while (ne < le && IsIdentChar(code[ne])) ++ne;
      const std::string_view name = code.substr(i, ne - i);
      bool hide = false;
      if (name == "include" || name == "include_next" || name == "import" || name == "embed") {
        hide = true;
        size_t h = SkipHorizontal(code, ne, le);
        if (h < le && (code[h] == '<' || code[h] == '"')) {
          const char open = code[h];
          const char close = open == '<' ? '>' : '"';
          // Looked for on this line only; an unclosed name runs to its end.
          size_t he = code.substr(0, le).find(close, h + 1);
          if (he == std::string_view::npos) he = le;
          const std::string_view header = code.substr(h + 1, he - h - 1);
          const std::string what =
              "#" + std::string(name) + " " + open + std::string(header) + close;
          // One finding per directive: a library's name says more than its path does.
          if (const ScreenRule* rule = MatchHeader(header)) {
            out.hits.push_back({hash, std::string(rule->library), what});
          } else if (IsPathHeader(header)) {
            out.hits.push_back(
                {hash, std::string(kFilePath), what, std::string(kPathIncludeReason)});
          }
        } else if (h < le) {
          out.hits.push_back({hash, std::string(kComputedInclude),
                              "#" + std::string(name) + " " + Collapse(code.substr(h, le - h)),
                              std::string(kComputedIncludeReason)});
        }
      } else if (name == "line" || (!name.empty() && IsDigit(name.front()))) {
        // `#line 7 "name"` and GCC's line markers `# 7 "name" 1`.
        const bool marker = name != "line";
        const std::string directive = marker ? "#" : "#line";
        const size_t ns = marker ? i : SkipHorizontal(code, ne, le);
        size_t n = ns;
        while (n < le && (IsIdentChar(code[n]) || code[n] == '\'')) ++n;
        bool plain = n > ns && std::all_of(code.begin() + static_cast<std::ptrdiff_t>(ns),
                                           code.begin() + static_cast<std::ptrdiff_t>(n),
                                           [](char c) { return IsDigit(c) || c == '\''; });
        const size_t f = SkipHorizontal(code, n, le);
        if (plain && f < le && code[f] == '"') {
          // The literal's contents are blank in `code`; its closing quote is not.
          size_t fe = code.substr(0, le).find('"', f + 1);
          if (fe == std::string_view::npos) fe = le;
          const std::string_view file = raw.substr(f + 1, fe - f - 1);
          if (IsPathLineFile(file)) {
            out.hits.push_back({hash, std::string(kFilePath),
                                directive + " " + std::string(code.substr(ns, n - ns)) + " \"" +
                                    std::string(file) + "\"",
                                std::string(kPathLineReason)});
          }
        } else if (f < le || (!plain && n > ns)) {
          // A macro could supply the file name; its value is not judged here.
          out.hits.push_back({hash, "computed #line",
                              directive + " " + Collapse(code.substr(ns, le - ns)),
                              std::string(kComputedIncludeReason)});
        }
      } else if (name == "error" || name == "warning") {
        // Their text is a message for people, never code.
        hide = true;
      } else if (name == "pragma") {
        size_t w = SkipHorizontal(code, ne, le);
        size_t we = w;
        while (we < le && IsIdentChar(code[we])) ++we;
        if (const ScreenRule* rule = MatchPragma(code.substr(w, we - w))) {
          out.hits.push_back(
              {hash, std::string(rule->library), "#pragma " + std::string(rule->pattern)});
        } else if (code.substr(w, we - w) == "GCC") {
          // `#pragma GCC dependency "file"` opens the file (a FIFO blocks the compiler).
          size_t d = SkipHorizontal(code, we, le);
          size_t de = d;
          while (de < le && IsIdentChar(code[de])) ++de;
          const size_t h = SkipHorizontal(code, de, le);
          if (code.substr(d, de - d) == "dependency" && h < le) {
            const std::string what = "#pragma GCC dependency";
            if (code[h] == '"' || code[h] == '<') {
              // A "..." name is a literal (blank in `code` but for its quotes); in <...> the
              // lexer may have taken "//" for a comment: the name is read from `raw`.
              const char close = code[h] == '<' ? '>' : '"';
              size_t he = close == '"' ? code.substr(0, le).find('"', h + 1)
                                       : raw.substr(0, le).find('>', h + 1);
              if (he == std::string_view::npos) he = le;
              const std::string_view file = raw.substr(h + 1, he - h - 1);
              if (IsPathHeader(file)) {
                out.hits.push_back({hash, std::string(kFilePath),
                                    what + " " + code[h] + std::string(file) + close,
                                    std::string(kPathIncludeReason)});
              }
            } else {
              out.hits.push_back({hash, std::string(kComputedInclude),
                                  what + " " + Collapse(code.substr(h, le - h)),
                                  std::string(kComputedIncludeReason)});
            }
          }
        }
      }
      if (hide) std::fill(out.code.begin() + ls, out.code.begin() + le, ' ');
    }
    ls = le + 1;
  }
  return out;
}

// __has_include(<name>), __has_include("name") (and __has_include_next, __has_embed) tell
// whether a file exists, so a path there probes the machine: judged like an #include.
void ScanHasInclude(std::string_view raw, std::string_view code, const std::vector<Token>& toks,
                    std::vector<Hit>* hits) {
  for (size_t k = 0; k + 1 < toks.size(); ++k) {
    if (!toks[k].ident) continue;
    const std::string_view word = Text(code, toks[k]);
    if (word != "__has_include" && word != "__has_include_next" && word != "__has_embed") {
      continue;
    }
    if (Text(code, toks[k + 1]) != "(") continue;
    size_t p = toks[k + 1].end;
    while (p < code.size() && IsSpace(code[p])) ++p;
    if (p >= code.size() || code[p] == ')') continue;
    size_t le = raw.find('\n', p);
    if (le == std::string_view::npos) le = raw.size();
    if (code[p] == '"' || code[p] == '<') {
      const char close = code[p] == '<' ? '>' : '"';
      // A "..." name is a literal to the lexer: blank in `code` but for its closing quote. In a
      // <...> name the lexer may have taken "//" for a comment, so the raw text is read.
      size_t e =
          close == '"' ? code.substr(0, le).find('"', p + 1) : raw.substr(0, le).find('>', p + 1);
      if (e == std::string_view::npos) e = le;
      const std::string_view name = raw.substr(p + 1, e - p - 1);
      if (IsPathHeader(name)) {
        hits->push_back({toks[k].begin, std::string(kFilePath),
                         std::string(word) + "(" + code[p] + std::string(name) + close + ")",
                         std::string(kPathIncludeReason)});
      }
    } else {
      size_t e = code.substr(0, le).find(')', p);
      if (e == std::string_view::npos) e = le;
      hits->push_back({toks[k].begin, std::string(kComputedInclude),
                       std::string(word) + "(" + Collapse(code.substr(p, e - p)) + ")",
                       std::string(kComputedIncludeReason)});
    }
  }
}

// ---------------------------------------------------------------------------
// Symbols named by strings: asm labels and asm bodies, alias and weakref
// attributes, and _Pragma. `void* f(const char*, int) __asm__("dlopen");`
// calls dlopen under another name, so these strings are read.

// The value of an ordinary literal's contents, as far as it matters here.
std::string Decode(std::string_view s) {
  std::string out;
  size_t i = 0;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  while (i < s.size()) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      out.push_back(s[i++]);
      continue;
    }
    const char e = s[i + 1];
    i += 2;
    switch (e) {
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'x': {
        uint32_t v = 0;
        while (i < s.size() && hex(s[i]) >= 0) v = v * 16 + static_cast<uint32_t>(hex(s[i++]));
        out.push_back(static_cast<char>(v & 0xff));
        break;
      }
      case 'u':
      case 'U': {
        uint32_t v = 0;
        const size_t digits = e == 'u' ? 4 : 8;
        for (size_t d = 0; d < digits && i < s.size() && hex(s[i]) >= 0; ++d) {
          v = v * 16 + static_cast<uint32_t>(hex(s[i++]));
        }
        // Only ASCII can spell a C symbol; the rest just separates words.
        out.push_back(v < 0x80 ? static_cast<char>(v) : ' ');
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          uint32_t v = static_cast<uint32_t>(e - '0');
          for (int d = 0; d < 2 && i < s.size() && s[i] >= '0' && s[i] <= '7'; ++d) {
            v = v * 8 + static_cast<uint32_t>(s[i++] - '0');
          }
          out.push_back(static_cast<char>(v & 0xff));
        } else {
          out.push_back(e);  // \\ \" \' \? and the rest stand for themselves or a space
        }
    }
  }
  return out;
}

// Assembler directives that read a file, or that can compose one from pieces (GNU as
// substitutes .irp/.irpc/.macro arguments into any word: `.irp d,clude` then `.in\d`).
struct AsmDirective {
  std::string_view name;
  std::string_view library;  // the finding's kind
  std::string_view reason;
};
constexpr AsmDirective kAsmDirectives[] = {
    {".incbin", kFilePath, kAsmFileReason},
    {".include", kFilePath, kAsmFileReason},
    {".irpc", kFilePath, kAsmMacroReason},
    {".irp", kFilePath, kAsmMacroReason},
    {".macro", kFilePath, kAsmMacroReason},
    {".altmacro", kFilePath, kAsmMacroReason},
    {".section", kObjectSection, kObjectSectionReason},
    {".pushsection", kObjectSection, kObjectSectionReason},
};

// The first of kAsmDirectives that `text` (a literal's value) holds as a directive: after a
// line start, space, ';' or a label's ':', and followed by space, a quote or the end.
const AsmDirective* FindAsmDirective(std::string_view text, size_t* at_out) {
  const std::string lower = Lower(text);
  for (const AsmDirective& d : kAsmDirectives) {
    for (size_t at = lower.find(d.name); at != std::string::npos; at = lower.find(d.name, at + 1)) {
      const size_t after = at + d.name.size();
      const char before = at == 0 ? ' ' : lower[at - 1];
      const bool starts = IsSpace(before) || before == ';' || before == ':';
      const bool ends = after >= lower.size() || IsSpace(lower[after]) || lower[after] == '"';
      if (starts && ends) {
        *at_out = at;
        return &d;
      }
    }
  }
  return nullptr;
}

bool IsAsmKeyword(std::string_view w) { return w == "asm" || w == "__asm" || w == "__asm__"; }

bool IsSymbolContext(std::string_view w) {
  return w == "asm" || w == "__asm" || w == "__asm__" || w == "alias" || w == "__alias__" ||
         w == "weakref" || w == "__weakref__" || w == "symver" || w == "__symver__" ||
         w == "_Pragma";
}

bool IsAsmQualifier(std::string_view w) {
  return w == "volatile" || w == "__volatile__" || w == "__volatile" || w == "inline" ||
         w == "__inline__" || w == "goto";
}

// Whether token `k` of `code` is part of a string literal: a quote, or an encoding or raw
// prefix written right before one (u8"...", R"(...)").
bool IsLiteralToken(std::string_view code, const std::vector<Token>& toks, size_t k) {
  const std::string_view t = Text(code, toks[k]);
  if (t == "\"") return true;
  if (!toks[k].ident || toks[k].end >= code.size() || code[toks[k].end] != '"') return false;
  return t == "u8" || t == "u" || t == "U" || t == "L" || IsRawPrefix(t);
}

// Appends to `ranges` the spliced-text range [from, to) of each asm(...) and other symbol
// context, so that their literals are judged joined (ScanSymbolStrings) and not one by one.
void ScanSymbolStrings(const Spliced& sp, const Lexed& lx, std::string_view code,
                       const std::vector<Token>& toks, std::vector<Hit>* hits,
                       std::vector<std::pair<size_t, size_t>>* ranges) {
  for (size_t k = 0; k < toks.size(); ++k) {
    if (!toks[k].ident) continue;
    const std::string_view context = Text(code, toks[k]);
    // __attribute__((section(".nv_fatbin"))) or [[gnu::section(...)]] on a variable.
    if ((context == "section" || context == "__section__") && k > 0 && k + 1 < toks.size() &&
        Text(code, toks[k + 1]) == "(") {
      const std::string_view before = Text(code, toks[k - 1]);
      if (before == "(" || before == "," || before == "::")
        hits->push_back({toks[k].begin, std::string(kObjectSection),
                         std::string(context) + "(...) attribute",
                         std::string(kObjectSectionReason)});
    }
    if (!IsSymbolContext(context)) continue;
    size_t open = k + 1;
    while (open < toks.size() && toks[open].ident && IsAsmQualifier(Text(code, toks[open]))) {
      ++open;
    }
    if (open >= toks.size() || Text(code, toks[open]) != "(") {
      // `#define ASM asm volatile` hands asm a text the screen never sees with it.
      if (IsAsmKeyword(context)) {
        hits->push_back({toks[k].begin, std::string(kComputedAsm),
                         std::string(context) + " without its text",
                         std::string(kComputedAsmReason)});
      }
      continue;
    }
    size_t close = open;
    for (int depth = 0; close < toks.size(); ++close) {
      const std::string_view t = Text(code, toks[close]);
      if (t == "(") ++depth;
      if (t == ")" && --depth == 0) break;
    }
    const size_t from = toks[open].begin;
    const size_t to = close < toks.size() ? toks[close].begin : code.size();
    ranges->emplace_back(from, to);
    if (IsAsmKeyword(context)) {
      // The template runs to the first ':' (or "::") at the outer level: only literals there.
      int depth = 0;
      for (size_t j = open + 1; j < close && j < toks.size(); ++j) {
        const std::string_view t = Text(code, toks[j]);
        if (depth == 0 && (t == ":" || t == "::")) break;
        if (t == "(" || t == "[" || t == "{") ++depth;
        if (t == ")" || t == "]" || t == "}") --depth;
        if (!IsLiteralToken(code, toks, j)) {
          hits->push_back({toks[j].begin, std::string(kComputedAsm),
                           std::string(context) + "(" + std::string(t) + " ...)",
                           std::string(kComputedAsmReason)});
          break;
        }
      }
    }

    // Join the literals inside: adjacent ones without a gap ("dl" "open" is
    // one string after phase 6), others with a space.
    struct Piece {
      size_t joined_at;
      const Literal* lit;
    };
    std::string joined;
    std::vector<Piece> pieces;
    auto it = std::lower_bound(lx.literals.begin(), lx.literals.end(), from,
                               [](const Literal& l, size_t v) { return l.begin < v; });
    const Literal* prev = nullptr;
    for (; it != lx.literals.end() && it->begin < to; ++it) {
      bool adjacent = prev != nullptr;
      for (size_t p = prev != nullptr ? prev->end : 0; adjacent && p < it->begin; ++p) {
        const char c = code[p];
        if (!(IsSpace(c) || c == '"' || IsIdentChar(c) || lx.blank[p])) adjacent = false;
      }
      if (!adjacent) joined.push_back(' ');
      pieces.push_back({joined.size(), &*it});
      const std::string_view content(sp.text.data() + it->begin, it->end - it->begin);
      joined += it->raw ? std::string(content) : Decode(content);
      prev = &*it;
    }
    if (pieces.empty()) continue;

    auto pos_of = [&](size_t at) {
      auto p = std::upper_bound(pieces.begin(), pieces.end(), at,
                                [](size_t v, const Piece& piece) { return v < piece.joined_at; });
      const Piece& piece = p == pieces.begin() ? pieces.front() : *(p - 1);
      // Raw contents map one to one; decoded ones are placed at their start.
      return piece.lit->raw ? piece.lit->begin + (at - std::min(at, piece.joined_at))
                            : piece.lit->begin;
    };
    if (context == "_Pragma") {
      // The string is a #pragma line, with comments and literals of its own.
      for (const ScreenFinding& f : ScreenSource("#pragma " + joined).findings) {
        hits->push_back({pos_of(0), f.library, f.what + " in _Pragma(...)", f.reason});
      }
      continue;
    }
    if (context.find("asm") != std::string_view::npos) {
      // GNU as reads any file these name into the object (or as source): not a header.
      size_t at = 0;
      if (const AsmDirective* d = FindAsmDirective(joined, &at)) {
        hits->push_back({pos_of(at), std::string(d->library),
                         std::string(d->name) + " in " + std::string(context) + "(...)",
                         std::string(d->reason)});
      }
    }
    const std::vector<Token> inner = Tokenize(joined);
    const IdentifierMatcher matcher(joined, inner);
    for (size_t j = 0; j < inner.size(); ++j) {
      if (!inner[j].ident) continue;
      std::string what;
      if (const ScreenRule* rule = matcher.Match(j, &what)) {
        hits->push_back(
            {pos_of(inner[j].begin), std::string(rule->library),
             std::string(Text(joined, inner[j])) + " named in " + std::string(context) + "(...)"});
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Reporting.

// Replaces bytes that are not well-formed UTF-8 with '?', so that findings
// can always be written as JSON (nlohmann::json throws on bad UTF-8).
std::string ValidUtf8OrQuestionMarks(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0, taken = 0; i < s.size();) {
    size_t len = Utf8SequenceAt(s, i, &taken);
    if (len == 0) {
      out.push_back('?');  // one per byte, as the findings have always shown it
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

constexpr size_t kExcerptMax = 120;

std::string Excerpt(std::string_view line) {
  size_t b = 0;
  size_t e = line.size();
  while (b < e && IsSpace(line[b])) ++b;
  while (e > b && IsSpace(line[e - 1])) --e;
  std::string s = ValidUtf8OrQuestionMarks(line.substr(b, e - b));
  if (s.size() <= kExcerptMax) return s;
  size_t cut = kExcerptMax - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // whole characters
  s.resize(cut);
  return s + "...";
}

}  // namespace

std::span<const ScreenRule> ScreenRules() { return kRules; }

std::string StripCommentsAndStrings(std::string_view source) {
  const Spliced sp = SpliceLines(source);
  const Lexed lx = Lexer(sp).Run();
  std::string out(source.size(), ' ');
  for (size_t k = 0; k < sp.text.size(); ++k) out[sp.orig[k]] = lx.code[k];
  const size_t n = sp.text.size();
  for (const Splice& s : sp.splices) {
    const bool blanked = (s.at > 0 && lx.blank[s.at - 1]) || (s.at < n && lx.blank[s.at]);
    for (size_t p = s.orig_begin; p < s.orig_end; ++p) {
      const char c = source[p];
      out[p] = c == '\n' || !blanked ? c : ' ';
    }
  }
  return out;
}

ScreenResult ScreenSource(std::string_view source) {
  const Spliced sp = SpliceLines(source);
  const Lexed lx = Lexer(sp).Run();
  DirectiveScan ds = ScanDirectives(lx.code, sp.text);
  std::vector<Hit> hits = std::move(ds.hits);

  const std::vector<Token> toks = Tokenize(ds.code);
  const IdentifierMatcher matcher(ds.code, toks);
  for (size_t k = 0; k < toks.size(); ++k) {
    if (!toks[k].ident) continue;
    std::string what;
    if (const ScreenRule* rule = matcher.Match(k, &what)) {
      hits.push_back({toks[k].begin, std::string(rule->library), std::move(what)});
    }
  }
  // Stringification (`#define STR(x) #x`, STR(.include "f")) spells a directive in code tokens:
  // a '.' that follows no operand, joined to the directive's name.
  for (size_t k = 0; k + 1 < toks.size(); ++k) {
    if (Text(ds.code, toks[k]) != "." || toks[k + 1].begin != toks[k].end || !toks[k + 1].ident)
      continue;
    if (k > 0) {
      const std::string_view prev = Text(ds.code, toks[k - 1]);
      if (toks[k - 1].ident || IsDigit(prev[0]) || prev == ")" || prev == "]") continue;
    }
    const std::string word = "." + Lower(Text(ds.code, toks[k + 1]));
    for (const AsmDirective& d : kAsmDirectives) {
      if (word == d.name) {
        hits.push_back({toks[k].begin, std::string(kFilePath), word + " outside a literal",
                        std::string(d.reason)});
      }
    }
  }
  ScanHasInclude(sp.text, ds.code, toks, &hits);
  std::vector<std::pair<size_t, size_t>> symbol_ranges;
  ScanSymbolStrings(sp, lx, ds.code, toks, &hits, &symbol_ranges);
  // Any other literal may reach the assembler too (`#define S ".include \"f\""`, then
  // asm(S) through a macro the screen cannot follow): no literal may hold a file directive.
  for (const Literal& lit : lx.literals) {
    bool inside = false;
    for (const auto& [from, to] : symbol_ranges) inside |= lit.begin >= from && lit.begin < to;
    if (inside) continue;
    const std::string_view content(sp.text.data() + lit.begin, lit.end - lit.begin);
    size_t at = 0;
    if (const AsmDirective* d =
            FindAsmDirective(lit.raw ? std::string(content) : Decode(content), &at)) {
      hits.push_back({lit.raw ? lit.begin + at : lit.begin, std::string(d->library),
                      std::string(d->name) + " in a string literal", std::string(d->reason)});
    }
  }

  std::vector<size_t> line_starts = {0};
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\n') line_starts.push_back(i + 1);
  }
  struct Placed {
    size_t orig;
    ScreenFinding finding;
  };
  std::vector<Placed> placed;
  placed.reserve(hits.size());
  for (Hit& hit : hits) {
    const size_t orig = hit.pos < sp.orig.size() ? sp.orig[hit.pos] : source.size();
    const auto it = std::upper_bound(line_starts.begin(), line_starts.end(), orig);
    const size_t index = static_cast<size_t>(it - line_starts.begin()) - 1;
    const size_t start = line_starts[index];
    size_t end = source.find('\n', start);
    if (end == std::string_view::npos) end = source.size();
    ScreenFinding f;
    f.line = static_cast<int>(index) + 1;
    f.library = std::move(hit.library);
    f.what = ValidUtf8OrQuestionMarks(hit.what);
    f.reason = std::move(hit.reason);
    f.excerpt = Excerpt(source.substr(start, end - start));
    placed.push_back({orig, std::move(f)});
  }
  std::stable_sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    return std::tie(a.finding.line, a.orig) < std::tie(b.finding.line, b.orig);
  });
  ScreenResult result;
  for (Placed& p : placed) {
    // The same thing twice on one line says nothing new.
    bool repeat = false;
    for (auto f = result.findings.rbegin(); f != result.findings.rend(); ++f) {
      if (f->line != p.finding.line) break;
      if (f->library == p.finding.library && f->what == p.finding.what) repeat = true;
    }
    if (!repeat) result.findings.push_back(std::move(p.finding));
  }
  return result;
}

std::string ScreenResult::message() const {
  if (findings.empty()) return "";
  const ScreenFinding& f = findings.front();
  std::string m = "line " + std::to_string(f.line) + ": " + f.what;
  m +=
      f.reason.empty() ? " (" + f.library + " is forbidden): `" + f.excerpt + "`" : ": " + f.reason;
  if (findings.size() > 1) m += " (and " + std::to_string(findings.size() - 1) + " more)";
  return m;
}

nlohmann::json ToJson(const ScreenResult& result) {
  nlohmann::json findings = nlohmann::json::array();
  for (const ScreenFinding& f : result.findings) {
    nlohmann::json j = {
        {"line", f.line}, {"library", f.library}, {"what", f.what}, {"excerpt", f.excerpt}};
    if (!f.reason.empty()) j["reason"] = f.reason;
    findings.push_back(std::move(j));
  }
  return {{"passed", result.passed()}, {"findings", std::move(findings)}};
}

}  // namespace ptxbench

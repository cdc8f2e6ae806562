#include "agent/extract.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <string_view>
#include <vector>

#include "task/abi.h"

namespace ptxbench {

namespace {

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// CRLF and lone CR line ends become LF.
std::string NormalizeNewlines(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) {
      if (start < s.size()) lines.push_back(s.substr(start));
      break;
    }
    lines.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

// A fence line (CommonMark): up to 3 spaces, then 3 or more '`' or '~'.
struct Fence {
  char ch = 0;
  size_t length = 0;
  size_t indent = 0;
  std::string info;  // the rest of the line, trimmed
};

std::string TrimSpaces(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool ParseFence(const std::string& line, Fence* f) {
  size_t i = 0;
  while (i < line.size() && line[i] == ' ' && i < 4) ++i;
  if (i > 3 || i >= line.size()) return false;
  char ch = line[i];
  if (ch != '`' && ch != '~') return false;
  size_t j = i;
  while (j < line.size() && line[j] == ch) ++j;
  if (j - i < 3) return false;
  std::string info = TrimSpaces(std::string_view(line).substr(j));
  // A backtick fence's info string holds no backtick (```x``` is inline code).
  if (ch == '`' && info.find('`') != std::string::npos) return false;
  f->ch = ch;
  f->length = j - i;
  f->indent = i;
  f->info = info;
  return true;
}

// Closes `open`: the same character, at least as long, nothing after it but spaces.
bool Closes(const std::string& line, const Fence& open) {
  Fence f;
  return ParseFence(line, &f) && f.ch == open.ch && f.length >= open.length && f.info.empty();
}

// The tag: the info string's first word, lower case ("```CUDA title" → "cuda"). A leading
// "{." or "." (pandoc attribute syntax) is dropped.
std::string TagOf(const std::string& info) {
  std::string word = info.substr(0, info.find_first_of(" \t"));
  if (!word.empty() && word[0] == '{') word.erase(0, 1);
  if (!word.empty() && word[0] == '.') word.erase(0, 1);
  if (!word.empty() && word.back() == '}') word.pop_back();
  return Lower(word);
}

bool AcceptedTag(const std::string& tag) {
  return tag.empty() || tag == "cpp" || tag == "c++" || tag == "cuda" || tag == "cu";
}

struct Block {
  std::string tag;
  std::string code;
  bool unterminated = false;
};

std::vector<Block> FencedBlocks(const std::string& text) {
  std::vector<Block> blocks;
  std::vector<std::string> lines = Lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    Fence open;
    if (!ParseFence(lines[i], &open)) continue;
    Block b;
    b.tag = TagOf(open.info);
    size_t j = i + 1;
    for (; j < lines.size() && !Closes(lines[j], open); ++j) {
      // Content loses as much indentation as the opening fence had.
      const std::string& l = lines[j];
      size_t k = 0;
      while (k < open.indent && k < l.size() && l[k] == ' ') ++k;
      b.code += l.substr(k) + "\n";
    }
    b.unterminated = j >= lines.size();
    blocks.push_back(std::move(b));
    i = j;  // past the closing fence (or the end)
  }
  return blocks;
}

// The code with comments removed and string and character literals blanked, except for
// the linkage strings "C" and "C++", so that braces, parentheses and `run` inside them do not
// count. Line breaks are kept.
std::string StripForScan(const std::string& code) {
  std::string out;
  out.reserve(code.size());
  size_t i = 0, n = code.size();
  while (i < n) {
    char c = code[i];
    if (c == '/' && i + 1 < n && code[i + 1] == '/') {
      while (i < n && code[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && code[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(code[i] == '*' && code[i + 1] == '/')) {
        if (code[i] == '\n') out += '\n';
        ++i;
      }
      i = std::min(n, i + 2);
      out += ' ';
    } else if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < n && code[j] != c && code[j] != '\n') j += code[j] == '\\' ? 2 : 1;
      j = std::min(j, n);
      std::string body = code.substr(i + 1, j - i - 1);
      out += c;
      if (c == '"' && (body == "C" || body == "C++"))
        out += body;
      else
        out.append(body.size(), ' ');
      if (j < n && code[j] == c) out += c;
      i = j < n && code[j] == c ? j + 1 : j;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

// [open, close) spans of `extern "C" { ... }`; an unclosed one runs to the end.
std::vector<std::pair<size_t, size_t>> ExternCRegions(const std::string& s) {
  static const std::regex re(R"(extern\s*"C"\s*\{)");
  std::vector<std::pair<size_t, size_t>> out;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator(); ++it) {
    size_t open = static_cast<size_t>(it->position(0) + it->length(0));
    int depth = 1;
    size_t k = open;
    for (; k < s.size() && depth > 0; ++k) {
      if (s[k] == '{') ++depth;
      if (s[k] == '}') --depth;
    }
    out.push_back({open, k});
  }
  return out;
}

// The words a call can follow, where `run(` is not a declarator.
bool IsStatementKeyword(const std::string& w) {
  static const char* const kWords[] = {"return", "else",   "do",        "case",     "throw", "new",
                                       "delete", "sizeof", "co_return", "co_await", "goto"};
  return std::find(std::begin(kWords), std::end(kWords), w) != std::end(kWords);
}

// What comes before `run` in its declaration: from the last ';', '{' or '}' (or preprocessor
// line) up to `run`, trimmed.
std::string DeclarationPrefix(const std::string& s, size_t run_pos) {
  size_t start = s.find_last_of(";{}", run_pos == 0 ? 0 : run_pos - 1);
  start = start == std::string::npos ? 0 : start + 1;
  if (run_pos == 0) start = 0;
  std::string prefix = s.substr(start, run_pos - start);
  // Drop everything up to the last preprocessor line.
  std::vector<std::string> lines = Lines(prefix);
  std::string kept;
  for (const auto& l : lines) {
    std::string t = TrimSpaces(l);
    if (!t.empty() && t[0] == '#')
      kept.clear();
    else
      kept += l + "\n";
  }
  return TrimSpaces(kept);
}

// Whether `code` defines a function `run` with C linkage: a definition of `run` (its
// parameter list followed by a body; a list cut off by the end of the text counts, for
// replies cut at the token limit) that is declared `extern "C"` directly, lies inside
// `extern "C" { ... }`, or has such a declaration elsewhere in the file.
bool DefinesRun(const std::string& code) {
  const std::string s = StripForScan(code);
  const auto regions = ExternCRegions(s);
  static const std::regex extern_c(R"(\bextern\s*"C")");
  static const std::regex trailing_word(R"(([A-Za-z_]\w*)\s*$)");
  bool c_linkage_declared = false, defined = false, defined_with_c_linkage = false;
  for (size_t pos = s.find("run"); pos != std::string::npos; pos = s.find("run", pos + 1)) {
    if (pos > 0 && IsIdentChar(s[pos - 1])) continue;
    size_t k = pos + 3;
    if (k < s.size() && IsIdentChar(s[k])) continue;
    while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
    if (k >= s.size() || s[k] != '(') continue;
    // A member or qualified name (x.run(, p->run(, A::run() is not ours.
    size_t b = pos;
    while (b > 0 && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
    if (b > 0 &&
        (s[b - 1] == '.' || s[b - 1] == ':' || (s[b - 1] == '>' && b > 1 && s[b - 2] == '-')))
      continue;
    std::string prefix = DeclarationPrefix(s, pos);
    if (prefix.empty()) continue;  // a bare call, `run(...)`
    char last = prefix.back();
    if (last != '*' && last != '&') {
      std::smatch m;
      if (!std::regex_search(prefix, m, trailing_word) || IsStatementKeyword(m[1].str()))
        continue;  // `= run(`, `return run(`: a call
    }
    if (prefix.find('=') != std::string::npos) continue;  // inside an expression
    // A kernel named run is not the host entry point.
    bool device_only = (prefix.find("__global__") != std::string::npos ||
                        prefix.find("__device__") != std::string::npos) &&
                       prefix.find("__host__") == std::string::npos;
    if (device_only) continue;
    bool in_region = std::any_of(regions.begin(), regions.end(),
                                 [&](const auto& r) { return pos >= r.first && pos < r.second; });
    bool c_linkage = in_region || std::regex_search(prefix, extern_c);
    // The parameter list, then a body or a ';'.
    int depth = 0;
    size_t e = k;
    for (; e < s.size(); ++e) {
      if (s[e] == '(') ++depth;
      if (s[e] == ')' && --depth == 0) break;
    }
    bool is_definition = false;
    if (e >= s.size()) {
      is_definition = true;  // cut off inside the parameter list
    } else {
      size_t q = e + 1;
      // Skip what may stand between the list and the body (noexcept, attributes, -> int).
      while (q < s.size() && s[q] != '{' && s[q] != ';' && s[q] != '=') ++q;
      is_definition = q >= s.size() || s[q] == '{';
    }
    if (c_linkage) c_linkage_declared = true;
    if (is_definition) {
      defined = true;
      if (c_linkage) defined_with_c_linkage = true;
    }
  }
  return defined_with_c_linkage || (defined && c_linkage_declared);
}

// Whether a reply without fences looks like a source file pasted as is.
bool LooksLikeCode(const std::string& text) {
  static const std::regex re(
      R"((^|\n)\s*#include\s*[<"]|extern\s*"C"|__global__|\bint\s+run\s*\()");
  return std::regex_search(text, re);
}

std::string Plural(int n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

const char* kExpected =
    "Expected: exactly one fenced code block tagged cuda (a line ```cuda, the whole .cu file, "
    "then a line ```), and that file must define the entry point as extern \"C\" int run(...) "
    "with the signature from the task.";

}  // namespace

Extraction ExtractKernel(const std::string& reply) {
  Extraction ex;
  const std::string text = NormalizeNewlines(reply);
  std::vector<Block> blocks = FencedBlocks(text);
  ex.blocks = static_cast<int>(blocks.size());
  int accepted_tag = 0;
  std::map<std::string, int> other_tags;         // tag → blocks
  std::vector<std::string> other_tags_with_run;  // rejected tags whose block defines run
  const Block* chosen = nullptr;
  for (const Block& b : blocks) {
    // Upstream's entry point (TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, ...)) counts as well: such
    // kernels are judged as they are (task/abi.h).
    bool defines = DefinesRun(b.code) || DetectCandidateAbi(b.code) == CandidateAbi::kTvmFfi;
    if (AcceptedTag(b.tag)) {
      ++accepted_tag;
      if (defines) {
        ++ex.candidates;
        chosen = &b;  // the last one wins
      }
    } else {
      ++other_tags[b.tag];
      if (defines && std::find(other_tags_with_run.begin(), other_tags_with_run.end(), b.tag) ==
                         other_tags_with_run.end())
        other_tags_with_run.push_back(b.tag);
    }
  }
  if (chosen) {
    ex.found = true;
    ex.code = chosen->code;
    ex.tag = chosen->tag;
    ex.unterminated = chosen->unterminated;
    return ex;
  }

  std::string seen;
  if (blocks.empty()) {
    seen = LooksLikeCode(text)
               ? "no fenced code block: your reply looks like code without fences, and code "
                 "outside a fenced block is not read. Put the whole file inside ```cuda ... ```"
               : "no fenced code block";
  } else {
    seen = Plural(ex.blocks, "code block", "code blocks");
    if (accepted_tag == 0) {
      std::vector<std::string> tags;
      for (const auto& [tag, n] : other_tags) tags.push_back(tag);
      std::string list;
      for (size_t i = 0; i < tags.size(); ++i) list += (i ? ", " : "") + tags[i];
      seen += " (tagged " + list + "), none tagged cuda, cu, cpp or c++";
    } else {
      seen += accepted_tag == ex.blocks ? ", none defining extern \"C\" int run(...)"
                                        : " (" + std::to_string(accepted_tag) +
                                              " tagged cuda, cu, cpp, c++ or untagged)" +
                                              ", none of them defining extern \"C\" int run(...)";
    }
    if (!other_tags_with_run.empty()) {
      std::string list;
      for (size_t i = 0; i < other_tags_with_run.size(); ++i)
        list += (i ? ", " : "") + std::string("```") + other_tags_with_run[i];
      seen += "; a block tagged " + list +
              " defines run, but only blocks tagged cuda, cu, cpp, c++ or untagged are read";
    }
  }
  ex.message = "No kernel was found in your reply: " + seen + ".\n" + kExpected +
               "\nThis turn is spent without an evaluation; reply with the complete file.";
  return ex;
}

}  // namespace ptxbench

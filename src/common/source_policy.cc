#include "common/source_policy.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/error.h"
#include "common/strings.h"

namespace ptxbench {

namespace {

bool OnlyWhitespace(std::string_view s) {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') return false;
  return true;
}

}  // namespace

bool SourceIsTooLarge(std::string_view bytes, size_t max_bytes) { return bytes.size() > max_bytes; }

std::optional<std::string> SourceFileProblem(std::string_view bytes, size_t max_bytes) {
  if (SourceIsTooLarge(bytes, max_bytes))
    return "the source is larger than the limit of " + std::to_string(max_bytes) + " bytes";
  if (OnlyWhitespace(bytes)) return std::string("the source is empty (nothing but whitespace)");
  if (bytes.find('\0') != std::string_view::npos)
    return std::string("the source contains a NUL byte (a binary file, not CUDA source text)");
  if (!IsValidUtf8(bytes)) return std::string("the source is not valid UTF-8 text");
  return std::nullopt;
}

std::string ReadSourceFile(const std::string& path, size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(path + ": no such readable file (" + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) throw InputError(path + ": no such readable file (it is a folder)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": no such readable file (" + std::strerror(errno) + ")");
  // One byte over the limit is enough to know that the file is too large.
  std::string bytes(max_bytes + 1, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (in.bad()) throw InputError(path + ": read failed");
  bytes.resize(static_cast<size_t>(in.gcount()));
  if (auto problem = SourceFileProblem(bytes, max_bytes)) throw InputError(path + ": " + *problem);
  return bytes;
}

}  // namespace ptxbench

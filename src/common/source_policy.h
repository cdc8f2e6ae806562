// The one policy for kernel sources, wherever a source comes in: `eval`, `inspect`, `submit`
// and the service's POST /v1/evaluations. A source is refused, before any screen or build, when
// it is empty (or only whitespace), larger than the limit, holds a NUL byte (a binary file), or
// is not valid UTF-8. Each refusal is one fixed sentence, the same words everywhere; the
// command line prefixes it with the file's path and exits 2, the service answers it in a 4xx.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ptxbench {

// The largest source accepted: 1 MiB. The service's default limit (--max-source-bytes).
inline constexpr size_t kMaxSourceBytes = size_t{1} << 20;

// Why a source is not accepted, as one sentence; nullopt when it is. `max_bytes` is the size
// limit (the service can be given another one; everything else uses kMaxSourceBytes).
std::optional<std::string> SourceFileProblem(std::string_view bytes,
                                             size_t max_bytes = kMaxSourceBytes);

// Whether SourceFileProblem's answer for `bytes` is the size one (the service answers 413 for
// it, 400 for the others).
bool SourceIsTooLarge(std::string_view bytes, size_t max_bytes = kMaxSourceBytes);

// Reads the source file at `path` and applies the policy: throws InputError
// "PATH: <sentence>" (exit 2) when the file is missing, unreadable, a folder, or refused.
// Reads at most max_bytes + 1 bytes, so that a huge file costs nothing.
std::string ReadSourceFile(const std::string& path, size_t max_bytes = kMaxSourceBytes);

}  // namespace ptxbench

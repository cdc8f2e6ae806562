// Architecture knowledge packs: the text a model reads in its system message about the
// architecture's own instructions. A pack lives in packs/<arch>/ with a manifest:
//
//   {"arch": "sm_90a", "title": "...",
//    "hardware_verified": true,              // false: compiled in CI, never run on the chip
//    "note": "shown at the top of the pack",
//    "parts": {"facts": "parts/00-facts.md", ...,
//              "helpers": {"header": "include/ptxbench_sm90.cuh", "intro": "..."}},
//    "variants": {"base": ["facts", "wgmma", ...], "base+gemm": [...], "full": [...]},
//    "examples": [{"file": "examples/gemm.cu", "task": "gemm_n7168_k5120"}]}
//
// A part is a markdown file, or a header rendered as one fenced block under its own heading
// (the model copies what it needs into its single file: the header is not on the include
// path). Variant "none" is always there and empty. Rendering is deterministic.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ptxbench {

struct PackPart {
  std::string name;
  std::string file;     // relative to the pack folder
  bool header = false;  // a header: fenced as code, with `intro` above it
  std::string intro;
};

struct PackExample {
  std::string file;  // relative to the pack folder; includes the header by name
  std::string task;
};

struct Pack {
  std::string arch, title, note, dir;
  bool hardware_verified = false;
  std::vector<PackPart> parts;  // manifest order
  std::map<std::string, std::vector<std::string>> variants;
  std::vector<PackExample> examples;

  std::vector<std::string> VariantNames() const;  // "none" first, then the manifest's
  // The text of a variant. Throws UsageError for an unknown variant (naming the known ones).
  std::string Render(const std::string& variant) const;
  // The header files' names ("ptxbench_sm90.cuh") and paths, for inlining.
  std::map<std::string, std::string> Headers() const;
};

// Reads and checks packs/<arch>/manifest.json (every part and example exists, every variant
// names known parts). Throws UsageError when there is no pack for `arch`, InputError when
// the manifest is malformed.
Pack LoadPackManifest(const std::string& packs_dir, const std::string& arch);
std::vector<std::string> PackArchs(const std::string& packs_dir);  // folders with a manifest

// Replaces each `#include "NAME"` of a pack header in `source` with the header's text, so
// that a kernel written on the helpers becomes the single self-contained file a candidate
// must be. Other includes stay.
std::string InlinePackHeaders(const std::string& source, const Pack& pack);

// The fenced blocks of a markdown text whose info string is "cuda compile": complete
// translation units that CI compiles for the pack's architecture.
std::vector<std::string> CompilableBlocks(const std::string& markdown);

// Tokens estimated from characters (about 4 characters a token for English and code).
inline long EstimatedTokens(size_t chars) { return static_cast<long>((chars + 3) / 4); }

}  // namespace ptxbench

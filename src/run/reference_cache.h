// Expected outputs on disk, keyed by (family, reference version, axes, seed), so that a
// second evaluation of the same task skips the reference child. One folder per seed holding
// the fp32 outputs and meta.json (written last: its presence means the entry is complete).
//
// Nothing in an entry is trusted on the way back: meta.json names every output with its size
// and sha256, and Lookup hashes each file again before it answers. An entry that does not
// match (a changed, resized, missing or extra file, a meta.json that is not valid or is of an
// older format) is a miss: it is removed and the caller recomputes it. Entries are sealed
// read-only (folder 0500, files 0400) once written, so that only a deliberate chmod, not a
// stray write, can change them.
//
// What this does not stop: a process of the same user that rewrites meta.json together with
// the outputs. The checksums catch damage and partial tampering; keeping the cache root out of
// the candidate's reach is what keeps a determined writer out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "task/family.h"

namespace ptxbench {

struct ReferenceEntry {
  uint64_t seed = 0;
  std::vector<uint64_t> input_checksums;
  std::vector<std::string> output_files;  // fp32, one per output tensor, in ABI order
};

class ReferenceCache {
 public:
  // meta.json's "format": entries of another format (or none) are misses.
  static constexpr int kFormat = 2;

  explicit ReferenceCache(std::string root);  // empty: CacheRoot()/reference
  std::string Key(const Family& f, const Axes& axes, uint64_t seed) const;

  // The entry when it is there and every output file still has the size and sha256 that
  // meta.json records; nullopt otherwise. An entry that was there but failed the check is
  // removed (best effort), and `problem`, when given, says why in one line for the record,
  // e.g. "reference cache entry damaged: seed1_C.f32 sha256 mismatch" (the caller adds
  // "; recomputed"); it is left empty for a plain miss (no entry) and for a hit.
  std::optional<ReferenceEntry> Lookup(const Family& f, const Axes& axes, uint64_t seed,
                                       std::string* problem = nullptr) const;

  // Moves the files a reference child wrote into a new entry (folder created 0700, sealed 0500
  // with its files 0400 once meta.json is written) and returns it. meta.json records each
  // output's size and sha256, hashed while storing.
  ReferenceEntry Store(const Family& f, const Axes& axes, uint64_t seed,
                       const std::vector<uint64_t>& input_checksums,
                       const std::vector<std::string>& files);
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

}  // namespace ptxbench

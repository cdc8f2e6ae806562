// Expected outputs on disk, keyed by (family, reference version, axes, seed), so that a
// second evaluation of the same task skips the reference child. One folder per seed holding
// the fp32 outputs and meta.json (written last: its presence means the entry is complete).
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
  explicit ReferenceCache(std::string root);  // empty: CacheRoot()/reference
  std::string Key(const Family& f, const Axes& axes, uint64_t seed) const;
  std::optional<ReferenceEntry> Lookup(const Family& f, const Axes& axes, uint64_t seed) const;
  // Moves the files a reference child wrote into a new entry and returns it.
  ReferenceEntry Store(const Family& f, const Axes& axes, uint64_t seed,
                       const std::vector<uint64_t>& input_checksums,
                       const std::vector<std::string>& files);
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

}  // namespace ptxbench

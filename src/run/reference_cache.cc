#include "run/reference_cache.h"

#include <unistd.h>

#include <filesystem>

#include "common/files.h"
#include "common/sha256.h"

namespace ptxbench {

namespace fs = std::filesystem;

ReferenceCache::ReferenceCache(std::string root)
    : root_(root.empty() ? CacheRoot() + "/reference" : std::move(root)) {}

std::string ReferenceCache::Key(const Family& f, const Axes& axes, uint64_t seed) const {
  nlohmann::json k = {
      {"family", f.Name()}, {"reference", f.ReferenceVersion()}, {"axes", axes}, {"seed", seed}};
  return Sha256Hex(k.dump());
}

std::optional<ReferenceEntry> ReferenceCache::Lookup(const Family& f, const Axes& axes,
                                                     uint64_t seed) const {
  std::string dir = root_ + "/" + Key(f, axes, seed);
  if (!FileExists(dir + "/meta.json")) return std::nullopt;
  try {
    auto j = nlohmann::json::parse(ReadFile(dir + "/meta.json"));
    ReferenceEntry e;
    e.seed = seed;
    e.input_checksums = j.at("input_checksums").get<std::vector<uint64_t>>();
    for (const auto& name : j.at("outputs").get<std::vector<std::string>>()) {
      std::string path = dir + "/" + name;
      if (!FileExists(path)) return std::nullopt;
      e.output_files.push_back(path);
    }
    return e;
  } catch (const std::exception&) {
    return std::nullopt;  // damaged: recomputed and replaced
  }
}

ReferenceEntry ReferenceCache::Store(const Family& f, const Axes& axes, uint64_t seed,
                                     const std::vector<uint64_t>& checksums,
                                     const std::vector<std::string>& files) {
  std::string key = Key(f, axes, seed);
  std::string dir = root_ + "/" + key;
  std::string tmp = dir + ".tmp." + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  MakeDirs(tmp);
  std::vector<std::string> names;
  for (const auto& file : files) {
    std::string name = fs::path(file).filename().string();
    fs::rename(file, tmp + "/" + name, ec);
    if (ec) fs::copy_file(file, tmp + "/" + name, fs::copy_options::overwrite_existing);
    names.push_back(name);
  }
  nlohmann::json meta = {
      {"family", f.Name()}, {"reference", f.ReferenceVersion()}, {"axes", axes},
      {"seed", seed},       {"input_checksums", checksums},      {"outputs", names}};
  WriteFileAtomic(tmp + "/meta.json", meta.dump(2));
  fs::remove_all(dir, ec);
  fs::rename(tmp, dir, ec);
  if (ec) fs::remove_all(tmp, ec);  // a concurrent evaluation stored the same entry
  auto e = Lookup(f, axes, seed);
  if (!e) throw std::runtime_error("reference cache entry vanished: " + dir);
  return *e;
}

}  // namespace ptxbench

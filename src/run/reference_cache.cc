#include "run/reference_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <vector>

#include "common/error.h"
#include "common/files.h"
#include "common/sha256.h"

namespace ptxbench {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Read size for hashing. Lookup streams every output through SHA-256 (the files can be GBs,
// so none is ever held whole). Measured on the 2-core development machine (RelWithDebInfo,
// file in /dev/shm, DISABLED_LookupTimeFor235MegabyteOutput in reference_cache_test.cc): Lookup
// of an entry with one 235 MB output (the headline GEMM's 8192x7168 fp32 expected output) took
// 1.19-1.41 s wall, 1.11-1.35 s of it CPU (170-210 MB/s), nearly all SHA-256
// (src/common/sha256.cc, no SHA extensions); 12-14 s wall while other builds held both cores.
// Three trials read three such entries: about 4 s per evaluation that hits the cache.
constexpr size_t kChunkBytes = size_t{1} << 20;
constexpr size_t kMaxMetaBytes = size_t{1} << 20;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Opens a regular file for reading without following a symbolic link; on failure returns -1
// with `why` saying what is wrong with it ("missing", "a symbolic link", ...).
int OpenRegular(const std::string& path, struct stat* st, std::string* why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    *why = e == ENOENT  ? "missing"
           : e == ELOOP ? "a symbolic link"
                        : std::string("unreadable (") + std::strerror(e) + ")";
    return -1;
  }
  if (::fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    ::close(fd);
    *why = "not a regular file";
    return -1;
  }
  return fd;
}

struct Digest {
  uint64_t bytes = 0;
  std::string sha256;
};

// Streams an open file through SHA-256. False (with `why`) when a read fails or the file
// changes length while it is read.
bool HashOpenFile(int fd, uint64_t expected_bytes, Digest* d, std::string* why) {
  Sha256 hasher;
  std::vector<char> buf(kChunkBytes);
  uint64_t total = 0;
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      *why = std::string("read failed (") + std::strerror(errno) + ")";
      return false;
    }
    if (n == 0) break;
    hasher.Update(buf.data(), static_cast<size_t>(n));
    total += static_cast<uint64_t>(n);
  }
  if (total != expected_bytes) {
    *why = "changed size while being read";
    return false;
  }
  d->bytes = total;
  d->sha256 = hasher.FinishHex();
  return true;
}

// Size and sha256 of a file this process has just written; throws when it cannot be read.
Digest DigestOf(const std::string& path) {
  struct stat st {};
  std::string why;
  Fd fd(OpenRegular(path, &st, &why));
  Digest d;
  if (fd.get() < 0 || !HashOpenFile(fd.get(), static_cast<uint64_t>(st.st_size), &d, &why))
    throw InputError(path + ": cannot hash for the reference cache: " + why);
  return d;
}

// Gives back write permission to every folder under `p` (a sealed entry is 0500), so that
// it can be removed, then removes it. Best effort: errors are ignored. Symbolic links are
// removed, never followed.
void MakeRemovable(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  ::chmod(p.c_str(), 0700);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(p, ec)) MakeRemovable(e.path());
}

void RemoveTree(const std::string& path) {
  MakeRemovable(path);
  std::error_code ec;
  fs::remove_all(path, ec);
}

bool IsPlainName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name != "meta.json" &&
         name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

bool IsSha256Hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// Why an entry folder is not a sound entry for (f, axes, seed); "" when it is, with the
// entry filled in. `old_format`: the entry is intact as far as it goes but of another format.
std::string Verify(const std::string& dir, const Family& f, const Axes& axes, uint64_t seed,
                   ReferenceEntry* e, bool* old_format) {
  *old_format = false;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return "the entry is not a folder";

  struct stat st {};
  std::string why;
  Fd meta_fd(OpenRegular(dir + "/meta.json", &st, &why));
  if (meta_fd.get() < 0) return "meta.json " + why;
  if (static_cast<uint64_t>(st.st_size) > kMaxMetaBytes) return "meta.json is too large";
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = ::read(meta_fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "meta.json cannot be read";
    got += static_cast<size_t>(n);
  }
  json meta = json::parse(text, nullptr, false);
  if (meta.is_discarded() || !meta.is_object()) return "meta.json is not a JSON object";

  auto format = meta.find("format");
  if (format == meta.end()) {
    *old_format = true;
    return "meta.json has no format version";
  }
  if (!format->is_number_integer() || format->get<int64_t>() != ReferenceCache::kFormat) {
    *old_format = true;
    return "meta.json format " + format->dump() + ", this ptxbench reads " +
           std::to_string(ReferenceCache::kFormat);
  }
  // The key is a digest of these, so an entry copied under another key is caught here.
  auto same = [&](const char* k, const json& want) {
    auto it = meta.find(k);
    return it != meta.end() && *it == want;
  };
  if (!same("family", f.Name()) || !same("reference", f.ReferenceVersion()) ||
      !same("axes", json(axes)) || !same("seed", seed))
    return "meta.json describes another entry";

  auto checks = meta.find("input_checksums");
  if (checks == meta.end() || !checks->is_array()) return "meta.json has no input_checksums";
  e->seed = seed;
  e->input_checksums.clear();
  e->output_files.clear();
  for (const json& c : *checks) {
    if (!c.is_number_unsigned()) return "meta.json has a malformed input checksum";
    e->input_checksums.push_back(c.get<uint64_t>());
  }

  struct Expected {
    std::string name, sha256;
    uint64_t bytes = 0;
  };
  std::vector<Expected> outputs;
  std::set<std::string> names;
  auto list = meta.find("outputs");
  if (list == meta.end() || !list->is_array() || list->empty()) return "meta.json has no outputs";
  for (const json& o : *list) {
    if (!o.is_object()) return "meta.json has an output that is not an object";
    auto name = o.find("name"), bytes = o.find("bytes"), sha = o.find("sha256");
    if (name == o.end() || !name->is_string() || !IsPlainName(name->get<std::string>()))
      return "meta.json has an output without a plain file name";
    Expected x;
    x.name = name->get<std::string>();
    if (bytes == o.end() || !bytes->is_number_unsigned())
      return "meta.json gives " + x.name + " no size";
    if (sha == o.end() || !sha->is_string() || !IsSha256Hex(sha->get<std::string>()))
      return "meta.json gives " + x.name + " no sha256";
    x.bytes = bytes->get<uint64_t>();
    x.sha256 = sha->get<std::string>();
    if (!names.insert(x.name).second) return "meta.json names " + x.name + " twice";
    outputs.push_back(std::move(x));
  }

  // Nothing but meta.json and the outputs: an extra file is someone else's doing.
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name != "meta.json" && !names.count(name)) return "unexpected file " + name;
  }
  if (ec) return "the entry cannot be listed (" + ec.message() + ")";

  // Sizes first (cheap), then the hashes.
  std::vector<std::unique_ptr<Fd>> fds;
  for (const Expected& x : outputs) {
    struct stat ost {};
    auto fd = std::make_unique<Fd>(OpenRegular(dir + "/" + x.name, &ost, &why));
    if (fd->get() < 0) return x.name + " " + why;
    if (static_cast<uint64_t>(ost.st_size) != x.bytes)
      return x.name + " is " + std::to_string(ost.st_size) + " bytes, meta.json says " +
             std::to_string(x.bytes);
    fds.push_back(std::move(fd));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    Digest d;
    if (!HashOpenFile(fds[i]->get(), outputs[i].bytes, &d, &why))
      return outputs[i].name + " " + why;
    if (d.sha256 != outputs[i].sha256) return outputs[i].name + " sha256 mismatch";
    e->output_files.push_back(dir + "/" + outputs[i].name);
  }
  return "";
}

}  // namespace

ReferenceCache::ReferenceCache(std::string root)
    : root_(root.empty() ? CacheRoot() + "/reference" : std::move(root)) {}

std::string ReferenceCache::Key(const Family& f, const Axes& axes, uint64_t seed) const {
  nlohmann::json k = {
      {"family", f.Name()}, {"reference", f.ReferenceVersion()}, {"axes", axes}, {"seed", seed}};
  return Sha256Hex(k.dump());
}

std::optional<ReferenceEntry> ReferenceCache::Lookup(const Family& f, const Axes& axes,
                                                     uint64_t seed, std::string* problem) const {
  if (problem) problem->clear();
  std::string dir = root_ + "/" + Key(f, axes, seed);
  struct stat before {};
  if (::lstat(dir.c_str(), &before) != 0) return std::nullopt;  // a plain miss
  ReferenceEntry e;
  bool old_format = false;
  std::string why = Verify(dir, f, axes, seed, &e, &old_format);
  if (why.empty()) return e;

  // Removed by renaming it aside first, and only if it is still the folder that was checked:
  // a concurrent Store may have put a sound entry in its place meanwhile.
  static std::atomic<uint64_t> counter{0};
  struct stat now {};
  if (::lstat(dir.c_str(), &now) == 0 && now.st_dev == before.st_dev &&
      now.st_ino == before.st_ino) {
    std::string trash =
        dir + ".damaged." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    if (::rename(dir.c_str(), trash.c_str()) == 0)
      RemoveTree(trash);
    else
      RemoveTree(dir);
  }
  if (problem)
    *problem = old_format ? "reference cache entry of an older format: " + why
                          : "reference cache entry damaged: " + why;
  return std::nullopt;
}

ReferenceEntry ReferenceCache::Store(const Family& f, const Axes& axes, uint64_t seed,
                                     const std::vector<uint64_t>& checksums,
                                     const std::vector<std::string>& files) {
  static std::atomic<uint64_t> counter{0};
  std::string key = Key(f, axes, seed);
  std::string dir = root_ + "/" + key;
  std::string tmp = dir + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  MakeDirs(root_);
  RemoveTree(tmp);
  if (::mkdir(tmp.c_str(), 0700) != 0 || ::chmod(tmp.c_str(), 0700) != 0)
    throw InputError(tmp + ": cannot create a reference cache entry (" + std::strerror(errno) +
                     ")");
  std::vector<std::string> names;
  try {
    json outputs = json::array();
    for (const auto& file : files) {
      std::string name = fs::path(file).filename().string();
      if (!IsPlainName(name) || std::find(names.begin(), names.end(), name) != names.end())
        throw InternalError("reference cache: cannot store an output named \"" + name + "\"");
      std::string dest = tmp + "/" + name;
      std::error_code ec;
      fs::rename(file, dest, ec);
      if (ec) fs::copy_file(file, dest, fs::copy_options::overwrite_existing);
      Digest d = DigestOf(dest);
      if (::chmod(dest.c_str(), 0400) != 0)
        throw InputError(dest + ": cannot make it read-only (" + std::strerror(errno) + ")");
      outputs.push_back({{"name", name}, {"bytes", d.bytes}, {"sha256", d.sha256}});
      names.push_back(name);
    }
    json meta = {{"format", kFormat}, {"family", f.Name()}, {"reference", f.ReferenceVersion()},
                 {"axes", axes},      {"seed", seed},       {"input_checksums", checksums},
                 {"outputs", outputs}};
    std::string meta_path = tmp + "/meta.json";
    WriteFileAtomic(meta_path, meta.dump(2));
    if (::chmod(meta_path.c_str(), 0400) != 0 || ::chmod(tmp.c_str(), 0500) != 0)
      throw InputError(tmp + ": cannot seal the entry (" + std::strerror(errno) + ")");
  } catch (...) {
    RemoveTree(tmp);
    throw;
  }
  RemoveTree(dir);
  if (::rename(tmp.c_str(), dir.c_str()) != 0) {
    // A concurrent evaluation stored the same entry first: use it, once it checks out.
    RemoveTree(tmp);
    std::string why;
    auto e = Lookup(f, axes, seed, &why);
    if (!e)
      throw InputError("reference cache entry vanished: " + dir +
                       (why.empty() ? "" : " (" + why + ")"));
    return *e;
  }
  ReferenceEntry e;
  e.seed = seed;
  e.input_checksums = checksums;
  for (const auto& name : names) e.output_files.push_back(dir + "/" + name);
  return e;
}

}  // namespace ptxbench

#include "compile/elf.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.h"

namespace ptxbench {
namespace {

// The file's structures are copied byte for byte into the <elf.h> structs,
// which is only a correct decoding of little-endian ELF on a little-endian host.
static_assert(std::endian::native == std::endian::little,
              "ReadElfInfo decodes little-endian ELF by memcpy");

// Reads byte ranges of a file with pread(), checking every range against the
// file size first. Only the headers and the few sections needed are read, so
// a candidate with a large embedded fatbin is not loaded whole.
class FileReader {
 public:
  explicit FileReader(const std::string& path) : path_(path) {
    fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw InputError("cannot open " + path + ": " + std::strerror(errno));
    struct stat st;
    if (fstat(fd_, &st) != 0) {
      int err = errno;
      close(fd_);
      throw InputError("cannot stat " + path + ": " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
      close(fd_);
      throw InputError(path + " is not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~FileReader() { close(fd_); }
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void Malformed(const std::string& what) const {
    throw InputError(path_ + ": malformed ELF file: " + what);
  }

  // Whether [offset, offset + n) lies inside the file, written so that huge
  // values from a corrupt header cannot overflow.
  bool InBounds(uint64_t offset, uint64_t n) const {
    return offset <= size_ && n <= size_ - offset;
  }

  // Reads exactly n bytes at offset; `what` names the range for the error.
  std::vector<uint8_t> Read(uint64_t offset, uint64_t n, const std::string& what) const {
    if (!InBounds(offset, n)) Malformed(what + " extends past the end of the file (truncated?)");
    std::vector<uint8_t> bytes(n);
    uint64_t done = 0;
    while (done < n) {
      ssize_t got = pread(fd_, bytes.data() + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw InputError("cannot read " + path_ + ": " + std::strerror(errno));
      // The file shrank since fstat(); treat it like a truncated file.
      if (got == 0) Malformed(what + " extends past the end of the file (truncated?)");
      done += static_cast<uint64_t>(got);
    }
    return bytes;
  }

  template <typename T>
  T ReadStruct(uint64_t offset, const std::string& what) const {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<uint8_t> bytes = Read(offset, sizeof(T), what);
    T value;
    std::memcpy(&value, bytes.data(), sizeof(T));
    return value;
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Decodes the i-th fixed-size entry of a section's contents. The caller has
// checked that the contents hold a whole number of entries.
template <typename T>
T Entry(const std::vector<uint8_t>& contents, size_t i) {
  T value;
  std::memcpy(&value, contents.data() + i * sizeof(T), sizeof(T));
  return value;
}

// A string table section (SHT_STRTAB): NUL-terminated strings addressed by
// byte offset.
class StringTable {
 public:
  StringTable(const FileReader& file, std::vector<uint8_t> bytes, std::string name)
      : file_(file), bytes_(std::move(bytes)), name_(std::move(name)) {}

  std::string Get(uint64_t offset) const {
    if (offset >= bytes_.size()) {
      file_.Malformed("string offset " + std::to_string(offset) + " is outside " + name_);
    }
    const auto* begin = reinterpret_cast<const char*>(bytes_.data()) + offset;
    const void* nul = std::memchr(begin, '\0', bytes_.size() - offset);
    if (nul == nullptr) file_.Malformed("unterminated string in " + name_);
    return std::string(begin, static_cast<const char*>(nul));
  }

 private:
  const FileReader& file_;
  std::vector<uint8_t> bytes_;
  std::string name_;
};

class ElfParser {
 public:
  explicit ElfParser(const FileReader& file) : file_(file) {}

  ElfInfo Parse() {
    ReadHeader();
    ReadSectionHeaders();
    ElfInfo info;
    // Sections are found by type, not by name: the loader itself goes by type
    // (and program headers), so names like ".dynamic" are only a convention.
    for (size_t i = 0; i < sections_.size(); ++i) {
      if (sections_[i].sh_type == SHT_DYNAMIC) {
        ReadDynamic(i, info);
        break;  // an object has at most one dynamic section
      }
    }
    for (size_t i = 0; i < sections_.size(); ++i) {
      if (sections_[i].sh_type == SHT_DYNSYM) {
        ReadDynamicSymbols(i, info);
        break;  // likewise at most one SHT_DYNSYM
      }
    }
    return info;
  }

  // The name of every section, in the section header table's order (through the
  // section-name string table).
  std::vector<std::string> SectionNames() {
    ReadHeader();
    ReadSectionHeaders();
    uint64_t shstrndx = header_.e_shstrndx;
    if (shstrndx == SHN_XINDEX && !sections_.empty()) shstrndx = sections_[0].sh_link;
    if (shstrndx == SHN_UNDEF || shstrndx >= sections_.size() ||
        sections_[shstrndx].sh_type != SHT_STRTAB)
      file_.Malformed("no section-name string table");
    StringTable names(file_, Contents(shstrndx, 0), SectionName(shstrndx));
    std::vector<std::string> out;
    out.reserve(sections_.size());
    for (const Elf64_Shdr& sh : sections_) out.emplace_back(names.Get(sh.sh_name));
    return out;
  }

  // The bytes of the first section named `name`.
  std::string SectionBytes(const std::string& name) {
    ElfSections s = Sections({name});
    if (s.contents.empty()) throw InputError(file_.path() + " has no section " + name);
    return std::move(s.contents.front().second);
  }

  // Every name, and the bytes of the first section of each wanted name.
  ElfSections Sections(const std::vector<std::string>& wanted) {
    ElfSections out;
    out.names = SectionNames();
    for (const std::string& name : wanted) {
      const auto it = std::find(out.names.begin(), out.names.end(), name);
      if (it == out.names.end()) continue;
      std::vector<uint8_t> bytes = Contents(static_cast<size_t>(it - out.names.begin()), 0);
      out.contents.emplace_back(name, std::string(bytes.begin(), bytes.end()));
    }
    return out;
  }

 private:
  void ReadHeader() {
    // Check the magic before the full header size so that a short text file
    // is reported as "not ELF" rather than as a truncated ELF file.
    const uint64_t ident_size = std::min<uint64_t>(file_.size(), EI_NIDENT);
    std::vector<uint8_t> ident = file_.Read(0, ident_size, "ELF identification");
    if (ident_size < SELFMAG || std::memcmp(ident.data(), ELFMAG, SELFMAG) != 0) {
      throw InputError(file_.path() + " is not an ELF file");
    }
    if (ident_size < EI_NIDENT || file_.size() < sizeof(Elf64_Ehdr)) {
      file_.Malformed("ELF header is truncated");
    }
    if (ident[EI_CLASS] != ELFCLASS64) {
      throw InputError(file_.path() + " is not a 64-bit ELF file (only ELF64 is supported)");
    }
    if (ident[EI_DATA] != ELFDATA2LSB) {
      throw InputError(file_.path() + " is not a little-endian ELF file");
    }
    if (ident[EI_VERSION] != EV_CURRENT) file_.Malformed("unknown ELF version");
    header_ = file_.ReadStruct<Elf64_Ehdr>(0, "ELF header");
  }

  void ReadSectionHeaders() {
    if (header_.e_shoff == 0) file_.Malformed("no section header table");
    if (header_.e_shentsize != sizeof(Elf64_Shdr)) {
      file_.Malformed("section header size is " + std::to_string(header_.e_shentsize) +
                      ", expected " + std::to_string(sizeof(Elf64_Shdr)));
    }
    // With 0xff00 or more sections, e_shnum is 0 and the real count is kept
    // in the sh_size of section header 0 (the ELF "extended numbering").
    uint64_t count = header_.e_shnum;
    if (count == 0) {
      count = file_.ReadStruct<Elf64_Shdr>(header_.e_shoff, "section header 0").sh_size;
    }
    // Bound the count by the file size before multiplying, so that a corrupt
    // count can neither overflow nor cause a huge allocation.
    if (count > file_.size() / sizeof(Elf64_Shdr)) {
      file_.Malformed("section header table (" + std::to_string(count) +
                      " entries) is larger than the file (truncated?)");
    }
    std::vector<uint8_t> table =
        file_.Read(header_.e_shoff, count * sizeof(Elf64_Shdr), "section header table");
    sections_.resize(count);
    for (size_t i = 0; i < count; ++i) sections_[i] = Entry<Elf64_Shdr>(table, i);
  }

  std::string SectionName(size_t index) const { return "section " + std::to_string(index); }

  // The contents of a section, checked to hold whole entries of entry_size.
  std::vector<uint8_t> Contents(size_t index, uint64_t entry_size) const {
    const Elf64_Shdr& sh = sections_[index];
    if (sh.sh_type == SHT_NOBITS) file_.Malformed(SectionName(index) + " has no file contents");
    if (entry_size != 0) {
      if (sh.sh_entsize != entry_size) {
        file_.Malformed(SectionName(index) + " has entry size " + std::to_string(sh.sh_entsize) +
                        ", expected " + std::to_string(entry_size));
      }
      if (sh.sh_size % entry_size != 0) {
        file_.Malformed(SectionName(index) + " size is not a multiple of its entry size");
      }
    }
    return file_.Read(sh.sh_offset, sh.sh_size, SectionName(index));
  }

  // The string table that section `index` refers to through sh_link.
  StringTable LinkedStrings(size_t index) const {
    const uint64_t link = sections_[index].sh_link;
    if (link == 0 || link >= sections_.size() || sections_[link].sh_type != SHT_STRTAB) {
      file_.Malformed(SectionName(index) + " links to " + SectionName(link) +
                      ", which is not a string table");
    }
    return StringTable(file_, Contents(link, 0), SectionName(link));
  }

  // The entries of a table section (.dynamic, .dynsym), decoded.
  template <typename T>
  std::vector<T> Entries(size_t index) const {
    const std::vector<uint8_t> contents = Contents(index, sizeof(T));
    std::vector<T> out(contents.size() / sizeof(T));
    for (size_t i = 0; i < out.size(); ++i) out[i] = Entry<T>(contents, i);
    return out;
  }

  void ReadDynamic(size_t index, ElfInfo& info) const {
    const StringTable strings = LinkedStrings(index);
    for (const Elf64_Dyn& dyn : Entries<Elf64_Dyn>(index)) {
      // DT_NULL ends the array; the linker often leaves spare slots after it.
      if (dyn.d_tag == DT_NULL) break;
      if (dyn.d_tag == DT_NEEDED) info.needed.push_back(strings.Get(dyn.d_un.d_val));
      if (dyn.d_tag == DT_SONAME) info.soname = strings.Get(dyn.d_un.d_val);
    }
  }

  void ReadDynamicSymbols(size_t index, ElfInfo& info) const {
    const StringTable strings = LinkedStrings(index);
    const std::vector<Elf64_Sym> symbols = Entries<Elf64_Sym>(index);
    // Entry 0 is the reserved undefined symbol that every symbol table starts with.
    for (size_t i = 1; i < symbols.size(); ++i) {
      const Elf64_Sym& sym = symbols[i];
      const unsigned bind = ELF64_ST_BIND(sym.st_info);
      const unsigned type = ELF64_ST_TYPE(sym.st_info);
      const unsigned visibility = ELF64_ST_VISIBILITY(sym.st_other);
      ElfSymbol out;
      out.name = strings.Get(sym.st_name);
      out.defined = sym.st_shndx != SHN_UNDEF;
      // Hidden or internal symbols rarely reach .dynsym, but when they do the
      // loader still will not bind other modules to them.
      out.global = (bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE) &&
                   visibility != STV_HIDDEN && visibility != STV_INTERNAL;
      // An IFUNC resolves to a function at load time; dlsym() returns that function.
      out.function = type == STT_FUNC || type == STT_GNU_IFUNC;
      info.dynamic_symbols.push_back(std::move(out));
    }
  }

  const FileReader& file_;
  Elf64_Ehdr header_{};
  std::vector<Elf64_Shdr> sections_;
};

// Whether s is one or more ".<digits>" groups.
bool IsNumericVersionSuffix(std::string_view s) {
  if (s.empty()) return false;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] != '.') return false;
    size_t digits = 0;
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) ++digits;
    if (digits == 0) return false;
  }
  return true;
}

}  // namespace

ElfInfo ReadElfInfo(const std::string& path) {
  FileReader file(path);
  return ElfParser(file).Parse();
}

std::string ReadElfSection(const std::string& path, const std::string& name) {
  FileReader file(path);
  return ElfParser(file).SectionBytes(name);
}

std::vector<std::string> ReadElfSectionNames(const std::string& path) {
  FileReader file(path);
  return ElfParser(file).SectionNames();
}

ElfSections ReadElfSections(const std::string& path, const std::vector<std::string>& wanted) {
  FileReader file(path);
  return ElfParser(file).Sections(wanted);
}

const std::string* ElfSections::Bytes(const std::string& name) const {
  for (const auto& [n, bytes] : contents)
    if (n == name) return &bytes;
  return nullptr;
}

bool IsAllowedDependency(std::string_view soname) {
  if (soname.empty() || soname.find('/') != std::string_view::npos) return false;
  // The dynamic loader's name varies by architecture (ld-linux-x86-64.so.2,
  // ld-linux-aarch64.so.1), so only its prefix is fixed.
  if (soname.starts_with("ld-linux")) return true;
  static constexpr std::string_view kAllowedLibraries[] = {
      "libcudart.so", "libcuda.so", "libstdc++.so",  "libm.so",  "libgcc_s.so",
      "libc.so",      "libdl.so",   "libpthread.so", "librt.so",
  };
  for (std::string_view lib : kAllowedLibraries) {
    if (!soname.starts_with(lib)) continue;
    std::string_view suffix = soname.substr(lib.size());
    if (suffix.empty() || IsNumericVersionSuffix(suffix)) return true;
  }
  return false;
}

std::vector<std::string> ForbiddenDependencies(const ElfInfo& info, bool tvm_ffi) {
  std::vector<std::string> forbidden;
  for (const std::string& lib : info.needed) {
    if (tvm_ffi && lib == "libtvm_ffi.so") continue;
    if (!IsAllowedDependency(lib)) forbidden.push_back(lib);
  }
  return forbidden;
}

bool ExportsFunction(const ElfInfo& info, std::string_view name) {
  for (const ElfSymbol& sym : info.dynamic_symbols) {
    if (sym.name == name && sym.defined && sym.global && sym.function) return true;
  }
  return false;
}

}  // namespace ptxbench

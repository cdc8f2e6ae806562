#include "compile/elf.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.h"

namespace ptxbench {
namespace {

namespace fs = std::filesystem;

// A fresh directory under /tmp, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ptxbench_elf_test_XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs a shell command; the compilers' own diagnostics go to the test log.
bool RunCommand(const std::string& command) {
  int rc = std::system(command.c_str());
  if (rc != 0) std::fprintf(stderr, "command failed (%d): %s\n", rc, command.c_str());
  return rc == 0;
}

// The first line that a command prints, or "" if it fails.
std::string CommandOutput(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "";
  std::string out;
  char buf[4096];
  while (fgets(buf, sizeof(buf), pipe) != nullptr) out += buf;
  if (pclose(pipe) != 0) return "";
  out.erase(std::find(out.begin(), out.end(), '\n'), out.end());
  return out;
}

bool OnPath(const std::string& tool) {
  return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0;
}

// Writes `source` to NAME.cc in dir and builds libNAME.so from it with g++.
// Returns the library's path, or "" if the build failed.
std::string BuildSharedObject(const TempDir& dir, const std::string& name,
                              const std::string& source, const std::string& extra_flags = "") {
  const std::string src = dir.File(name + ".cc");
  const std::string lib = dir.File("lib" + name + ".so");
  WriteFile(src, source);
  if (!RunCommand("g++ -shared -fPIC -O0 -o '" + lib + "' '" + src + "' " + extra_flags)) return "";
  return lib;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

const ElfSymbol* FindSymbol(const ElfInfo& info, const std::string& name) {
  for (const ElfSymbol& sym : info.dynamic_symbols) {
    if (sym.name == name) return &sym;
  }
  return nullptr;
}

// Expects ReadElfInfo(path) to throw InputError whose message contains `fragment`.
void ExpectInputError(const std::string& path, const std::string& fragment = "") {
  try {
    ReadElfInfo(path);
    ADD_FAILURE() << "expected InputError for " << path;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message '" << e.what() << "' lacks '" << fragment << "'";
  }
}

constexpr char kRunSource[] = R"(
#include <cstdio>
extern "C" int run(int argc, char** argv) {
  std::printf("%d %p\n", argc, static_cast<void*>(argv));
  return 0;
}
)";

// ---------------------------------------------------------------------------
// Real shared objects built by g++.

TEST(ReadElfInfoTest, GxxSharedObjectExportingRun) {
  TempDir dir;
  const std::string lib =
      BuildSharedObject(dir, "candidate", kRunSource, "-Wl,-soname,libcandidate.so.1");
  ASSERT_FALSE(lib.empty());

  ElfInfo info = ReadElfInfo(lib);
  EXPECT_TRUE(ExportsFunction(info, "run"));
  EXPECT_TRUE(Contains(info.needed, "libc.so.6"));
  EXPECT_EQ(info.soname, "libcandidate.so.1");
  // g++ links only the C/C++ runtime, all of which the policy allows.
  EXPECT_TRUE(ForbiddenDependencies(info).empty());

  const ElfSymbol* run = FindSymbol(info, "run");
  ASSERT_NE(run, nullptr);
  EXPECT_TRUE(run->defined);
  EXPECT_TRUE(run->global);
  EXPECT_TRUE(run->function);

  // printf is imported, not exported: it is in .dynsym but undefined.
  const ElfSymbol* printf_sym = FindSymbol(info, "printf");
  ASSERT_NE(printf_sym, nullptr);
  EXPECT_FALSE(printf_sym->defined);
  EXPECT_FALSE(ExportsFunction(info, "printf"));
  EXPECT_FALSE(ExportsFunction(info, "no_such_function"));
}

// One read gives every name and the bytes of the sections asked for, as the one-section
// reader gives them; a name the object lacks is simply not among the contents.
TEST(ReadElfSectionsTest, NamesAndTheWantedSectionsInOneRead) {
  TempDir dir;
  const std::string lib = BuildSharedObject(
      dir, "sections",
      std::string(kRunSource) +
          "__attribute__((used, section(\".probe_a\"))) static const char a[] = \"first\";\n"
          "__attribute__((used, section(\".probe_b\"))) static const char b[] = \"second!\";\n");
  ASSERT_FALSE(lib.empty());
  const ElfSections s = ReadElfSections(lib, {".probe_b", ".absent", ".probe_a"});
  EXPECT_EQ(s.names, ReadElfSectionNames(lib));
  ASSERT_NE(s.Bytes(".probe_a"), nullptr);
  ASSERT_NE(s.Bytes(".probe_b"), nullptr);
  EXPECT_EQ(*s.Bytes(".probe_a"), std::string("first", 6));
  EXPECT_EQ(*s.Bytes(".probe_b"), ReadElfSection(lib, ".probe_b"));
  EXPECT_EQ(s.Bytes(".absent"), nullptr);
  EXPECT_EQ(s.contents.size(), 2u);
}

TEST(ReadElfInfoTest, NoSonameIsEmpty) {
  TempDir dir;
  const std::string lib = BuildSharedObject(dir, "candidate", kRunSource);
  ASSERT_FALSE(lib.empty());
  EXPECT_EQ(ReadElfInfo(lib).soname, "");
}

TEST(ReadElfInfoTest, RunNotExported) {
  struct Case {
    const char* label;
    const char* source;
  };
  const Case cases[] = {
      {"absent", R"(extern "C" int other(int x) { return x + 1; })"},
      {"static", R"(
static int run(int x) { return x * 2; }
extern "C" int other(int x) { return run(x); }
)"},
      {"hidden", R"(
extern "C" __attribute__((visibility("hidden"))) int run(int x) { return x; }
extern "C" int other(int x) { return run(x); }
)"},
      // The object calls run but expects another module to provide it.
      {"undefined", R"(
extern "C" int run(int x);
extern "C" int other(int x) { return run(x); }
)"},
      {"data object", R"(extern "C" { int run = 42; })"},
      // Without extern "C" the dynamic symbol is the mangled _Z3runi.
      {"c++ linkage", R"(int run(int x) { return x; })"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    TempDir dir;
    const std::string lib = BuildSharedObject(dir, "candidate", c.source);
    ASSERT_FALSE(lib.empty());
    EXPECT_FALSE(ExportsFunction(ReadElfInfo(lib), "run"));
  }
}

TEST(ReadElfInfoTest, StaticRunStillExportsOtherFunctions) {
  TempDir dir;
  const std::string lib = BuildSharedObject(dir, "candidate", R"(
static int run(int x) { return x * 2; }
extern "C" int other(int x) { return run(x); }
)");
  ASSERT_FALSE(lib.empty());
  ElfInfo info = ReadElfInfo(lib);
  EXPECT_FALSE(ExportsFunction(info, "run"));
  EXPECT_EQ(FindSymbol(info, "run"), nullptr);
  EXPECT_TRUE(ExportsFunction(info, "other"));
}

TEST(ReadElfInfoTest, WeakRunIsExported) {
  TempDir dir;
  const std::string lib = BuildSharedObject(
      dir, "candidate", R"(extern "C" __attribute__((weak)) int run(int x) { return x; })");
  ASSERT_FALSE(lib.empty());
  EXPECT_TRUE(ExportsFunction(ReadElfInfo(lib), "run"));
}

TEST(ReadElfInfoTest, LibmDependencyIsAllowed) {
  TempDir dir;
  // cos() of a runtime value is a real call into libm, so -lm is recorded
  // even if the linker drops unused libraries (--as-needed).
  const std::string lib = BuildSharedObject(dir, "candidate", R"(
#include <cmath>
extern "C" int run(double x) { return static_cast<int>(std::cos(x) * 100); }
)",
                                            "-lm");
  ASSERT_FALSE(lib.empty());
  ElfInfo info = ReadElfInfo(lib);
  EXPECT_TRUE(Contains(info.needed, "libm.so.6"));
  EXPECT_TRUE(ForbiddenDependencies(info).empty());
}

// A tvm-ffi candidate (upstream's ABI) may also need the TVM-FFI runtime, by its exact
// SONAME; nothing else under that name, and a native candidate not at all.
TEST(ForbiddenDependenciesTest, TheTvmFfiRuntimeOnlyForTvmFfiCandidates) {
  ElfInfo info;
  info.needed = {"libtvm_ffi.so", "libcudart.so.13", "libstdc++.so.6", "libc.so.6"};
  EXPECT_TRUE(ForbiddenDependencies(info, /*tvm_ffi=*/true).empty());
  EXPECT_EQ(ForbiddenDependencies(info), std::vector<std::string>{"libtvm_ffi.so"});
  info.needed = {"libtvm_ffi.so.1", "libtvm_ffi_testing.so", "/tmp/libtvm_ffi.so",
                 "libtvm_ffi.so.evil", "libcublas.so.13"};
  EXPECT_EQ(ForbiddenDependencies(info, /*tvm_ffi=*/true), info.needed);
}

TEST(ReadElfInfoTest, FakeCublasDependencyIsForbidden) {
  TempDir dir;
  // A stand-in for a CUDA library that the policy forbids.
  const std::string fake =
      BuildSharedObject(dir, "cublasfake", R"(extern "C" int cublasFakeGemm(int n) { return n; })",
                        "-Wl,-soname,libcublasfake.so");
  ASSERT_FALSE(fake.empty());
  EXPECT_EQ(ReadElfInfo(fake).soname, "libcublasfake.so");

  const std::string lib = BuildSharedObject(dir, "candidate", R"(
extern "C" int cublasFakeGemm(int n);
extern "C" int run(int n) { return cublasFakeGemm(n); }
)",
                                            "-L'" + dir.File("") + "' -lcublasfake -lm");
  ASSERT_FALSE(lib.empty());
  ElfInfo info = ReadElfInfo(lib);
  EXPECT_TRUE(Contains(info.needed, "libcublasfake.so"));
  EXPECT_TRUE(ExportsFunction(info, "run"));
  EXPECT_EQ(ForbiddenDependencies(info), std::vector<std::string>{"libcublasfake.so"});
}

TEST(ReadElfInfoTest, ZlibDependencyIsForbidden) {
  TempDir dir;
  const std::string source = R"(
extern "C" const char* zlibVersion(void);
extern "C" int run() { return zlibVersion()[0]; }
)";
  // Only a probe: the machine may lack the zlib development link.
  WriteFile(dir.File("probe.cc"), source);
  if (std::system(("g++ -shared -fPIC -o '" + dir.File("probe.so") + "' '" + dir.File("probe.cc") +
                   "' -lz >/dev/null 2>&1")
                      .c_str()) != 0) {
    GTEST_SKIP() << "cannot link with -lz here";
  }
  const std::string lib = BuildSharedObject(dir, "candidate", source, "-lz");
  ASSERT_FALSE(lib.empty());
  ElfInfo info = ReadElfInfo(lib);
  EXPECT_TRUE(Contains(info.needed, "libz.so.1"));
  EXPECT_EQ(ForbiddenDependencies(info), std::vector<std::string>{"libz.so.1"});
}

// ---------------------------------------------------------------------------
// A candidate built the way the harness builds it, with nvcc.

TEST(ReadElfInfoTest, NvccSharedObject) {
  if (!OnPath("nvcc")) GTEST_SKIP() << "nvcc is not on PATH";
  TempDir dir;
  const std::string src = dir.File("candidate.cu");
  const std::string lib = dir.File("libcandidate.so");
  WriteFile(src, R"(
#include <cuda_runtime.h>
__global__ void add_one(int* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1;
}
extern "C" int run(int* x, int n) {
  add_one<<<(n + 255) / 256, 256>>>(x, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
)");
  ASSERT_TRUE(
      RunCommand("nvcc -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a "
                 "-cudart shared -o '" +
                 lib + "' '" + src + "'"));
  ElfInfo info = ReadElfInfo(lib);
  EXPECT_TRUE(ExportsFunction(info, "run"));
  const bool has_cudart = std::any_of(info.needed.begin(), info.needed.end(),
                                      [](const auto& n) { return n.starts_with("libcudart.so"); });
  EXPECT_TRUE(has_cudart) << "needed: " << testing::PrintToString(info.needed);
  EXPECT_TRUE(ForbiddenDependencies(info).empty())
      << testing::PrintToString(ForbiddenDependencies(info));
}

// ---------------------------------------------------------------------------
// Libraries from the system, which are much larger than the test objects.

TEST(ReadElfInfoTest, SystemLibstdcxx) {
  const std::string path = CommandOutput("g++ -print-file-name=libstdc++.so.6");
  if (path.empty() || !fs::exists(path)) GTEST_SKIP() << "cannot locate libstdc++.so.6";
  ElfInfo info = ReadElfInfo(path);
  EXPECT_EQ(info.soname, "libstdc++.so.6");
  EXPECT_TRUE(Contains(info.needed, "libc.so.6"));
  EXPECT_TRUE(Contains(info.needed, "libm.so.6"));
  EXPECT_GT(info.dynamic_symbols.size(), 1000u);
  EXPECT_TRUE(ExportsFunction(info, "_ZSt9terminatev"));  // std::terminate()
}

TEST(ReadElfInfoTest, CudaRuntimeLibrary) {
  const std::string path = "/usr/local/cuda/lib64/libcudart.so";
  if (!fs::exists(path)) GTEST_SKIP() << path << " not found";
  ElfInfo info = ReadElfInfo(path);
  EXPECT_TRUE(info.soname.starts_with("libcudart.so.")) << info.soname;
  EXPECT_TRUE(IsAllowedDependency(info.soname));
  EXPECT_TRUE(ExportsFunction(info, "cudaMalloc"));
}

// ---------------------------------------------------------------------------
// Files that are not well-formed ELF64 shared objects.

TEST(ReadElfInfoTest, UnreadableFiles) {
  TempDir dir;
  ExpectInputError(dir.File("missing.so"), "cannot open");
  ExpectInputError(dir.File(""), "not a regular file");  // the directory itself
}

TEST(ReadElfInfoTest, NonElfFiles) {
  TempDir dir;
  const std::string empty = dir.File("empty.so");
  WriteFile(empty, "");
  ExpectInputError(empty, "not an ELF file");

  const std::string text = dir.File("text.so");
  WriteFile(text, "This is a text file, not a shared object.\n");
  ExpectInputError(text, "not an ELF file");

  const std::string tiny = dir.File("tiny.so");
  WriteFile(tiny,
            "\x7f"
            "EL");
  ExpectInputError(tiny, "not an ELF file");

  const std::string magic_only = dir.File("magic.so");
  WriteFile(magic_only,
            "\x7f"
            "ELF");
  ExpectInputError(magic_only, "truncated");
}

class CorruptElfTest : public testing::Test {
 protected:
  void SetUp() override {
    original_path_ = BuildSharedObject(dir_, "candidate", kRunSource);
    ASSERT_FALSE(original_path_.empty());
    original_ = ReadFile(original_path_);
    ASSERT_GE(original_.size(), sizeof(Elf64_Ehdr));
    std::memcpy(&header_, original_.data(), sizeof(header_));
    for (size_t i = 0; i < header_.e_shnum; ++i) {
      Elf64_Shdr sh;
      std::memcpy(&sh, original_.data() + header_.e_shoff + i * sizeof(sh), sizeof(sh));
      sections_.push_back(sh);
    }
  }

  // Offset in the file of section header `index`.
  size_t SectionHeaderOffset(size_t index) const {
    return header_.e_shoff + index * sizeof(Elf64_Shdr);
  }

  size_t FindSection(uint32_t type) const {
    for (size_t i = 0; i < sections_.size(); ++i) {
      if (sections_[i].sh_type == type) return i;
    }
    return 0;
  }

  // Writes `bytes` as a new file and returns its path.
  std::string Write(const std::string& bytes) {
    const std::string path = dir_.File("corrupt" + std::to_string(counter_++) + ".so");
    WriteFile(path, bytes);
    return path;
  }

  template <typename T>
  std::string Patched(size_t offset, T value) {
    std::string bytes = original_;
    std::memcpy(bytes.data() + offset, &value, sizeof(value));
    return Write(bytes);
  }

  TempDir dir_;
  std::string original_path_;
  std::string original_;
  Elf64_Ehdr header_;
  std::vector<Elf64_Shdr> sections_;
  int counter_ = 0;
};

TEST_F(CorruptElfTest, OriginalParses) {
  EXPECT_TRUE(ExportsFunction(ReadElfInfo(original_path_), "run"));
}

TEST_F(CorruptElfTest, EveryTruncationIsRejected) {
  // The section header table sits at the end of the file, so any proper
  // prefix of the file lacks some of it. Check every short prefix and a
  // spread of longer ones, including the one a single byte short.
  std::vector<size_t> lengths;
  for (size_t n = 0; n < 256; ++n) lengths.push_back(n);
  for (size_t n = 256; n < original_.size(); n += 61) lengths.push_back(n);
  lengths.push_back(original_.size() - 1);
  const std::string path = dir_.File("truncated.so");
  for (size_t n : lengths) {
    SCOPED_TRACE("length " + std::to_string(n));
    WriteFile(path, original_.substr(0, n));
    ExpectInputError(path);
  }
}

TEST_F(CorruptElfTest, WrongClassOrByteOrder) {
  std::string bytes = original_;
  bytes[EI_CLASS] = ELFCLASS32;
  ExpectInputError(Write(bytes), "64-bit");

  bytes = original_;
  bytes[EI_DATA] = ELFDATA2MSB;
  ExpectInputError(Write(bytes), "little-endian");
}

TEST_F(CorruptElfTest, BadSectionHeaderTable) {
  ExpectInputError(Patched(offsetof(Elf64_Ehdr, e_shoff), uint64_t{0}), "no section header");
  ExpectInputError(Patched(offsetof(Elf64_Ehdr, e_shoff), uint64_t{1} << 62), "past the end");
  ExpectInputError(Patched(offsetof(Elf64_Ehdr, e_shoff), ~uint64_t{0}), "past the end");
  ExpectInputError(Patched(offsetof(Elf64_Ehdr, e_shentsize), uint16_t{32}), "section header size");
  ExpectInputError(Patched(offsetof(Elf64_Ehdr, e_shnum), uint16_t{0xfeff}),
                   "larger than the file");
}

TEST_F(CorruptElfTest, BadDynamicSection) {
  const size_t dynamic = FindSection(SHT_DYNAMIC);
  ASSERT_NE(dynamic, 0u);
  const size_t sh = SectionHeaderOffset(dynamic);
  ExpectInputError(Patched(sh + offsetof(Elf64_Shdr, sh_offset), original_.size() - 8),
                   "past the end");
  ExpectInputError(Patched(sh + offsetof(Elf64_Shdr, sh_offset), ~uint64_t{0} - 4), "past the end");
  ExpectInputError(Patched(sh + offsetof(Elf64_Shdr, sh_size), ~uint64_t{0} - 15), "past the end");
  ExpectInputError(Patched(sh + offsetof(Elf64_Shdr, sh_size), uint64_t{17}), "multiple");
  ExpectInputError(Patched(sh + offsetof(Elf64_Shdr, sh_entsize), uint64_t{8}), "entry size");
  ExpectInputError(Patched(sh + offsetof(Elf64_Shdr, sh_link), uint32_t{0}), "string table");
  ExpectInputError(Patched(sh + offsetof(Elf64_Shdr, sh_link), uint32_t{60000}), "string table");
  // Linking to itself: the dynamic section is not a string table.
  ExpectInputError(Patched(sh + offsetof(Elf64_Shdr, sh_link), static_cast<uint32_t>(dynamic)),
                   "string table");
}

TEST_F(CorruptElfTest, BadStringOffsets) {
  const size_t dynamic = FindSection(SHT_DYNAMIC);
  ASSERT_NE(dynamic, 0u);
  const Elf64_Shdr& dyn = sections_[dynamic];
  const Elf64_Shdr& strtab = sections_[dyn.sh_link];
  // Point the first DT_NEEDED entry just past the string table, then at its
  // last byte with that byte's NUL overwritten (an unterminated string).
  for (size_t i = 0; i * sizeof(Elf64_Dyn) < dyn.sh_size; ++i) {
    const size_t entry = dyn.sh_offset + i * sizeof(Elf64_Dyn);
    Elf64_Dyn d;
    std::memcpy(&d, original_.data() + entry, sizeof(d));
    if (d.d_tag != DT_NEEDED) continue;
    const size_t value_offset = entry + offsetof(Elf64_Dyn, d_un);
    ExpectInputError(Patched(value_offset, uint64_t{strtab.sh_size}), "outside");
    ExpectInputError(Patched(value_offset, ~uint64_t{0}), "outside");

    std::string bytes = original_;
    const uint64_t last = strtab.sh_size - 1;
    std::memcpy(bytes.data() + value_offset, &last, sizeof(last));
    bytes[strtab.sh_offset + last] = 'x';
    ExpectInputError(Write(bytes), "unterminated");
    return;
  }
  FAIL() << "no DT_NEEDED entry";
}

TEST_F(CorruptElfTest, RandomCorruptionNeverCrashes) {
  // Overwrite random bytes, concentrated on the parts the parser reads (the
  // ELF header and the section header table). Every outcome must be either a
  // successful parse or an InputError; anything else (another exception, or
  // a crash under the sanitizers) is a bug.
  std::mt19937 rng(12345);
  const std::string path = dir_.File("fuzz.so");
  const size_t table_size = sections_.size() * sizeof(Elf64_Shdr);
  int rejected = 0;
  for (int iteration = 0; iteration < 2000; ++iteration) {
    std::string bytes = original_;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      size_t pos;
      switch (rng() % 3) {
        case 0:
          pos = rng() % sizeof(Elf64_Ehdr);
          break;
        case 1:
          pos = header_.e_shoff + rng() % table_size;
          break;
        default:
          pos = rng() % bytes.size();
      }
      bytes[pos] = static_cast<char>(rng());
    }
    WriteFile(path, bytes);
    try {
      ReadElfInfo(path);
    } catch (const Error& e) {
      ASSERT_EQ(e.kind(), ErrorKind::kInput) << e.what();
      ++rejected;
    }
  }
  // Sanity check that the corruption actually reached the parser.
  EXPECT_GT(rejected, 100);
}

// ---------------------------------------------------------------------------
// The dependency policy and symbol queries on hand-made ElfInfo values.

TEST(IsAllowedDependencyTest, Table) {
  struct Case {
    const char* soname;
    bool allowed;
  };
  const Case cases[] = {
      // The CUDA runtime and driver.
      {"libcudart.so.13", true},
      {"libcudart.so.12", true},
      {"libcudart.so", true},
      {"libcuda.so.1", true},
      {"libcuda.so", true},
      {"libcuda.so.580.65.06", true},
      // The C and C++ runtime.
      {"libstdc++.so.6", true},
      {"libm.so.6", true},
      {"libgcc_s.so.1", true},
      {"libc.so.6", true},
      {"libdl.so.2", true},
      {"libpthread.so.0", true},
      {"librt.so.1", true},
      {"ld-linux-x86-64.so.2", true},
      {"ld-linux-aarch64.so.1", true},
      // Other CUDA libraries and anything else.
      {"libcublas.so.13", false},
      {"libcublasLt.so.13", false},
      {"libcufft.so.12", false},
      {"libcudnn.so.9", false},
      {"libnvrtc.so.13", false},
      {"libcudart_static.so", false},
      {"libcudadevrt.so", false},
      {"libz.so.1", false},
      {"libmvec.so.1", false},
      {"libcublasfake.so", false},
      // Look-alikes of allowed names.
      {"", false},
      {"libc.so.evil", false},
      {"libc.so.", false},
      {"libc.so..6", false},
      {"libc.so.6a", false},
      {"libc.so6", false},
      {"libm.so.6 ", false},
      {"LIBC.SO.6", false},
      {"libcudart.so.13/../../libevil.so", false},
      {"/usr/lib/x86_64-linux-gnu/libc.so.6", false},
      {"./libc.so.6", false},
      {"ld-linux/../libevil.so", false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(IsAllowedDependency(c.soname), c.allowed) << "'" << c.soname << "'";
  }
}

TEST(ForbiddenDependenciesTest, KeepsOrderOfForbiddenEntries) {
  ElfInfo info;
  info.needed = {"libcublas.so.13", "libcudart.so.13", "libz.so.1", "libc.so.6", "libcufft.so.12"};
  EXPECT_EQ(ForbiddenDependencies(info),
            (std::vector<std::string>{"libcublas.so.13", "libz.so.1", "libcufft.so.12"}));
  info.needed = {"libcudart.so.13", "libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libc.so.6"};
  EXPECT_TRUE(ForbiddenDependencies(info).empty());
  EXPECT_TRUE(ForbiddenDependencies(ElfInfo{}).empty());
}

TEST(ExportsFunctionTest, RequiresDefinedGlobalFunction) {
  struct Case {
    ElfSymbol symbol;
    bool exported;
  };
  const Case cases[] = {
      {{"run", true, true, true}, true},   {{"run", false, true, true}, false},  // imported
      {{"run", true, false, true}, false},                                       // local or hidden
      {{"run", true, true, false}, false},                                       // a data object
      {{"Run", true, true, true}, false},  // names are case-sensitive
      {{"run2", true, true, true}, false}, {{"ru", true, true, true}, false},
  };
  for (const Case& c : cases) {
    ElfInfo info;
    info.dynamic_symbols = {c.symbol};
    EXPECT_EQ(ExportsFunction(info, "run"), c.exported)
        << c.symbol.name << " defined=" << c.symbol.defined << " global=" << c.symbol.global
        << " function=" << c.symbol.function;
  }
  // One matching entry among others suffices.
  ElfInfo info;
  info.dynamic_symbols = {
      {"run", false, true, true}, {"other", true, true, true}, {"run", true, true, true}};
  EXPECT_TRUE(ExportsFunction(info, "run"));
  EXPECT_FALSE(ExportsFunction(ElfInfo{}, "run"));
}

}  // namespace
}  // namespace ptxbench

// Inspection of the shared objects that nvcc builds from candidates. Before a
// candidate is loaded, the harness checks what it links against (DT_NEEDED)
// and that it exports the entry point it will dlsym(). Reading the ELF file
// directly, instead of dlopen()ing it, means nothing of the candidate runs
// (no constructors) before it has passed these checks.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ptxbench {

// One entry of the dynamic symbol table (.dynsym).
struct ElfSymbol {
  std::string name;
  bool defined;   // has a section index (not SHN_UNDEF): this object provides it
  bool global;    // binding GLOBAL, WEAK or GNU_UNIQUE and visibility not hidden/internal,
                  // i.e. other modules (and dlsym) can bind to it
  bool function;  // type FUNC or GNU_IFUNC
};

struct ElfInfo {
  std::vector<std::string> needed;  // DT_NEEDED entries, in file order
  std::vector<ElfSymbol> dynamic_symbols;
  std::string soname;  // DT_SONAME; empty if the object has none
};

// Parses an ELF64 little-endian file. A file without a dynamic section or
// dynamic symbol table (e.g. a relocatable object) yields empty lists.
// Throws InputError if the file cannot be read, is not ELF64 little-endian,
// or is truncated or malformed; it never reads outside the file.
ElfInfo ReadElfInfo(const std::string& path);
// The contents of the section called `name` (e.g. ".nv_fatbin", the embedded device code);
// throws InputError when the file is malformed or has no such section.
std::string ReadElfSection(const std::string& path, const std::string& name);
// The names of all sections, in the file's order; throws InputError when it is malformed.
std::vector<std::string> ReadElfSectionNames(const std::string& path);
// Every section's name in the file's order, and the bytes of those named in `wanted` that the
// file has (the first of each name): one read of the file for a check that needs several.
struct ElfSections {
  std::vector<std::string> names;
  std::vector<std::pair<std::string, std::string>> contents;  // name, bytes
  const std::string* Bytes(const std::string& name) const;    // nullptr when not read
};
ElfSections ReadElfSections(const std::string& path, const std::vector<std::string>& wanted);

// The library policy: a candidate may depend only on the CUDA runtime/driver
// and the C/C++ runtime: libcudart.so*, libcuda.so*, libstdc++.so*, libm.so*,
// libgcc_s.so*, libc.so*, libdl.so*, libpthread.so*, librt.so* and the dynamic
// loader ld-linux*. For the lib*.so families, what follows ".so" must be empty
// or a numeric version (".13", ".12.4.127"), so that "libc.so.evil" is not
// mistaken for glibc. Names containing '/' are paths, which the loader opens
// as given rather than searching for, so they are never allowed.
bool IsAllowedDependency(std::string_view soname);

// The entries of info.needed that IsAllowedDependency() rejects, in order. A candidate of
// the tvm-ffi ABI (task/abi.h) may also depend on the TVM-FFI runtime: exactly
// "libtvm_ffi.so", the SONAME of apache-tvm-ffi's library (compile/tvm_ffi.h).
std::vector<std::string> ForbiddenDependencies(const ElfInfo& info, bool tvm_ffi = false);

// Whether the object defines `name` as a function that dlsym() can find:
// defined, global (or weak), and of function type.
bool ExportsFunction(const ElfInfo& info, std::string_view name);

}  // namespace ptxbench

// Which shared objects are mapped into this process. The correctness child
// compares the mappings before and after it loads and runs a candidate: a
// candidate that dlopen()s a vendor kernel library (cuBLAS, cuDNN, ...) at run
// time passes the DT_NEEDED check of compile/elf.h, but its library still shows
// up in /proc/self/maps. The cuBLASLt baseline (cublaslt_gemm.h) runs in a
// different child, so it never appears here.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ptxbench {

// The paths of the file-backed mappings in /proc/<pid>/maps text: lines whose
// sixth field (the pathname, which may contain spaces) starts with '/', with
// the kernel's " (deleted)" suffix removed. Anonymous mappings and pseudo
// paths such as [heap], [stack], [vdso] are skipped; malformed lines too.
std::set<std::string> ParseProcMaps(std::string_view text);

// ParseProcMaps() of /proc/self/maps; throws InputError when it cannot be read.
std::set<std::string> LoadedObjects();

// Whether `path` names a vendor library of ready-made GPU kernels, which a
// candidate must not use. Only the basename counts, by prefix, so that every
// soname version and component library matches (libcublasLt.so.13,
// libcudnn_graph.so.9) and a directory name never does (/opt/mycublas/libfoo.so).
// The rules and the reason for each are in the table in loaded_objects.cc.
// A renamed copy of a vendor library is not recognized by this name check.
bool IsVendorKernelLibrary(std::string_view path);

// The paths in `after` but not in `before` that IsVendorKernelLibrary()
// accepts, sorted.
std::vector<std::string> NewVendorLibraries(const std::set<std::string>& before,
                                            const std::set<std::string>& after);

}  // namespace ptxbench

#include "measure/loaded_objects.h"

#include <algorithm>
#include <iterator>

#include "common/files.h"
#include "common/strings.h"

namespace ptxbench {
namespace {

// Basename prefixes of vendor kernel libraries. A prefix, not a whole name, so
// that the component libraries of one product match too.
constexpr std::string_view kVendorPrefixes[] = {
    "libcublas",      // cuBLAS and cuBLASLt (and cuBLASMp): GEMM kernels, the baseline itself
    "libcudnn",       // cuDNN and its split libraries (libcudnn_graph, libcudnn_engines_*, ...)
    "libcufft",       // cuFFT and cuFFTW
    "libcurand",      // cuRAND: device generators
    "libcusolver",    // cuSOLVER (dense and sparse factorizations, built on cuBLAS)
    "libcusparse",    // cuSPARSE and cuSPARSELt (structured-sparse GEMM)
    "libcutensor",    // cuTENSOR (and -Mg, -net): tensor contractions, i.e. GEMMs
    "libnvinfer",     // TensorRT and its plugin library: tuned GEMM, attention and conv kernels
    "libnvblas",      // NVBLAS: a BLAS front end that forwards to cuBLAS
    "libnpp",         // NPP (libnppc, libnppial, ...): image and signal kernels
    "libcutlass",     // a prebuilt CUTLASS library (CUTLASS is mostly headers; compiled in, it
                      // is the candidate's own code, which is allowed)
    "libflashinfer",  // FlashInfer: attention and GEMM kernels
    "libmagma",       // MAGMA: dense linear algebra kernels
    "libtorch",       // PyTorch (libtorch, libtorch_cuda, libtorch_cpu): ATen ships cuBLAS
                      // calls and its own kernels; Python kernel extensions need it too
    "libc10",         // PyTorch's core library (libc10, libc10_cuda), present wherever libtorch is
};
// Deliberately not listed, since they provide no ready-made kernels for the
// task: the CUDA runtime and driver (libcudart, libcuda), the harness's own
// libraries (libcupti, libnvidia-ml), the compilers and linker a candidate may
// use to build its own code (libnvrtc, libnvJitLink, libnvptxcompiler), and
// libnccl (collectives, of no use on one GPU).

// Removes one whitespace-separated field (and the whitespace before it) from
// the front of *rest; false when none is left.
bool SkipField(std::string_view* rest) {
  size_t start = rest->find_first_not_of(" \t");
  if (start == std::string_view::npos) return false;
  size_t end = rest->find_first_of(" \t", start);
  rest->remove_prefix(end == std::string_view::npos ? rest->size() : end);
  return true;
}

}  // namespace

std::set<std::string> ParseProcMaps(std::string_view text) {
  // A line is "address perms offset dev inode [pathname]"; the pathname starts
  // after the whitespace that follows the inode and runs to the end of the line.
  std::set<std::string> paths;
  for (const std::string& line : SplitLines(text)) {
    std::string_view rest = line;
    int skipped = 0;
    while (skipped < 5 && SkipField(&rest)) ++skipped;
    if (skipped < 5) continue;  // malformed line
    size_t start = rest.find_first_not_of(" \t");
    // No pathname: an anonymous mapping. Not '/': [heap], [stack], [vdso], ...
    if (start == std::string_view::npos || rest[start] != '/') continue;
    std::string_view path = rest.substr(start);
    // The kernel marks a mapping whose file was unlinked; the mapping is still
    // that file's contents, so it counts under the original path.
    constexpr std::string_view kDeleted = " (deleted)";
    if (EndsWith(path, kDeleted)) path.remove_suffix(kDeleted.size());
    paths.emplace(path);
  }
  return paths;
}

std::set<std::string> LoadedObjects() { return ParseProcMaps(ReadFile("/proc/self/maps")); }

bool IsVendorKernelLibrary(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return std::any_of(std::begin(kVendorPrefixes), std::end(kVendorPrefixes),
                     [&](std::string_view prefix) { return StartsWith(base, prefix); });
}

std::vector<std::string> NewVendorLibraries(const std::set<std::string>& before,
                                            const std::set<std::string>& after) {
  std::vector<std::string> added;
  for (const std::string& path : after)
    if (!before.count(path) && IsVendorKernelLibrary(path)) added.push_back(path);
  return added;
}

}  // namespace ptxbench

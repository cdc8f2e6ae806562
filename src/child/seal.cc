#include "child/seal.h"

#include <link.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace ptxbench {
namespace {

#ifndef SYS_mseal
constexpr long kSysMseal = 462;  // x86-64 and arm64 alike
#else
constexpr long kSysMseal = SYS_mseal;
#endif

struct Range {
  uintptr_t begin = 0, end = 0;
  std::string object;
};

// Whose pages are sealed: the harness's executable (its name is empty in dl_iterate_phdr),
// CUPTI (it reads the kernels' records) and the CUDA runtime. The driver and the C library
// are left alone: they manage their own mappings.
bool Sealable(const std::string& name) {
  if (name.empty()) return true;
  for (const char* lib : {"libcupti", "libcudart"})
    if (name.find(lib) != std::string::npos) return true;
  return false;
}

int Collect(dl_phdr_info* info, size_t, void* data) {
  auto* ranges = static_cast<std::vector<Range>*>(data);
  const std::string name = info->dlpi_name ? info->dlpi_name : "";
  if (!Sealable(name)) return 0;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    bool relro = ph.p_type == PT_GNU_RELRO;
    bool read_only_load = ph.p_type == PT_LOAD && !(ph.p_flags & PF_W);
    if (!relro && !read_only_load) continue;
    uintptr_t begin = (info->dlpi_addr + ph.p_vaddr) & ~(page - 1);
    uintptr_t end = info->dlpi_addr + ph.p_vaddr + ph.p_memsz;
    // RELRO ends where the loader stopped protecting it: the last whole page.
    end = relro ? end & ~(page - 1) : (end + page - 1) & ~(page - 1);
    if (end > begin) ranges->push_back({begin, end, name.empty() ? "ptxbench" : name});
  }
  return 0;
}

}  // namespace

nlohmann::json SealHarnessMemory() {
  std::vector<Range> ranges;
  dl_iterate_phdr(Collect, &ranges);
  nlohmann::json errors = nlohmann::json::array();
  size_t sealed = 0, bytes = 0;
  bool unavailable = false;
  for (const Range& r : ranges) {
    if (::syscall(kSysMseal, r.begin, r.end - r.begin, 0UL) == 0) {
      ++sealed;
      bytes += r.end - r.begin;
      continue;
    }
    if (errno == ENOSYS) {
      unavailable = true;
      break;
    }
    if (errors.size() < 8) errors.push_back(r.object + ": " + std::strerror(errno));
  }
  std::string state = unavailable                    ? "unavailable"
                      : errors.empty() && sealed > 0 ? "sealed"
                                                     : "partial";
  nlohmann::json j = {{"event", "sealed"},
                      {"state", state},
                      {"ranges", sealed},
                      {"bytes", bytes},
                      {"errors", errors}};
  if (unavailable) j["reason"] = "this kernel has no mseal(2) (Linux 6.10 and later)";
  return j;
}

}  // namespace ptxbench

#include "child/seal.h"

#include <gtest/gtest.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace ptxbench {
namespace {

// The executable's RELRO range (its GOT), as the loader left it.
int FindRelro(dl_phdr_info* info, size_t, void* data) {
  if (info->dlpi_name && *info->dlpi_name) return 0;  // the executable only
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
      *static_cast<uintptr_t*>(data) = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
      return 1;
    }
  return 0;
}

TEST(Seal, AGotRewriteNeedsAnMprotectThatSealingRefuses) {
  // In a child process: sealing is for the rest of a process's life.
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    nlohmann::json r = SealHarnessMemory();
    if (r["state"] == "unavailable") ::_exit(3);  // a kernel before 6.10
    uintptr_t relro = 0;
    dl_iterate_phdr(FindRelro, &relro);
    if (!relro) ::_exit(4);
    const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    void* at = reinterpret_cast<void*>(relro & ~(page - 1));
    // What got_rewrite does first: make the GOT's page writable again.
    int rc = ::mprotect(at, page, PROT_READ | PROT_WRITE);
    ::_exit(rc == 0 ? 1 : (errno == EPERM ? 0 : 2));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 3) GTEST_SKIP() << "this kernel has no mseal(2)";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the sealed GOT became writable; 2: another error; "
                                       "4: no RELRO segment in the test executable";
}

TEST(Seal, ReportsWhatItSealed) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    nlohmann::json r = SealHarnessMemory();
    bool ok = r["event"] == "sealed" &&
              (r["state"] == "unavailable" || (r["ranges"].get<int>() > 0 && r["bytes"] > 0));
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace ptxbench

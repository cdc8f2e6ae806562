// The workers' host-side hygiene (issue 35), without a service: the private folder that another
// local user cannot take over, and the scratch a killed process leaves (found by the pid in its
// name, removed only once that process is dead).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "common/files.h"
#include "serve/leftovers.h"
#include "serve/worker.h"

namespace ptxbench {
namespace {

// Sets environment variables for the life of the object, then puts the old values back.
class EnvFor {
 public:
  void Set(const std::string& name, const char* value) {
    const char* old = std::getenv(name.c_str());
    saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
    if (value)
      ::setenv(name.c_str(), value, 1);
    else
      ::unsetenv(name.c_str());
  }
  ~EnvFor() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        ::unsetenv(it->first.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Another local user creates ${TMPDIR}/ptxbench-<uid> first: as a symlink to a folder of theirs,
// or (where this test may chown, as root) as a folder of their own, open to all. The workers
// use neither (nothing is created in them) and take a private folder under $HOME instead.
TEST(WorkerDir, ATakenTmpFolderIsPassedOverForAPrivateOneUnderHome) {
  ScratchDir root("serve-worker-test");
  const std::string tmp = root.File("tmp"), home = root.File("home"), theirs = root.File("theirs");
  for (const std::string& d : {tmp, home, theirs}) ASSERT_EQ(::mkdir(d.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(tmp.c_str(), 01777), 0);
  EnvFor env;
  env.Set("TMPDIR", tmp.c_str());
  env.Set("HOME", home.c_str());
  env.Set("XDG_RUNTIME_DIR", nullptr);
  const std::string taken = tmp + "/ptxbench-" + std::to_string(::geteuid());
  EXPECT_EQ(DefaultWorkerDir(), taken);

  // Free: the tmp folder itself, made 0700.
  std::string why;
  EXPECT_EQ(ResolveWorkerDir(&why), taken);
  EXPECT_EQ(why, "");
  ASSERT_EQ(::rmdir(taken.c_str()), 0);

  // A symlink planted there.
  ASSERT_EQ(::symlink(theirs.c_str(), taken.c_str()), 0);
  std::string dir = ResolveWorkerDir(&why);
  EXPECT_EQ(dir.rfind(home + "/.cache/ptxbench/worker-", 0), 0u) << dir;
  EXPECT_TRUE(Contains(why, "symbolic link")) << why;
  struct stat st {};
  ASSERT_EQ(::lstat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_EQ(ResolveWorkerDir(), dir) << "every worker of this user agrees on it";

  // A folder of another user's, open to all (only root can make one here).
  ASSERT_EQ(::unlink(taken.c_str()), 0);
  if (::geteuid() == 0) {
    ASSERT_EQ(::mkdir(taken.c_str(), 0777), 0);
    ASSERT_EQ(::chmod(taken.c_str(), 0777), 0);
    ASSERT_EQ(::chown(taken.c_str(), 65534, 65534), 0);
    EXPECT_EQ(ResolveWorkerDir(&why), dir);
    EXPECT_TRUE(Contains(why, "belongs to uid 65534")) << why;
    ASSERT_EQ(::stat(taken.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0777u) << "the other user's folder was changed";
    EXPECT_EQ(st.st_uid, 65534u);
  }
  // Nothing was made in the folder the other user controls.
  EXPECT_EQ(::rmdir(theirs.c_str()), 0) << "something was created in the planted folder";
}

// The leftovers of a process killed with SIGKILL (a scratch folder in /dev/shm, an unfinished
// build-cache entry with nvcc's temporary files inside, a tmpxft file in $TMPDIR): kept while it
// lives, all removed once it is dead; a live process's stay.
TEST(Leftovers, AKilledProcesssScratchIsRemovedAndALiveOnesKept) {
  ScratchDir root("serve-worker-test");
  const std::string tmp = root.File("tmp"), cache = root.File("cache");
  MakeDirs(tmp);
  MakeDirs(cache + "/build");
  EnvFor env;
  env.Set("TMPDIR", tmp.c_str());
  pid_t victim = ::fork();
  ASSERT_GE(victim, 0);
  if (victim == 0) {
    ::pause();
    ::_exit(0);
  }
  auto plant = [&](pid_t pid, const std::string& tag) {
    std::vector<std::string> made;
    const std::string shm_base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : tmp;
    made.push_back(shm_base + "/ptxbench-" + tag + "." + std::to_string(pid) + ".Ab12Cd");
    MakeDirs(made.back());
    WriteFileAtomic(made.back() + "/outputs.bin", "x");
    made.push_back(cache + "/build/" + tag + "key.tmp." + std::to_string(pid) + ".12345");
    MakeDirs(made.back() + "/tmp");
    WriteFileAtomic(made.back() + "/tmp/tmpxft_00001234_00000000-6_candidate.cpp", "x");
    char hex[16];
    std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(pid));
    made.push_back(tmp + "/tmpxft_" + hex + "_00000000-1_" + tag + ".cpp");
    WriteFileAtomic(made.back(), "x");
    return made;
  };
  std::vector<std::string> dead = plant(victim, "dead");
  std::vector<std::string> alive = plant(::getpid(), "alive");  // this process: alive

  Leftovers before = CountLeftovers(cache, {victim, ::getpid()});
  EXPECT_EQ(before.total(), 0) << "a live process's scratch counted as left over";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  int st = 0;
  ASSERT_EQ(::waitpid(victim, &st, 0), victim);
  Leftovers counted = CountLeftovers(cache, {victim});
  EXPECT_EQ(counted.scratch_folders, 1);
  EXPECT_EQ(counted.cache_tmp, 1);
  EXPECT_EQ(counted.tmpxft_files, 1);
  // As a worker does at its start: every dead process's (others' too, on this host).
  Leftovers removed = RemoveLeftovers(cache);
  const int after = CountLeftovers(cache, {victim}).total();
  std::printf("leftovers of a SIGKILLed process: %d found, %d removed (all dead pids), %d after\n",
              counted.total(), removed.total(), after);
  EXPECT_GE(removed.total(), 3);
  EXPECT_EQ(after, 0);
  for (const std::string& p : dead) EXPECT_NE(::access(p.c_str(), F_OK), 0) << p;
  for (const std::string& p : alive) EXPECT_EQ(::access(p.c_str(), F_OK), 0) << p;
  std::error_code ec;
  std::filesystem::remove_all(alive[0], ec);  // the /dev/shm one is not under `root`
}

}  // namespace
}  // namespace ptxbench

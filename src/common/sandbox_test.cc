// The confinement of children, tried for real on this machine: each protection the probe says
// is here must hold; one it says is missing is skipped with the probe's reason.
#include "common/sandbox.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "common/files.h"
#include "common/subprocess.h"
#include "common/test_process.h"

namespace ptxbench {
namespace {

using namespace std::chrono_literals;

struct Ran {
  ExitInfo exit;
  std::string output;
  std::vector<std::string> channel;
};

Ran RunConfined(const SandboxPolicy& policy, const std::vector<std::string>& argv,
                int channel_fd = -1, size_t channel_limit = 0) {
  PreparedSandbox sandbox(policy);
  ProcessSpec spec;
  spec.argv = argv;
  spec.sandbox = &sandbox;
  spec.channel_fd = channel_fd;
  spec.channel_limit_bytes = channel_limit;
  Child child = Child::Start(spec);
  Ran r;
  r.exit = child.Wait(std::chrono::steady_clock::now() + 20s);
  r.output = child.captured_output();
  r.channel = child.channel_lines();
  return r;
}

SandboxPolicy Minimal() {
  SandboxPolicy p;
  p.enabled = true;
  p.env_allow = {"PATH"};
  p.namespaces = false;
  p.drop_user = false;
  p.landlock = false;
  return p;
}

TEST(Sandbox, EnvironmentIsAnAllowList) {
  ::setenv("PTXBENCH_TEST_API_KEY", "sk-test-0123456789abcdef", 1);
  ::setenv("LC_PTXBENCH_TEST", "kept-by-prefix", 1);
  SandboxPolicy p = Minimal();
  p.env_allow = {"PATH", "LC_*"};
  p.env_set = {{"HOME", "/nonexistent-home"}};
  Ran r = RunConfined(p, {"/usr/bin/env"});
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_EQ(r.output.find("sk-test-0123456789abcdef"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("LC_PTXBENCH_TEST=kept-by-prefix"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("HOME=/nonexistent-home"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("PATH="), std::string::npos);
  ::unsetenv("PTXBENCH_TEST_API_KEY");
}

TEST(Sandbox, SecretValuesAreRedacted) {
  ::setenv("OPENAI_API_KEY", "sk-redact-me-42424242", 1);
  ::setenv("PTXBENCH_TEST_PLAIN", "sk-redact-me-not-a-secret-name", 1);
  std::string text = "the key is sk-redact-me-42424242 twice sk-redact-me-42424242";
  EXPECT_EQ(RedactSecrets(text), "the key is [redacted] twice [redacted]");
  EXPECT_TRUE(LooksSecret("ANTHROPIC_API_KEY"));
  EXPECT_TRUE(LooksSecret("PTXBENCH_SERVE_TOKEN"));
  EXPECT_TRUE(LooksSecret("DATABASE_URL"));
  EXPECT_FALSE(LooksSecret("PATH"));
  ::unsetenv("OPENAI_API_KEY");
}

TEST(Sandbox, SeccompRefusesExecAndForkButAllowsThreads) {
  if (!ProbeSandbox().seccomp) GTEST_SKIP() << "seccomp: " << ProbeSandbox().seccomp_why;
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::string why;
    if (!ApplySeccomp({}, &why)) ::_exit(10);
    bool thread_ran = false;
    std::thread([&] { thread_ran = true; }).join();
    if (!thread_ran) ::_exit(11);
    pid_t f = ::fork();
    if (f == 0) ::_exit(0);  // a process was made: the filter failed
    if (f >= 0 || errno != EPERM) ::_exit(12);
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    ::execv("/bin/true", argv);
    if (errno != EPERM) ::_exit(13);
    if (::socket(AF_INET, SOCK_STREAM, 0) >= 0 || errno != EPERM) ::_exit(14);
    if (::socket(AF_UNIX, SOCK_STREAM, 0) < 0) ::_exit(15);
    // Made not dumpable before the candidate, a process stays so (its /proc/self/mem closed).
    if (::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0 || errno != EPERM) ::_exit(16);
    if (::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) < 0) ::_exit(17);  // other prctl calls pass
    ::_exit(0);
  }
  testing::ExpectChildExitedZero(pid,
                                 "10 filter refused, 11 thread, 12 fork, 13 exec, "
                                 "14 inet socket, 15 unix socket, 16 made dumpable, "
                                 "17 prctl refused");
}

// The layer a child adds before it maps a candidate: writes only beneath the paths given, so
// /proc/self/mem (which writes through any page protection) and the rest of /proc are closed.
TEST(Sandbox, RestrictWritesClosesProcSelfMem) {
  if (ProbeSandbox().landlock_abi == 0) GTEST_SKIP() << ProbeSandbox().landlock_why;
  ScratchDir own("ptxbench-rw-own");
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Open before the layer: refused after it only because of it.
    int before = ::open("/proc/self/mem", O_RDWR | O_CLOEXEC);
    if (before < 0) ::_exit(9);
    ::close(before);
    std::string why;
    if (!RestrictWritesTo({own.path()}, &why)) ::_exit(10);
    if (::open("/proc/self/mem", O_RDWR | O_CLOEXEC) >= 0) ::_exit(11);
    std::string task_mem = "/proc/self/task/" + std::to_string(::gettid()) + "/mem";
    if (::open(task_mem.c_str(), O_WRONLY | O_CLOEXEC) >= 0) ::_exit(12);
    if (::open("/proc/self/mem", O_RDONLY | O_CLOEXEC) < 0) ::_exit(13);  // reading stays
    int mine = ::open(own.File("mine.txt").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (mine < 0) ::_exit(14);
    ::_exit(0);
  }
  testing::ExpectChildExitedZero(pid,
                                 "9 no /proc/self/mem to start with, 10 layer refused, "
                                 "11 /proc/self/mem writable, 12 the task's mem writable, "
                                 "13 /proc/self/mem unreadable, 14 own folder unwritable");
}

TEST(Sandbox, LandlockConfinesReadsAndWrites) {
  if (ProbeSandbox().landlock_abi == 0) GTEST_SKIP() << ProbeSandbox().landlock_why;
  ScratchDir outside("ptxbench-ll-outside");
  ScratchDir own("ptxbench-ll-own");
  WriteFileAtomic(outside.File("secret.txt"), "do-not-read-me\n");
  SandboxPolicy p = Minimal();
  p.landlock = true;
  p.read_paths = {"/usr", "/lib", "/lib64", "/bin", "/etc"};
  p.write_paths = {own.path()};
  p.device_paths = {"/dev/null"};
  Ran r = RunConfined(p, {"/bin/sh", "-c",
                          "cat '" + outside.File("secret.txt") + "'; echo read=$?; echo hi > '" +
                              own.File("mine.txt") + "'; echo write=$?; echo x > '" +
                              outside.File("planted.txt") + "'; echo plant=$?"});
  EXPECT_EQ(r.output.find("do-not-read-me"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("read=1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("write=0"), std::string::npos) << r.output;
  EXPECT_FALSE(FileExists(outside.File("planted.txt")));
  EXPECT_TRUE(FileExists(own.File("mine.txt")));
}

// The CUDA driver names its threads by opening /proc/self/task/<tid>/comm with O_TRUNC; with
// that denied cuInit fails (found on the H200 through Landlock's audit log). The policy the
// candidates get must allow it, and `> /dev/null` (also O_TRUNC), while other processes' /proc
// entries stay closed.
TEST(Sandbox, LandlockLetsAProcessNameItsThreadsAndTruncateDevices) {
  if (ProbeSandbox().landlock_abi == 0) GTEST_SKIP() << ProbeSandbox().landlock_why;
  if (ProbeSandbox().landlock_abi < 3) GTEST_SKIP() << "Landlock ABI < 3 has no truncate right";
  SandboxPolicy p = Minimal();
  p.landlock = true;
  p.read_paths = {"/usr", "/lib", "/lib64", "/bin", "/etc", "/proc"};
  p.device_paths = {"/dev/null", "/proc/self"};
  Ran r = RunConfined(p, {"/bin/sh", "-c",
                          "echo renamed > /proc/self/task/$$/comm; echo comm=$?; "
                          "cat /proc/$$/task/$$/comm; echo x > /dev/null; echo null=$?; "
                          "echo y > /proc/1/comm; echo other=$?"});
  EXPECT_NE(r.output.find("comm=0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("renamed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("null=0"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("other=0"), std::string::npos) << r.output;
}

TEST(Sandbox, EveryDescendantEndsWithTheChild) {
  const SandboxSupport& s = ProbeSandbox();
  if (!s.namespaces) GTEST_SKIP() << s.namespaces_why;
  ScratchDir dir("ptxbench-ns");
  ::chmod(dir.path().c_str(), 0777);
  SandboxPolicy p = Minimal();
  p.namespaces = true;
  // A process that leaves itself behind (its own session, in the background) and would
  // touch a file a second later.
  // The folder is the child's (so reachable inside a private /dev/shm); it proves so by
  // leaving a mark there before it returns.
  p.write_paths = {dir.path()};
  std::string mark = dir.File("escaped");
  std::string reached = dir.File("reached");
  Ran r = RunConfined(p, {"/bin/sh", "-c",
                          "touch " + reached + "; setsid /bin/sh -c 'sleep 1; touch " + mark +
                              "' </dev/null >/dev/null 2>&1 & echo pid=$$"});
  EXPECT_EQ(r.exit.code, 0) << r.output;
  if (s.proc_remount) EXPECT_NE(r.output.find("pid=2"), std::string::npos) << r.output;
  EXPECT_TRUE(FileExists(reached)) << r.output;
  std::this_thread::sleep_for(1500ms);
  EXPECT_FALSE(FileExists(mark)) << "a descendant outlived the sandboxed child";
}

TEST(Sandbox, ASignalTheChildSendsItselfStillEndsIt) {
  if (!ProbeSandbox().namespaces) GTEST_SKIP() << ProbeSandbox().namespaces_why;
  SandboxPolicy p = Minimal();
  p.namespaces = true;
  Ran r = RunConfined(p, {"/bin/sh", "-c", "kill -SEGV $$"});
  EXPECT_EQ(r.exit.kind, ExitKind::kSignaled) << r.exit.Describe();
  EXPECT_EQ(r.exit.signal, SIGSEGV);
}

// Every evaluation's scratch folder lies in /dev/shm, which the CUDA driver needs writable:
// a child there could read or replace another evaluation's files. With its namespaces, a
// child gets a tmpfs of its own there: what the parent put in /dev/shm outside the child's
// paths is not there, what the child writes there is gone with it, its own folder (in the
// host's /dev/shm) is reachable at the same path and writable, and a read path stays
// read-only, even for root.
TEST(Sandbox, DevShmIsPrivateToTheChild) {
  const SandboxSupport& s = ProbeSandbox();
  if (!s.namespaces) GTEST_SKIP() << s.namespaces_why;
  if (!s.private_dev_shm) GTEST_SKIP() << "no tmpfs can be mounted on /dev/shm here";
  ScratchDir own("ptxbench-shm-own");
  ScratchDir tools("ptxbench-shm-ro");
  if (own.path().rfind("/dev/shm/", 0) != 0) GTEST_SKIP() << "scratch folders are not in /dev/shm";
  const std::string planted = "/dev/shm/ptxbench-planted-" + std::to_string(::getpid());
  const std::string dropped = "/dev/shm/ptxbench-dropped-" + std::to_string(::getpid());
  WriteFileAtomic(planted, "another-evaluations-object\n");
  WriteFileAtomic(tools.File("tool.txt"), "read-only-tool\n");
  SandboxPolicy p = Minimal();
  p.namespaces = true;
  p.landlock = true;
  p.read_paths = {"/usr", "/lib", "/lib64", "/bin", "/etc", tools.File("tool.txt")};
  p.write_paths = {own.path(), "/dev/shm"};
  p.device_paths = {"/dev/null"};
  Ran r = RunConfined(
      p, {"/bin/sh", "-c",
          "cat " + planted + "; echo read=$?; ls /dev/shm | sed s/^/listed:/; echo x > " + planted +
              "; echo overwrite=$?; echo y > " + dropped + "; echo shm=$?; echo hi > " +
              own.File("mine.txt") + "; echo own=$?; cat " + tools.File("tool.txt") +
              "; echo z >> " + tools.File("tool.txt") + "; echo tool_write=$?"});
  EXPECT_EQ(r.output.find("another-evaluations-object"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("listed:ptxbench-shm-own"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("listed:ptxbench-planted-"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("read=0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("shm=0"), std::string::npos) << r.output;  // the driver's shm files
  EXPECT_NE(r.output.find("own=0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("read-only-tool"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("tool_write=0"), std::string::npos) << r.output;
  EXPECT_EQ(ReadFile(planted), "another-evaluations-object\n");
  EXPECT_FALSE(FileExists(dropped)) << "the child wrote into the host's /dev/shm";
  EXPECT_EQ(ReadFile(own.File("mine.txt")), "hi\n");
  EXPECT_EQ(ReadFile(tools.File("tool.txt")), "read-only-tool\n");
  EXPECT_EQ(PreparedSandbox(p).Describe()["dev_shm"], "private tmpfs");
  ::unlink(planted.c_str());
  ::unlink(dropped.c_str());
}

// Each evaluation (each scratch folder) its own uid, unique on the host: asked again, the
// same; another folder, another; another process, another; released, free for the next.
TEST(Sandbox, EachEvaluationClaimsAUserOfItsOwn) {
  if (!ProbeSandbox().user_drop) GTEST_SKIP() << "not root: no uid drop";
  ScratchDir a("ptxbench-uid-a"), b("ptxbench-uid-b");
  SandboxUser ua = ClaimSandboxUser(a.path());
  SandboxUser ub = ClaimSandboxUser(b.path());
  EXPECT_EQ(ClaimSandboxUser(a.path()).uid, ua.uid);
  EXPECT_NE(ua.uid, ub.uid);
  EXPECT_EQ(ua.uid, ua.gid);
  for (uid_t u : {ua.uid, ub.uid}) {
    EXPECT_GE(u, kSandboxUidBase);
    EXPECT_LT(u, kSandboxUidBase + kSandboxUidSlots);
  }
  // Another process (another evaluator on the host) claims while we hold ours, then dies
  // without giving its slot back: the kernel releases the flock with it.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    SandboxUser other = ClaimSandboxUser("/nonexistent/other-evaluation");
    ssize_t n = ::write(fds[1], &other.uid, sizeof other.uid);
    (void)n;
    ::pause();
    ::_exit(0);
  }
  ::close(fds[1]);
  uid_t other = 0;
  ASSERT_EQ(::read(fds[0], &other, sizeof other), static_cast<ssize_t>(sizeof other));
  ::close(fds[0]);
  EXPECT_NE(other, ua.uid);
  EXPECT_NE(other, ub.uid);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  const std::string lock =
      std::string(kSandboxUidLockDir) + "/" + std::to_string(other - kSandboxUidBase);
  int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0) << lock;
  EXPECT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0) << "the dead holder's slot is still held";
  ::close(fd);
  // Given back with the folder: a lock of ours on the slot now succeeds.
  ReleaseSandboxUsers(a.path());
  const std::string lock_a =
      std::string(kSandboxUidLockDir) + "/" + std::to_string(ua.uid - kSandboxUidBase);
  fd = ::open(lock_a.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0) << "a released slot is still held";
  ::close(fd);
}

TEST(Sandbox, ChildrenOfRootRunAsNobody) {
  const SandboxSupport& s = ProbeSandbox();
  if (!s.user_drop) GTEST_SKIP() << "not root: nothing to drop";
  SandboxPolicy p = Minimal();
  p.drop_user = true;
  Ran r = RunConfined(p, {"/usr/bin/id", "-u"});
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_EQ(r.output, "65534\n");
}

TEST(Sandbox, ChannelFloodIsBoundedAndKilled) {
  // 20 MB of newlines: nothing kept, nothing killed.
  Ran quiet = RunConfined(Minimal(),
                          {"/bin/sh", "-c", "head -c 20000000 /dev/zero | tr '\\0' '\\n' >&3"}, 3);
  EXPECT_TRUE(quiet.channel.empty());
  EXPECT_FALSE(quiet.exit.channel_overflow);
  // Past the limit: killed, and the exit says why.
  Ran flood = RunConfined(
      Minimal(), {"/bin/sh", "-c", "head -c 50000000 /dev/zero | tr '\\0' x >&3; sleep 30"}, 3,
      8u << 20);
  EXPECT_TRUE(flood.exit.channel_overflow);
  EXPECT_NE(flood.exit.Describe().find("flooding"), std::string::npos);
  EXPECT_LT(flood.exit.seconds, 15);
}

TEST(Sandbox, DescribeSaysWhatIsActive) {
  SandboxPolicy p = Minimal();
  PreparedSandbox sandbox(p);
  auto d = sandbox.Describe();
  EXPECT_EQ(d["state"], "on");
  EXPECT_EQ(d["namespaces"], false);
  EXPECT_EQ(d["landlock"], false);
  PreparedSandbox off;
  EXPECT_EQ(off.Describe()["state"], "off");
}

}  // namespace
}  // namespace ptxbench

// Output paths (CheckOutputPath, WriteOutput) and the source policy (SourceFileProblem).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/files.h"
#include "common/source_policy.h"
#include "common/strings.h"

namespace ptxbench {
namespace {

namespace fs = std::filesystem;

// The message of the UsageError that CheckOutputPath throws; "" when it accepts the path.
std::string OutputProblem(const std::string& path, const std::string& option = "--json") {
  try {
    CheckOutputPath(path, option);
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage) << e.what();
    return e.what();
  }
}

bool IsCharDevice(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

// The tail of a file (a child's log, as large as its limits let it) is read without the rest.
TEST(Files, ReadFileTailReadsOnlyTheEnd) {
  ScratchDir dir("file-tail");
  WriteFileAtomic(dir.File("f"), "0123456789");
  size_t total = 0;
  EXPECT_EQ(ReadFileTail(dir.File("f"), 4, &total), "6789");
  EXPECT_EQ(total, 10u);
  EXPECT_EQ(ReadFileTail(dir.File("f"), 100, &total), "0123456789");
  EXPECT_EQ(ReadFileTail(dir.File("missing"), 4, &total), "");
  EXPECT_EQ(total, 0u);
}

TEST(OutputPath, AcceptsStdoutNewAndRegularFilesAndSpecialFiles) {
  ScratchDir dir("files-test");
  EXPECT_EQ(OutputProblem(""), "");
  EXPECT_EQ(OutputProblem("-"), "");
  EXPECT_EQ(OutputProblem("/dev/stdout"), "");
  EXPECT_EQ(OutputProblem("/dev/null"), "");
  EXPECT_EQ(OutputProblem(dir.File("new.json")), "");
  WriteFileAtomic(dir.File("old.json"), "{}\n");
  EXPECT_EQ(OutputProblem(dir.File("old.json")), "");
  ASSERT_EQ(::symlink(dir.File("old.json").c_str(), dir.File("link.json").c_str()), 0);
  EXPECT_EQ(OutputProblem(dir.File("link.json")), "");
}

TEST(OutputPath, RefusesMissingFoldersFoldersAndBrokenLinksInOneLine) {
  ScratchDir dir("files-test");
  std::string missing = dir.File("a/b/out.json");
  EXPECT_EQ(OutputProblem(missing),
            "--json " + missing + ": the folder " + dir.File("a/b") + " does not exist");
  EXPECT_FALSE(fs::exists(dir.File("a"))) << "a folder was created";
  EXPECT_EQ(OutputProblem(dir.path(), "--csv"),
            "--csv " + dir.path() + ": is a folder, not a file");
  EXPECT_EQ(OutputProblem(dir.path() + "/", "--csv"),
            "--csv " + dir.path() + "/: is a folder, not a file");
  WriteFileAtomic(dir.File("plain"), "x");
  EXPECT_EQ(OutputProblem(dir.File("plain/out.json")),
            "--json " + dir.File("plain/out.json") + ": " + dir.File("plain") + " is not a folder");
  ASSERT_EQ(::symlink(dir.File("nowhere").c_str(), dir.File("dangling").c_str()), 0);
  EXPECT_EQ(OutputProblem(dir.File("dangling"), "--html"),
            "--html " + dir.File("dangling") + ": is a link to a file that does not exist");
  EXPECT_NE(OutputProblem("/dev/fd/987"), "");  // no such descriptor
  for (const std::string& p : {missing, dir.path(), dir.File("dangling")})
    EXPECT_EQ(OutputProblem(p).find('\n'), std::string::npos);
}

TEST(OutputPath, NoTwoOutputsToStdoutOrToOneFile) {
  ScratchDir dir("files-test");
  EXPECT_NO_THROW(CheckOutputPaths({{"--csv", "-"}, {"--json", ""}, {"--html", dir.File("r")}}));
  EXPECT_NO_THROW(CheckOutputPaths({{"--csv", "/dev/null"}, {"--json", "/dev/null"}}));
  try {
    CheckOutputPaths({{"--csv", "-"}, {"--json", "/dev/stdout"}});
    ADD_FAILURE() << "two outputs to standard output";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--json /dev/stdout: --csv writes there too; give each "
              "output its own path");
  }
  EXPECT_THROW(CheckOutputPaths({{"--csv", dir.File("x")}, {"--json", dir.File("./x")}}), Error);
  WriteFileAtomic(dir.File("y"), "");
  EXPECT_THROW(CheckOutputPaths({{"--csv", dir.File("y")}, {"--json", dir.File("y")}}), Error);
}

TEST(WriteOutput, RegularFilesAtomicallyThroughLinksTheTarget) {
  ScratchDir dir("files-test");
  WriteOutput(dir.File("a.json"), "one\n");
  EXPECT_EQ(ReadFile(dir.File("a.json")), "one\n");
  WriteOutput(dir.File("a.json"), "two\n");
  EXPECT_EQ(ReadFile(dir.File("a.json")), "two\n");
  ASSERT_EQ(::symlink(dir.File("a.json").c_str(), dir.File("l.json").c_str()), 0);
  WriteOutput(dir.File("l.json"), "three\n");
  EXPECT_TRUE(fs::is_symlink(dir.File("l.json")));
  EXPECT_EQ(ReadFile(dir.File("a.json")), "three\n");
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 2u) << "a temporary file was left";
}

// JSON Lines outputs (traces): a missing file is made, an existing one is added to, and through
// a link the target grows while the link stays.
TEST(AppendOutput, AddsToRegularFilesThroughLinksTheTarget) {
  ScratchDir dir("files-test");
  AppendOutput(dir.File("t.jsonl"), "{\"a\":1}\n");
  AppendOutput(dir.File("t.jsonl"), "{\"a\":2}\n");
  EXPECT_EQ(ReadFile(dir.File("t.jsonl")), "{\"a\":1}\n{\"a\":2}\n");
  ASSERT_EQ(::symlink(dir.File("t.jsonl").c_str(), dir.File("l.jsonl").c_str()), 0);
  AppendOutput(dir.File("l.jsonl"), "{\"a\":3}\n");
  EXPECT_TRUE(fs::is_symlink(dir.File("l.jsonl")));
  EXPECT_EQ(ReadFile(dir.File("t.jsonl")), "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n");
}

TEST(WriteOutput, SpecialFilesAreWrittenInPlaceNeverReplaced) {
  ScratchDir dir("files-test");
  // /dev/null, directly and through a link.
  WriteOutput("/dev/null", "nothing\n");
  EXPECT_TRUE(IsCharDevice("/dev/null"));
  std::string link = dir.File("null.json");
  ASSERT_EQ(::symlink("/dev/null", link.c_str()), 0);
  WriteOutput(link, "nothing\n");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link), "/dev/null");
  EXPECT_TRUE(IsCharDevice("/dev/null"));
  // A FIFO: its reader gets the content, and it stays a FIFO.
  std::string fifo = dir.File("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(OutputProblem(fifo), "");
  std::string got;
  std::thread reader([&] { got = ReadFile(fifo); });
  WriteOutput(fifo, "through the pipe\n");
  reader.join();
  EXPECT_EQ(got, "through the pipe\n");
  EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST(WriteOutput, DashIsStandardOutput) {
  ScratchDir dir("files-test");
  std::string captured = dir.File("stdout");
  int file = ::open(captured.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(file, 0);
  std::fflush(stdout);
  int saved = ::dup(1);
  ::dup2(file, 1);
  WriteOutput("-", "{\"a\": 1}\n");
  WriteOutput("/dev/stdout", "second\n");
  ::dup2(saved, 1);
  ::close(saved);
  ::close(file);
  EXPECT_EQ(ReadFile(captured), "{\"a\": 1}\nsecond\n");
  EXPECT_TRUE(IsStandardOutput("-"));
  EXPECT_TRUE(IsStandardOutput("/dev/stdout"));
  EXPECT_FALSE(IsStandardOutput("/dev/stderr"));
  EXPECT_FALSE(IsStandardOutput("out.json"));
}

TEST(SourcePolicy, RefusesEmptyLargeNulAndInvalidUtf8WithFixedSentences) {
  EXPECT_EQ(SourceFileProblem("__global__ void k() {}\n"), std::nullopt);
  EXPECT_EQ(SourceFileProblem("// café, ∑, 🚀\n__global__ void k() {}\n"), std::nullopt);
  EXPECT_EQ(SourceFileProblem(std::string(kMaxSourceBytes, 'x')), std::nullopt);
  const std::string empty = "the source is empty (nothing but whitespace)";
  EXPECT_EQ(SourceFileProblem(""), empty);
  EXPECT_EQ(SourceFileProblem(" \n\t\r\n"), empty);
  EXPECT_EQ(SourceFileProblem(std::string(kMaxSourceBytes + 1, 'x')),
            "the source is larger than the limit of 1048576 bytes");
  EXPECT_EQ(SourceFileProblem(std::string(2 << 20, ' ')),
            "the source is larger than the limit of 1048576 bytes");
  EXPECT_EQ(SourceFileProblem("xxxxx", 4), "the source is larger than the limit of 4 bytes");
  EXPECT_TRUE(SourceIsTooLarge("xxxxx", 4));
  EXPECT_FALSE(SourceIsTooLarge("xxxx", 4));
  const std::string nul = "the source contains a NUL byte (a binary file, not CUDA source text)";
  EXPECT_EQ(SourceFileProblem(std::string("int x;\0", 7)), nul);
  EXPECT_EQ(SourceFileProblem(std::string("\x7f"
                                          "ELF\x02\x01\x01\0\0\0\xff",
                                          11)),
            nul);
  const std::string utf8 = "the source is not valid UTF-8 text";
  for (std::string bad : {"caf\xe9", "\xff", "\xc0\x80", "\xed\xa0\x80", "\xe2\x82",
                          "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80"})
    EXPECT_EQ(SourceFileProblem("int x; // " + bad + "\n"), utf8) << bad;
}

TEST(SourcePolicy, ReadSourceFileNamesThePath) {
  ScratchDir dir("files-test");
  auto problem = [](const std::string& path) -> std::string {
    try {
      ReadSourceFile(path);
      return "";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput);
      return e.what();
    }
  };
  WriteFileAtomic(dir.File("ok.cu"), "__global__ void k() {}\n");
  EXPECT_EQ(ReadSourceFile(dir.File("ok.cu")), "__global__ void k() {}\n");
  WriteFileAtomic(dir.File("bin.cu"), std::string("a\0b", 3));
  EXPECT_EQ(problem(dir.File("bin.cu")),
            dir.File("bin.cu") + ": " + *SourceFileProblem(std::string("a\0b", 3)));
  WriteFileAtomic(dir.File("big.cu"), std::string(2 << 20, 'x'));
  EXPECT_EQ(problem(dir.File("big.cu")),
            dir.File("big.cu") + ": the source is larger than the limit of 1048576 bytes");
  EXPECT_EQ(
      problem(dir.File("missing.cu")).rfind(dir.File("missing.cu") + ": no such readable file", 0),
      0u);
  EXPECT_EQ(problem(dir.path()).rfind(dir.path() + ": no such readable file", 0), 0u);
}

TEST(Strings, IsValidUtf8ReportsTheFirstBadByte) {
  size_t at = 99;
  EXPECT_TRUE(IsValidUtf8("plain ascii", &at));
  EXPECT_EQ(at, 99u);
  EXPECT_TRUE(IsValidUtf8("\xe2\x82\xac \xf0\x9f\x9a\x80"));
  EXPECT_FALSE(IsValidUtf8("ab\xe2\x82", &at));
  EXPECT_EQ(at, 2u);
  EXPECT_FALSE(IsValidUtf8("abc\x80", &at));
  EXPECT_EQ(at, 3u);
}

}  // namespace
}  // namespace ptxbench

// `ptxbench baseline --baseline WORD`: which attention-forward libraries it times, in which
// order (cuDNN first, so that every FlashInfer line can be set against it).
#include "evaluate/baseline_run.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace ptxbench {
namespace {

std::vector<std::string> Words(const std::string& word) {
  std::vector<std::string> out;
  for (const AttentionBaseline& b : AttentionBaselinesOf(word)) out.push_back(ToString(b));
  return out;
}

using Lines = std::vector<std::string>;

TEST(BaselineCommand, EachWordTimesItsLibrariesCudnnFirst) {
  EXPECT_EQ(Words("flashinfer"), Lines{"flashinfer@0.6.14"});
  EXPECT_EQ(Words("cudnn"), Lines{"cudnn"});
  EXPECT_EQ(Words("both"), (Lines{"cudnn", "flashinfer@0.6.14"}));
  EXPECT_EQ(Words("all"), (Lines{"cudnn", "flashinfer@0.6.14", "flashinfer@0.7.4"}));
  EXPECT_EQ(Words("flashinfer@0.7.4"), Lines{"flashinfer@0.7.4"});
  EXPECT_EQ(Words("flashinfer@0.6.14"), Lines{"flashinfer@0.6.14"});
  EXPECT_EQ(BaselineCommandWords(),
            (Lines{"flashinfer", "flashinfer@0.6.14", "flashinfer@0.7.4", "cudnn", "both", "all"}));
  for (const std::string& w : BaselineCommandWords()) EXPECT_FALSE(Words(w).empty()) << w;
}

TEST(BaselineCommand, AnUnknownReleaseIsRefusedNamingTheKnownOnes) {
  try {
    AttentionBaselinesOf("flashinfer@0.5.3");
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_EQ(std::string(e.what()),
              "--baseline flashinfer@0.5.3: FlashInfer 0.5.3 is not a version ptxbench builds "
              "(known: 0.6.14, 0.7.4)");
  }
  EXPECT_THROW(AttentionBaselinesOf("cuDNN"), Error);
  EXPECT_THROW(AttentionBaselinesOf(""), Error);
}

}  // namespace
}  // namespace ptxbench

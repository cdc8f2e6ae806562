#include "evaluate/evaluation_options.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace ptxbench {
namespace {

using nlohmann::json;

std::string ErrorOf(const json& j) {
  EvaluationOptions o;
  try {
    ApplyEvaluationOptionsJson(j, &o);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput) << e.what();
    return e.what();
  }
  return "";
}

TEST(EvaluationOptions, AnEmptyObjectKeepsEveryDefault) {
  EvaluationOptions o;
  ApplyEvaluationOptionsJson(json::object(), &o);
  EXPECT_EQ(o.trials, 3);
  EXPECT_EQ(o.seed, kDefaultSeed);
  EXPECT_EQ(o.sanitize, SanitizeMode::kAlways);
  EXPECT_EQ(o.timeout.count(), 60);
  EXPECT_TRUE(o.timing);
  EXPECT_TRUE(o.verify);
  EXPECT_EQ(o.timing_budget_s, 8);
  EXPECT_EQ(o.attention_baseline, AttentionBaseline::kFlashInfer);
  EXPECT_FALSE(o.tolerance_rule);
}

TEST(EvaluationOptions, TheJsonFormGoesBothWays) {
  json j = {{"trials", 5},
            {"seed", 7},
            {"sanitize", "on-failure"},
            {"timeout", 30},
            {"timing", false},
            {"timing_budget", 2.5},
            {"verify", false},
            {"warmup", 1},
            {"iterations", 9},
            {"tolerance", "allclose"},
            {"baseline", "cudnn"}};
  EvaluationOptions o;
  ApplyEvaluationOptionsJson(j, &o);
  std::vector<std::string> keys(EvaluationOptionKeys().begin(), EvaluationOptionKeys().end());
  EXPECT_EQ(EvaluationOptionsJson(o, keys), j);
}

TEST(EvaluationOptions, RunJsonHasTheKeysAndValuesItAlwaysHad) {
  // run.json and the requests `run` sends to a service: the defaults in these words.
  EXPECT_EQ(EvaluationOptionsJson(EvaluationOptions{},
                                  {"sanitize", "timeout", "timing", "timing_budget", "baseline"})
                .dump(),
            R"({"baseline":"flashinfer","sanitize":"always","timeout":60,"timing":true,)"
            R"("timing_budget":8.0})");
  EXPECT_EQ(EvaluationOptionsJson(EvaluationOptions{}, {}), json::object());
}

TEST(EvaluationOptions, EachBadValueIsRefusedByName) {
  EXPECT_EQ(ErrorOf(json::array()), "\"options\" must be an object");
  EXPECT_EQ(ErrorOf({{"trails", 3}}),
            "unknown option \"trails\" (known: baseline, iterations, sanitize, seed, timeout, "
            "timing, timing_budget, tolerance, trials, verify, warmup)");
  EXPECT_EQ(ErrorOf({{"trials", 0}}), "options.trials must be an integer between 1 and 100");
  EXPECT_EQ(ErrorOf({{"timeout", 3601}}), "options.timeout must be an integer between 1 and 3600");
  EXPECT_EQ(ErrorOf({{"seed", -1}}), "options.seed must be a non-negative integer");
  EXPECT_EQ(ErrorOf({{"sanitize", 1}}), "options.sanitize must be always, on-failure or never");
  EXPECT_NE(ErrorOf({{"sanitize", "sometimes"}}).rfind("options: ", 0), std::string::npos);
  EXPECT_EQ(ErrorOf({{"tolerance", true}}), "options.tolerance must be published or allclose");
  EXPECT_EQ(ErrorOf({{"baseline", "cublas"}}), "options.baseline must be flashinfer or cudnn");
  EXPECT_EQ(ErrorOf({{"timing", 1}}), "options.timing must be true or false");
  EXPECT_EQ(ErrorOf({{"timing_budget", -1}}),
            "options.timing_budget must be a number of seconds between 0 and 3600");
}

}  // namespace
}  // namespace ptxbench

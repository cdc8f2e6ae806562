#include "evaluate/evaluation_options.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/files.h"

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
  EXPECT_EQ(o.attention_baseline, AttentionBaseline::FlashInfer("0.6.14"));
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
  // run.json and the requests `run` sends to a service: the defaults in these words. The
  // baseline names FlashInfer's release (before issue 38 it was "flashinfer", meaning 0.7.4).
  EXPECT_EQ(EvaluationOptionsJson(EvaluationOptions{},
                                  {"sanitize", "timeout", "timing", "timing_budget", "baseline"})
                .dump(),
            R"({"baseline":"flashinfer@0.6.14","sanitize":"always","timeout":60,"timing":true,)"
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
  EXPECT_EQ(ErrorOf({{"sanitize", "sometimes"}}),
            "options.sanitize must be always, on-failure or never, not \"sometimes\"");
  EXPECT_EQ(ErrorOf({{"tolerance", true}}), "options.tolerance must be published or allclose");
  EXPECT_EQ(ErrorOf({{"baseline", "cublas"}}),
            "options.baseline must be flashinfer, flashinfer@0.6.14, flashinfer@0.7.4 or cudnn, "
            "not \"cublas\"");
  EXPECT_EQ(ErrorOf({{"timing", 1}}), "options.timing must be true or false");
  EXPECT_EQ(ErrorOf({{"timing_budget", -1}}),
            "options.timing_budget must be a number of seconds between 0 and 3600");
}

// `baseline` takes FlashInfer's release; whatever word was given, the JSON form (run.json, the
// requests to a service) is the canonical one, which names the release, so that a run's
// identity tells two releases apart.
TEST(EvaluationOptions, TheBaselineIsRecordedWithItsRelease) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"flashinfer", "flashinfer@0.6.14"},
      {"flashinfer@0.6.14", "flashinfer@0.6.14"},
      {"flashinfer@0.7.4", "flashinfer@0.7.4"},
      {"cudnn", "cudnn"}};
  for (const auto& [given, canonical] : cases) {
    EvaluationOptions o;
    ApplyEvaluationOptionsJson({{"baseline", given}}, &o);
    EXPECT_EQ(EvaluationOptionsJson(o, {"baseline"}), json({{"baseline", canonical}})) << given;
  }
  EvaluationOptions o;
  ApplyEvaluationOptionsJson({{"baseline", "flashinfer@0.7.4"}}, &o);
  EXPECT_EQ(o.attention_baseline, AttentionBaseline::FlashInfer("0.7.4"));
  // A release the harness does not build is refused, listing those it does.
  EXPECT_EQ(ErrorOf({{"baseline", "flashinfer@0.5.3"}}),
            "options.baseline must be flashinfer, flashinfer@0.6.14, flashinfer@0.7.4 or cudnn, "
            "not \"flashinfer@0.5.3\"");
  EXPECT_EQ(
      EvaluationOptionRowOf("baseline").words,
      (std::vector<std::string>{"flashinfer", "flashinfer@0.6.14", "flashinfer@0.7.4", "cudnn"}));
}

TEST(EvaluationOptions, ARefusedRequestChangesNothing) {
  EvaluationOptions o;
  EXPECT_NE(ErrorOf({{"trials", 7}, {"timeout", 0}}), "");
  EXPECT_THROW(ApplyEvaluationOptionsJson({{"trials", 7}, {"timeout", 0}}, &o), Error);
  EXPECT_EQ(o.trials, 3);
}

// The service's document says what the table says: a type, range, word or default changed in
// one and not the other fails here (the schema is regenerated from EvaluationOptionsSchema()).
TEST(EvaluationOptions, TheOpenApiSchemaIsTheTables) {
  const json api =
      json::parse(ReadFile(std::string(PTXBENCH_SOURCE_DIR) + "/schemas/openapi.json"));
  const json& options =
      api.at("components").at("schemas").at("EvaluationRequest").at("properties").at("options");
  EXPECT_EQ(options, EvaluationOptionsSchema()) << "schemas/openapi.json has\n"
                                                << options.dump(2) << "\nthe table gives\n"
                                                << EvaluationOptionsSchema().dump(2);
  // Every row has its getter, setter and flag, and its default goes through both ways.
  for (const EvaluationOptionRow& row : EvaluationOptionTable()) {
    SCOPED_TRACE(row.key);
    EXPECT_TRUE(row.flag.starts_with("--"));
    ASSERT_TRUE(row.get && row.set);
    const json value = row.get(EvaluationOptions{});
    if (value.is_null()) continue;  // no default (the tolerance: the task's)
    EvaluationOptions o;
    ApplyEvaluationOptionsJson({{row.key, value}}, &o);
    EXPECT_EQ(row.get(o), value);
  }
}

}  // namespace
}  // namespace ptxbench

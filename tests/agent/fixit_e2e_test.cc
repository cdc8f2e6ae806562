// `ptxbench fixit mine|repair|reason|export` and `kernelgen export` end to end: the real
// binary, the scripted model server as the student and as both teachers over real HTTP, the
// real evaluator. Here the GPU layers are skipped, so the harness can judge a repair only as
// far as screening, build and static inspection, and the test says which layers ran; the
// repair that the later stages need is then a fixture record (correct, verified at run time),
// put where the evaluator would have put it, and `fixit repair --resume` judges it with the
// product's own keep rule. Also: an adapted model behind an OpenAI-compatible endpoint run
// with --pack none and --pack full (the comparison of what SFT teaches and what guidance
// teaches).
#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>

#include <nlohmann/json.hpp>

#include "agent/e2e_support.h"
#include "agent/scripted_model_server.h"
#include "agent/trajectory.h"
#include "common/files.h"
#include "common/strings.h"
#include "common/subprocess.h"

namespace ptxbench {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using testing::RecordedRequest;
using testing::ScriptedModelServer;
using testing::ScriptStep;

constexpr const char* kTask = "gemm_n128_k2048";
constexpr const char* kSecret = "sk-fixit-test-secret-4242";

using e2e::Bin;
using e2e::Contains;
using e2e::Src;
std::string Control(const std::string& name) {
  return ReadFile(Src() + "/controls/gemm/" + name + ".cu");
}
std::string Fenced(const std::string& code) { return "```cuda\n" + code + "\n```"; }

const std::string kDoesNotCompile =
    "extern \"C\" int run(const void* A, const void* B, void* C, int M, int N, int K, "
    "void* stream) { return undeclared_name; }";
// The same kernel, re-indented and commented: a near-duplicate that mining must drop.
const std::string kDoesNotCompileAgain =
    "// second try\nextern \"C\" int run(const void* A, const void* B, void* C,\n"
    "    int M, int N, int K, void* stream) {\n  return undeclared_name;\n}\n";

const std::string kThirdPerson =
    "The feedback says the build failed: nvcc reports an undeclared identifier in the run "
    "function, so nothing was launched. The kernel returns a name that was never declared; it "
    "should launch a real GEMM and return the launch status. A tiled kernel with TMA loads and "
    "wgmma on the tensor cores computes C from A and B; the run function launches it on the "
    "given stream and returns zero.";
const std::string kFirstPerson =
    "The feedback tells me my build failed: nvcc reports an undeclared identifier in my run "
    "function, so nothing ran at all. I returned a name I never declared instead of launching "
    "anything. I need a real GEMM: I load tiles of A and B into swizzled shared memory with TMA, "
    "I issue wgmma on the tensor cores with fp32 accumulators, and I launch it on the given "
    "stream, returning zero once the launch succeeded. That also earns the Hopper credit, since "
    "the GMMA and TMA instructions really execute.";

int Assistants(const RecordedRequest& r) {
  int n = 0;
  for (const auto& m : r.messages) n += m.role == "assistant";
  return n;
}

// The student, the repair teacher and the reasoning teacher are three models of one server,
// told apart by the model id in the request.
class Script {
 public:
  ScriptedModelServer::Responder Responder() {
    return [this](const RecordedRequest& r) {
      std::lock_guard<std::mutex> lock(mu_);
      ++calls_[r.model];
      if (r.model == "student") {
        int turn = Assistants(r) + 1;
        if (turn == 1) return ScriptStep::Reply("First try.\n" + Fenced(kDoesNotCompile));
        if (turn == 2) return ScriptStep::Reply("Again.\n" + Fenced(kDoesNotCompileAgain));
        return ScriptStep::Reply("I will think about it some more.");
      }
      if (r.model == "repair-teacher") {
        repair_requests_.push_back(r);
        return ScriptStep::Reply("Here is a repaired kernel.\n" + Fenced(Control("tiled_correct")));
      }
      if (r.model == "reason-teacher") {
        reason_requests_.push_back(r);
        return ScriptStep::Reply(Assistants(r) == 0 ? kThirdPerson : kFirstPerson);
      }
      return ScriptStep::Status(500, "", "unknown model " + r.model);
    };
  }
  int calls(const std::string& model) {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_[model];
  }
  std::vector<RecordedRequest> repair_requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return repair_requests_;
  }
  std::vector<RecordedRequest> reason_requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return reason_requests_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, int> calls_;
  std::vector<RecordedRequest> repair_requests_, reason_requests_;
};

std::string ModelsFile(const ScratchDir& dir, const ScriptedModelServer& server) {
  json models = json::array();
  for (const char* m : {"student", "repair-teacher", "reason-teacher", "adapted"})
    models.push_back({{"name", m},
                      {"provider", "openai"},
                      {"model", m},
                      {"base_url", server.base_url()},
                      {"api_key_env", "FIXIT_TEST_KEY"},
                      {"stream", std::string(m) != "reason-teacher"},
                      {"timeout_s", 30},
                      {"max_retries", 2}});
  std::string path = dir.File("models.json");
  WriteFileAtomic(path, json{{"models", models}}.dump(1));
  return path;
}

const std::vector<std::pair<std::string, std::string>> kEnv = {
    {"FIXIT_TEST_KEY", kSecret}, {"PTXBENCH_RETRY_BASE_MS", "10"}, {"PTXBENCH_RETRY_CAP_MS", "50"}};

CommandResult Ptxbench(std::vector<std::string> args) {
  args.insert(args.begin(), Bin());
  return RunCommand(args, 300s, kEnv);
}

json ReadJson(const std::string& path) { return json::parse(ReadFile(path)); }

// Every file under `root` (recursively) that contains `needle`.
std::vector<std::string> FilesContaining(const std::string& root, const std::string& needle) {
  std::vector<std::string> hits;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && Contains(ReadFile(e.path().string()), needle))
      hits.push_back(e.path().string());
  return hits;
}

// Where the evaluator would have put a verified repair: a finished trajectory whose one
// turn is a real fast kernel of our controls with a fixture record (correct, dynamic_present,
// H, timed), written in the loop's own layout.
void WriteVerifiedRepairFixture(const std::string& run, const std::string& key,
                                const json& manifest_failure) {
  std::string id = key + "-0";
  Trajectory t;
  t.id = id;
  t.task = manifest_failure["task"];
  t.workload = manifest_failure["workload"];
  for (const json& m : manifest_failure["context"]) t.messages.push_back({m["role"], m["content"]});
  t.preamble = t.messages.size();
  std::string kernel = Control("wgmma_tma");
  t.messages.push_back({"assistant", "Repaired.\n" + Fenced(kernel)});
  t.messages.push_back({"user", "## PASSED (fixture)"});
  TurnRecord turn;
  turn.turn = 1;
  turn.outcome = "verified";
  turn.status = "PASSED";
  turn.kernel_file = "kernels/" + id + "/turn1.cu";
  turn.evaluation_file = "evaluations/" + id + "/turn1.json";
  turn.evaluation_id = id + "/turn1";
  turn.speedup = 1.31;
  turn.verified = true;
  t.turns.push_back(turn);
  t.exit_status = "target_reached";
  MakeDirs(run + "/kernels/" + id);
  MakeDirs(run + "/evaluations/" + id);
  WriteFileAtomic(run + "/" + turn.kernel_file, kernel);
  json record = {{"schema", "ptxbench.evaluation/1"},
                 {"status", "PASSED"},
                 {"message", "fixture: correct, H verified"},
                 {"evaluation_id", turn.evaluation_id},
                 {"instructions", {{"verification", "dynamic_present"}, {"arch_tag", "H"}}},
                 {"performance", {{"state", "ran"}, {"speedup", 1.31}, {"tflops", 600.0}}}};
  WriteFileAtomic(run + "/" + turn.evaluation_file, record.dump(1));
  WriteFileAtomic(run + "/trajectories/" + id + ".json", ToJson(t).dump(1));
}

TEST(FixitEndToEnd, MineRepairReasonExportFromARealFailedTurn) {
  ScratchDir dir("fixit-e2e");
  Script script;
  ScriptedModelServer server;
  server.SetResponder(script.Responder());
  std::string models = ModelsFile(dir, server);
  std::string student = dir.File("student"), work = dir.File("fx");

  // The student: a compile error, the same kernel again (a near-duplicate), then no code.
  std::vector<std::string> student_run = {"run",    "--model", "student", "--models", models,
                                          "--task", kTask,     "--turns", "3",        "--pack",
                                          "none",   "--out",   student};
#ifdef PTXBENCH_HAVE_SQLITE
  student_run.insert(student_run.end(), {"--db", dir.File("store.db")});
#endif
  CommandResult run = Ptxbench(student_run);
  ASSERT_EQ(run.exit.code, 0) << run.output;

  CommandResult mine = Ptxbench({"fixit", "mine", "--runs", student, "--dir", work});
  ASSERT_EQ(mine.exit.code, 0) << mine.output;
  json manifest = ReadJson(work + "/manifest.json");
  ASSERT_EQ(manifest["failures"].size(), 1u) << manifest.dump(1);
  const json& failure = manifest["failures"][0];
  EXPECT_EQ(failure["outcome"], "compile");
  EXPECT_EQ(failure["turn"], 1);
  EXPECT_EQ(failure["id"], "student/" + std::string(kTask) + "-0/turn1");
  EXPECT_EQ(manifest["settings"]["excluded"]["duplicate kernel (normalized source)"], 1);
  EXPECT_EQ(manifest["settings"]["excluded"]["outcome extraction"], 1);
  json trajectory = ReadJson(student + "/trajectories/" + kTask + "-0.json");
  EXPECT_EQ(failure["context"][0]["content"], trajectory["messages"][0]["content"]);
  EXPECT_EQ(failure["context"][1]["content"], trajectory["messages"][1]["content"]);
  EXPECT_EQ(failure["context"][3]["content"], trajectory["messages"][3]["content"]);
  EXPECT_TRUE(Contains(failure["context"][3]["content"], "undeclared_name"));
  EXPECT_TRUE(Contains(mine.output, "1 failures compile=1")) << mine.output;
#ifdef PTXBENCH_HAVE_SQLITE
  // The store gives the same failure, with the same conversation, as the run folder.
  CommandResult from_db =
      Ptxbench({"fixit", "mine", "--db", dir.File("store.db"), "--dir", dir.File("fx-db")});
  ASSERT_EQ(from_db.exit.code, 0) << from_db.output;
  json db_manifest = ReadJson(dir.File("fx-db") + "/manifest.json");
  ASSERT_EQ(db_manifest["failures"].size(), 1u) << db_manifest.dump(1);
  EXPECT_EQ(db_manifest["failures"][0]["id"], failure["id"]);
  EXPECT_EQ(db_manifest["failures"][0]["context_sha256"], failure["context_sha256"]);
#endif

  // Repair: the teacher starts from the failure's exact conversation and sends a real kernel
  // of our controls; the harness judges it as far as this machine can.
  std::vector<std::string> repair = {"fixit",          "repair",   "--dir", work,      "--teacher",
                                     "repair-teacher", "--models", models,  "--turns", "2",
                                     "--sanitize",     "never"};
  CommandResult r1 = Ptxbench(repair);
  ASSERT_FALSE(script.repair_requests().empty()) << r1.output;
  const RecordedRequest first = script.repair_requests()[0];
  ASSERT_EQ(first.messages.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    // get<std::string>(): nlohmann-json 3.11.3 under C++20 (the GPU image) has no string == json.
    EXPECT_EQ(first.messages[k].role, failure["context"][k]["role"].get<std::string>());
    EXPECT_EQ(first.messages[k].content, failure["context"][k]["content"].get<std::string>()) << k;
  }
  EXPECT_EQ(first.Header("authorization"), std::string("Bearer ") + kSecret);
  json repairs = ReadJson(work + "/repairs.json");
  ASSERT_EQ(repairs["repairs"].size(), 1u);
  const json& attempt = repairs["repairs"][0]["attempts"][0];
  EXPECT_EQ(repairs["kept"], 0) << repairs.dump(1);
  EXPECT_FALSE(repairs["repairs"][0]["kept"].get<bool>());
  // Which layers ran, from the attempt's own record.
  EXPECT_EQ(attempt["layers"]["screening"], "ran") << attempt.dump(1);
  EXPECT_EQ(attempt["layers"]["build"], "ran") << attempt.dump(1);
  std::string correctness = attempt["layers"]["correctness"];
  if (StartsWith(correctness, "ran")) {
    // A GPU machine: tiled_correct is a correct CUDA-core GEMM, never verified for H.
    EXPECT_EQ(r1.exit.code, 0) << r1.output;
    EXPECT_TRUE(Contains(attempt["verdict"], "not verified")) << attempt.dump(1);
  } else {
    EXPECT_EQ(r1.exit.code, 3) << r1.output;  // the repair could not be judged here
    EXPECT_TRUE(StartsWith(correctness, "skipped")) << attempt.dump(1);
    EXPECT_TRUE(Contains(attempt["verdict"], "not judged (infra")) << attempt.dump(1);
    EXPECT_EQ(repairs["not_kept"]["not judged (infra)"], 1) << repairs.dump(1);
  }

  // A fixture where the evaluator would have put a verified repair; the resumed stage judges
  // it with the keep rule and asks the teacher nothing more.
  std::string key = failure["key"];
  WriteVerifiedRepairFixture(work + "/repair", key, failure);
  int teacher_calls = script.calls("repair-teacher");
  repair.push_back("--resume");
  CommandResult r2 = Ptxbench(repair);
  EXPECT_EQ(r2.exit.code, 0) << r2.output;
  EXPECT_EQ(script.calls("repair-teacher"), teacher_calls);
  repairs = ReadJson(work + "/repairs.json");
  ASSERT_EQ(repairs["kept"], 1) << repairs.dump(1);
  const json& kept = repairs["repairs"][0];
  EXPECT_EQ(kept["repair_evaluation_id"], "repair/" + key + "-0/turn1");
  EXPECT_DOUBLE_EQ(kept["speedup"].get<double>(), 1.31);
  EXPECT_EQ(kept["verification"], "dynamic_present");

  // The work folder is never mixed: the repair stage again without --resume, a resumed repair
  // with another bar, and mining over the manifest are each refused in one line.
  std::vector<std::string> fresh(repair.begin(), repair.end() - 1);
  CommandResult again = Ptxbench(fresh);
  EXPECT_EQ(again.exit.code, 2) << again.output;
  EXPECT_TRUE(Contains(again.output, "holds a run already")) << again.output;
  std::vector<std::string> other_bar = repair;
  other_bar.insert(other_bar.end(), {"--min-speedup", "2"});
  CommandResult bar = Ptxbench(other_bar);
  EXPECT_EQ(bar.exit.code, 2) << bar.output;
  // The one field that differs, by its path in the identity, with both values.
  EXPECT_TRUE(Contains(bar.output, "fixit/min_speedup differs: the run has null, this command 2"))
      << bar.output;
  CommandResult remine = Ptxbench({"fixit", "mine", "--runs", student, "--dir", work});
  EXPECT_EQ(remine.exit.code, 2) << remine.output;
  EXPECT_TRUE(Contains(remine.output, "holds a manifest already")) << remine.output;
  EXPECT_EQ(ReadJson(work + "/repairs.json")["kept"], 1) << "a refusal touches nothing";

  // Reason: the first text (third person) is rejected, the retry accepted.
  std::vector<std::string> reason = {"fixit",     "reason",         "--dir",    work,
                                     "--teacher", "reason-teacher", "--models", models};
  CommandResult z1 = Ptxbench(reason);
  EXPECT_EQ(z1.exit.code, 0) << z1.output;
  ASSERT_EQ(script.reason_requests().size(), 2u) << z1.output;
  const RecordedRequest& ask = script.reason_requests()[0];
  std::string asked = ask.messages.back().content;
  EXPECT_TRUE(Contains(asked, failure["context"][0]["content"].get<std::string>()));
  EXPECT_TRUE(Contains(asked, failure["context"][3]["content"].get<std::string>()));
  EXPECT_TRUE(Contains(asked, kDoesNotCompile));
  EXPECT_TRUE(Contains(asked, "cp.async.bulk.tensor")) << "the fixed kernel is shown";
  EXPECT_TRUE(Contains(script.reason_requests()[1].messages.back().content, "first person"));
  std::vector<std::string> lines = SplitLines(ReadFile(work + "/reasoning.jsonl"));
  ASSERT_EQ(lines.size(), 1u);
  json accepted = json::parse(lines[0]);
  EXPECT_TRUE(accepted["accepted"].get<bool>());
  EXPECT_EQ(accepted["attempts"], 2);
  EXPECT_EQ(accepted["context_sha256"], failure["context_sha256"]);
  // Resumable: an accepted reasoning is not asked for again.
  CommandResult z2 = Ptxbench(reason);
  EXPECT_EQ(z2.exit.code, 0) << z2.output;
  EXPECT_EQ(script.reason_requests().size(), 2u);
  EXPECT_TRUE(Contains(z2.output, "1 accepted earlier")) << z2.output;

  // Export: one row, its conversation byte for byte the failure's, the loss on the last
  // message only, traceable to both evaluations.
  CommandResult e = Ptxbench({"fixit", "export", "--dir", work});
  ASSERT_EQ(e.exit.code, 0) << e.output;
  std::vector<std::string> train = SplitLines(ReadFile(work + "/export/train.jsonl"));
  ASSERT_EQ(train.size(), 1u);
  EXPECT_EQ(ReadFile(work + "/export/validation.jsonl"), "");  // one row of one task: train
  json row = json::parse(train[0]);
  ASSERT_EQ(row["messages"].size(), 5u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(row["messages"][k]["content"], failure["context"][k]["content"]);
    EXPECT_FALSE(row["messages"][k]["train"].get<bool>());
  }
  const json& last = row["messages"][4];
  EXPECT_TRUE(last["train"].get<bool>());
  EXPECT_EQ(last["content"],
            "<think>\n" + kFirstPerson + "\n</think>\n\n" +
                Fenced(Control("wgmma_tma")
                           .substr(0, Control("wgmma_tma").size() -
                                          (EndsWith(Control("wgmma_tma"), "\n") ? 1 : 0))));
  EXPECT_EQ(row["metadata"]["failure_evaluation_id"], failure["id"]);
  EXPECT_EQ(row["metadata"]["repair_evaluation_id"], kept["repair_evaluation_id"]);
  EXPECT_EQ(row["metadata"]["teachers"]["repair"], "repair-teacher");
  EXPECT_EQ(row["metadata"]["teachers"]["reasoning"], "reason-teacher");
  json card = ReadJson(work + "/export/card.json");
  EXPECT_EQ(card["rows"]["train"], 1);
  EXPECT_EQ(card["counts"]["by_outcome"]["compile"]["train"], 1);
  EXPECT_EQ(card["counts"]["by_turn"]["1"]["train"], 1);
  EXPECT_EQ(card["provenance"]["source_runs"][0], "student");
  EXPECT_TRUE(
      Contains(ReadFile(work + "/export/card.md"), "| " + std::string(kTask) + " | 1 | 0 |"));

  // KernelGen over the repair run: its trajectories are seeded, so none is a KernelGen row.
  CommandResult kg =
      Ptxbench({"kernelgen", "export", "--runs", work + "/repair", "--out", dir.File("kg-repair")});
  EXPECT_EQ(kg.exit.code, 0) << kg.output;
  EXPECT_EQ(ReadFile(dir.File("kg-repair/train.jsonl")), "");
  EXPECT_TRUE(Contains(kg.output, "seeded trajectory")) << kg.output;

  // The key went into request headers only: no file and no output holds it.
  EXPECT_TRUE(FilesContaining(dir.path(), kSecret).empty())
      << Join(FilesContaining(dir.path(), kSecret));
  for (const CommandResult* c : {&run, &mine, &r1, &r2, &z1, &z2, &e, &kg})
    EXPECT_FALSE(Contains(c->output, kSecret));

  // Mining again on purpose: the later stages' files go with the old manifest.
  CommandResult over = Ptxbench({"fixit", "mine", "--runs", student, "--dir", work, "--overwrite"});
  EXPECT_EQ(over.exit.code, 0) << over.output;
  EXPECT_TRUE(FileExists(work + "/manifest.json"));
  for (const char* gone : {"/repair", "/repairs.json", "/reasoning.jsonl", "/export"})
    EXPECT_FALSE(std::filesystem::exists(work + gone)) << gone;
}

TEST(FixitEndToEnd, KernelGenExportsOnlyKernelsTheirRecordsVerify) {
  ScratchDir dir("kernelgen-e2e");
  std::string run = dir.File("run");
  // A run folder in the loop's layout: turn 1 verified by its record; turn 2 says "verified"
  // but its record says the SASS had no GMMA: the record wins; turn 3 is a compile error.
  Trajectory t;
  t.task = kTask;
  t.workload = "w";
  t.id = std::string(kTask) + "-0";
  t.messages = {{"system", "SYSTEM"}, {"user", "TASK"}};
  const std::vector<std::tuple<std::string, std::string, std::string>> turns = {
      {"verified", "wgmma_tma", "dynamic_present"},
      {"verified", "mma_sync", "sass_absent"},
      {"compile", "does_not_compile", ""}};
  MakeDirs(run + "/kernels/" + t.id);
  MakeDirs(run + "/evaluations/" + t.id);
  for (size_t k = 0; k < turns.size(); ++k) {
    auto [outcome, control, verification] = turns[k];
    TurnRecord u;
    u.turn = static_cast<int>(k) + 1;
    u.outcome = outcome;
    u.kernel_file = "kernels/" + t.id + "/turn" + std::to_string(u.turn) + ".cu";
    u.evaluation_file = "evaluations/" + t.id + "/turn" + std::to_string(u.turn) + ".json";
    u.evaluation_id = t.id + "/turn" + std::to_string(u.turn);
    WriteFileAtomic(run + "/" + u.kernel_file, Control(control));
    json rec = {{"status", outcome == "compile" ? "COMPILE_ERROR" : "PASSED"},
                {"instructions", {{"verification", verification}, {"arch_tag", "H"}}},
                {"performance", {{"state", "ran"}, {"speedup", 1.1}}}};
    WriteFileAtomic(run + "/" + u.evaluation_file, rec.dump());
    t.turns.push_back(u);
    t.messages.push_back({"assistant", "My plan for turn " + std::to_string(u.turn) +
                                           ": TMA and wgmma.\n" + Fenced(Control(control))});
    t.messages.push_back({"user", "feedback"});
  }
  t.exit_status = "turn_limit";
  MakeDirs(run + "/trajectories");
  WriteFileAtomic(run + "/trajectories/" + t.id + ".json", ToJson(t).dump());
  WriteFileAtomic(run + "/run.json", json{{"schema", "ptxbench.run/1"},
                                          {"model", {{"name", "student"}}},
                                          {"arch", "sm_90a"},
                                          {"pack", "full"}}
                                         .dump());
  CommandResult kg = Ptxbench({"kernelgen", "export", "--runs", run, "--out", dir.File("kg")});
  ASSERT_EQ(kg.exit.code, 0) << kg.output;
  std::vector<std::string> rows = SplitLines(ReadFile(dir.File("kg/train.jsonl")));
  ASSERT_EQ(rows.size(), 1u) << kg.output;
  json row = json::parse(rows[0]);
  ASSERT_EQ(row["messages"].size(), 3u);
  EXPECT_EQ(row["messages"][0]["content"], "SYSTEM");
  EXPECT_FALSE(row["messages"][1]["train"].get<bool>());
  EXPECT_TRUE(row["messages"][2]["train"].get<bool>());
  EXPECT_TRUE(StartsWith(row["messages"][2]["content"].get<std::string>(),
                         "<think>\nMy plan for turn 1: TMA and wgmma.\n</think>\n\n```cuda\n"));
  EXPECT_EQ(row["metadata"]["evaluation_id"], "run/" + t.id + "/turn1");
  json card = json::parse(ReadFile(dir.File("kg/card.json")));
  EXPECT_EQ(card["kind"], "kernelgen");
  EXPECT_EQ(card["dropped"]["not verified (sass_absent, tag H; needs dynamic_present, H)"], 1)
      << card.dump(1);
}

// Item 5: an SFT'd model behind an OpenAI-compatible endpoint, run with --pack none and with
// --pack full. The model reads no pack in the first run and the whole Hopper pack in the
// second, and each run says which.
TEST(FixitEndToEnd, AnAdaptedModelRunsWithPackNoneAndPackFull) {
  ScratchDir dir("adapted-e2e");
  ScriptedModelServer server;
  std::mutex mu;
  std::map<std::string, std::string> system_by_run;
  server.SetResponder([&](const RecordedRequest& r) {
    std::lock_guard<std::mutex> lock(mu);
    system_by_run[Contains(r.messages[0].content, "wgmma") && r.messages[0].content.size() > 20000
                      ? "full"
                      : "none"] = r.messages[0].content;
    return ScriptStep::Reply(Fenced(kDoesNotCompile));
  });
  std::string models = ModelsFile(dir, server);
  for (const char* pack : {"none", "full"}) {
    CommandResult r = Ptxbench({"run", "--model", "adapted", "--models", models, "--task", kTask,
                                "--turns", "1", "--pack", pack, "--out", dir.File(pack)});
    ASSERT_EQ(r.exit.code, 0) << r.output;
    json info = ReadJson(dir.File(pack) + "/run.json");
    EXPECT_EQ(info["pack"], pack);
    EXPECT_EQ(info["pack_info"]["variant"], pack);
    EXPECT_EQ(info["model"]["name"], "adapted");
  }
  ASSERT_EQ(system_by_run.size(), 2u) << "one run read the pack, the other did not";
  EXPECT_GT(system_by_run["full"].size(), system_by_run["none"].size() + 20000);
  CommandResult rep = Ptxbench({"report", "--runs", dir.File("none"), "--runs", dir.File("full"),
                                "--no-published", "--resamples", "0"});
  EXPECT_EQ(rep.exit.code, 0) << rep.output;
  EXPECT_TRUE(Contains(rep.output, "none") && Contains(rep.output, "full")) << rep.output;
}

}  // namespace
}  // namespace ptxbench

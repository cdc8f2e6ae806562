// The HTML report: its numbers on a hand-computed fixture, escaping of what models write,
// determinism, and the page in a real browser (Chromium, headless): scripts run without console
// errors, the self-check passes, the numbers survive into the DOM, and a screenshot renders.
#include "report/html.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "report/from_runs.h"

namespace ptxbench {
namespace {

using nlohmann::json;

// A kernel source with everything that breaks HTML when pasted raw.
const char* kNastySource =
    "// a < b && c > d \"quoted\" 'single'\n"
    "</pre><script>document.body.dataset.selfcheck='pwned'</script>\n"
    "__global__ void k(float* x) { if (threadIdx.x < 32 && x) x[0] = 1; }\n";

json FixtureTurn(int n, const std::string& outcome, std::optional<double> speedup = {},
                 bool spent = true) {
  json t = {
      {"turn", n},
      {"outcome", outcome},
      {"status", outcome == "correct" || outcome == "verified" ? "PASSED" : "FAILED"},
      {"spent", spent},
      {"usage", {{"prompt_tokens", 1000}, {"completion_tokens", 200}, {"reasoning_tokens", 0}}},
      {"evaluation_file", ""},
      {"kernel_file", ""}};
  if (speedup) t["speedup"] = *speedup;
  return t;
}

json FixtureRecord(bool verified) {
  json fn = {{"mangled", "_Z4gemmPKfS0_Pf"},
             {"demangled", "gemm<128, 256>(float const*, float const*, float*)"},
             {"arch", "sm_90a"},
             {"instructions", 812},
             {"families", {{"gmma", verified ? 4 : 0}, {"tma", 2}}},
             {"evidence",
              {"/*0a10*/ HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT, gsb0 ;",
               "/*0b20*/ UTMALDG.2D [UR8], [UR4] ;"}}};
  json ins = {{"static",
               {{"state", "ran"},
                {"message", ""},
                {"functions", json::array({fn})},
                {"totals", {{"gmma", verified ? 4 : 0}, {"tma", 2}}}}},
              {"required_families", {"gmma"}},
              {"verification", verified ? "dynamic_present" : "sass_absent"},
              {"arch_tag", verified ? json("H") : json(nullptr)}};
  if (verified)
    ins["dynamic"] = {
        {"families", {{"gmma", {{"static_count", 4}, {"thread_executions_true", 65536}}}}},
        {"evidence", {"gemm: gmma executed 65536 thread instructions"}}};
  return {{"status", "PASSED"}, {"instructions", ins}};
}

// A run of "Fixture Model" on gemm_n7168_k5120 (sm_90a), three trajectories:
//   gemm-0: compile, correct 0.5, verified 0.8  (correct from turn 2, verified from turn 3)
//   gemm-1: verified 1.2                        (correct and verified from turn 1)
//   gemm-2: incorrect, (infra, not spent), incorrect → never correct
// With turn limits {1, 4}: correct@1 = verified@1 = 1/3, correct@4 = verified@4 = 2/3,
// best speedup 1.2 at both, median per-trajectory best 1.2 at T=1 and (0.8 + 1.2) / 2 = 1 at
// T=4, pass@1@4 = 2/3, pass@3@4 = 1. Curve over t = 1..3: correct 1/3, 2/3, 2/3; verified 1/3,
// 1/3, 2/3.
void WriteFixtureRun(const std::string& dir) {
  MakeDirs(dir + "/trajectories");
  MakeDirs(dir + "/kernels");
  MakeDirs(dir + "/evaluations");
  WriteFileAtomic(dir + "/run.json", json{{"model", {{"name", "Fixture Model"}, {"provider", "x"}}},
                                          {"arch", "sm_90a"},
                                          {"pack", "full"}}
                                         .dump());
  std::vector<json> turns = {
      json::array({FixtureTurn(1, "compile"), FixtureTurn(2, "correct", 0.5),
                   FixtureTurn(3, "verified", 0.8)}),
      json::array({FixtureTurn(1, "verified", 1.2)}),
      json::array({FixtureTurn(1, "incorrect"), FixtureTurn(2, "infra", {}, false),
                   FixtureTurn(2, "incorrect")})};
  turns[0][1]["kernel_file"] = "kernels/gemm-0-turn2.cu";
  turns[0][1]["evaluation_file"] = "evaluations/gemm-0-turn2.json";
  turns[1][0]["kernel_file"] = "kernels/gemm-1-turn1.cu";
  turns[1][0]["evaluation_file"] = "evaluations/gemm-1-turn1.json";
  WriteFileAtomic(dir + "/kernels/gemm-0-turn2.cu", "__global__ void plain() {}\n");
  WriteFileAtomic(dir + "/evaluations/gemm-0-turn2.json", FixtureRecord(false).dump());
  WriteFileAtomic(dir + "/kernels/gemm-1-turn1.cu", kNastySource);
  WriteFileAtomic(dir + "/evaluations/gemm-1-turn1.json", FixtureRecord(true).dump());
  for (int k = 0; k < 3; ++k) {
    std::string id = "gemm-" + std::to_string(k);
    json info = {{"id", id},
                 {"task", "gemm_n7168_k5120"},
                 {"index", k},
                 {"exit_status", "turn_limit"},
                 {"turns", turns[k]}};
    WriteFileAtomic(dir + "/trajectories/" + id + ".json",
                    json{{"info", info}, {"messages", json::array()}}.dump());
  }
}

struct Fixture {
  Dataset data;
  std::vector<GroupMetrics> groups;
};

Fixture LoadFixture(const std::string& run_dir) {
  WriteFixtureRun(run_dir);
  Fixture f;
  f.data = LoadRunFolders({run_dir}).dataset;
  MetricOptions mo;
  mo.turn_limits = {1, 4};
  mo.pass_k = {1, 3};
  mo.bootstrap_resamples = 200;
  f.groups = ComputeMetrics(f.data, mo);
  return f;
}

HtmlOptions FixtureOptions() {
  HtmlOptions o;
  o.title = "Fixture <report> & co";
  o.generated_at = "2026-12-04 12:00 UTC";
  return o;
}

// The opening tag (or the rest of it) that contains `anchor`: from the '<' before it to the
// next '>'. Empty when the anchor is absent.
std::string TagWith(const std::string& html, const std::string& anchor) {
  size_t at = html.find(anchor);
  if (at == std::string::npos) return "";
  size_t open = html.rfind('<', at), close = html.find('>', at);
  return html.substr(open, close - open + 1);
}

// The value of attribute `name` in the tag that contains `anchor`; "<absent>" when missing, so
// a failed lookup shows up in the expectation's message.
std::string AttrOf(const std::string& html, const std::string& anchor,
                   const std::string& name = "data-value") {
  std::string tag = TagWith(html, anchor);
  size_t at = tag.find(" " + name + "=\"");
  if (at == std::string::npos) return "<absent>";
  at += name.size() + 3;
  return tag.substr(at, tag.find('"', at) - at);
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// The checks that must hold on the generated file and on the DOM a browser made of it.
void ExpectFixtureNumbers(const std::string& html) {
  EXPECT_EQ(AttrOf(html, "data-metric=\"correct@1\""), "0.333333");
  EXPECT_EQ(AttrOf(html, "data-metric=\"correct@4\""), "0.666667");
  EXPECT_EQ(AttrOf(html, "data-metric=\"correct@4\"", "data-count"), "2");
  EXPECT_EQ(AttrOf(html, "data-metric=\"verified@1\""), "0.333333");
  EXPECT_EQ(AttrOf(html, "data-metric=\"verified@4\""), "0.666667");
  // No record has a paper's tag apart from arch_tag: the paper's rule counts the same.
  EXPECT_EQ(AttrOf(html, "data-metric=\"verified_upstream@1\""), "0.333333");
  EXPECT_EQ(AttrOf(html, "data-metric=\"verified_upstream@4\""), "0.666667");
  EXPECT_NE(AttrOf(html, "data-metric=\"correct@4\"", "data-ci-low"), "<absent>");
  EXPECT_EQ(AttrOf(html, "data-metric=\"best_speedup@1\""), "1.2");
  EXPECT_EQ(AttrOf(html, "data-metric=\"best_speedup@4\""), "1.2");
  EXPECT_EQ(AttrOf(html, "data-metric=\"median_best@1\""), "1.2");
  EXPECT_EQ(AttrOf(html, "data-metric=\"median_best@4\""), "1");
  EXPECT_EQ(AttrOf(html, "data-metric=\"pass@1@4\""), "0.666667");
  EXPECT_EQ(AttrOf(html, "data-metric=\"pass@3@4\""), "1");
  EXPECT_EQ(AttrOf(html, "data-metric=\"pass@3@1\""), "1");
  // The curve, every t up to the longest trajectory.
  const char* correct[] = {"0.333333", "0.666667", "0.666667"};
  const char* verified[] = {"0.333333", "0.333333", "0.666667"};
  for (int t = 1; t <= 3; ++t) {
    std::string turn = " data-turn=\"" + std::to_string(t) + "\"";
    EXPECT_EQ(AttrOf(html, "data-series=\"correct\"" + turn), correct[t - 1]) << t;
    EXPECT_EQ(AttrOf(html, "data-series=\"verified\"" + turn), verified[t - 1]) << t;
    EXPECT_EQ(AttrOf(html, "data-series=\"verified_upstream\"" + turn), verified[t - 1]) << t;
  }
  EXPECT_EQ(TagWith(html, "data-series=\"correct\" data-turn=\"4\""), "");
  // Speedups: one point per timed trajectory, the library line, the median.
  EXPECT_EQ(AttrOf(html, "data-trajectory=\"gemm-0\" data-value"), "0.8");
  EXPECT_EQ(AttrOf(html, "class=\"point\""), "0.8");
  EXPECT_EQ(AttrOf(html, "data-metric=\"median_best\""), "1");
  EXPECT_NE(TagWith(html, "data-reference=\"1\""), "");
  // Outcome bars: turn 1 had a compile error, a verified and an incorrect turn.
  EXPECT_EQ(AttrOf(html, "class=\"bar\" data-turn=\"1\"", "data-reached"), "3");
  EXPECT_EQ(AttrOf(html, "class=\"bar\" data-turn=\"3\"", "data-reached"), "1");
  EXPECT_EQ(Count(html, "data-outcome=\"compile\" data-count=\"1\""), 1u);
  EXPECT_EQ(Count(html, "data-outcome=\"incorrect\" data-count=\"1\""), 2u);
  for (const std::string& c : OutcomeCategories())
    EXPECT_NE(html.find("<li data-outcome=\"" + c + "\">"), std::string::npos) << c;
  // Evidence per trajectory: its best turn.
  auto field = [&](const std::string& id, const std::string& f) {
    size_t row = html.find("<tr data-trajectory=\"" + id + "\"");
    if (row == std::string::npos) return std::string("<no row>");
    size_t at = html.find("data-field=\"" + f + "\"", row);
    size_t open = html.find('>', at) + 1;
    return html.substr(open, html.find('<', open) - open);
  };
  EXPECT_EQ(field("gemm-0", "turns"), "3");
  EXPECT_EQ(field("gemm-0", "best_turn"), "3");
  EXPECT_EQ(field("gemm-0", "best_outcome"), "verified");
  EXPECT_EQ(field("gemm-1", "verification"), "dynamic_present");
  EXPECT_EQ(field("gemm-1", "arch_tag"), "H");
  EXPECT_EQ(field("gemm-1", "upstream_arch_tag"), "H");
  EXPECT_EQ(field("gemm-2", "turns"), "2");
  EXPECT_EQ(field("gemm-2", "best_outcome"), "incorrect");
  // A <details> per correct turn, and only those.
  EXPECT_EQ(Count(html, "<details class=\"kernel\""), 3u);
  EXPECT_NE(TagWith(html, "id=\"g0-k-gemm-0-t2\""), "");
  EXPECT_NE(TagWith(html, "id=\"g0-k-gemm-1-t1\""), "");
  EXPECT_EQ(TagWith(html, "id=\"g0-k-gemm-2-t1\""), "");
  // SASS evidence from the record.
  EXPECT_NE(html.find("HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT, gsb0 ;"),
            std::string::npos);
  // The static family counts of gemm-1's turn 1 (verified), in its own <details>.
  size_t details = html.find("id=\"g0-k-gemm-1-t1\"");
  ASSERT_NE(details, std::string::npos);
  std::string kernel = html.substr(details);
  EXPECT_EQ(AttrOf(kernel.substr(kernel.find("<tr data-family=\"gmma\"")), "data-field=\"static\""),
            "4");
  EXPECT_NE(kernel.find("gemm: gmma executed 65536 thread instructions"), std::string::npos);
}

TEST(HtmlReport, CarriesTheHandComputedFigures) {
  ScratchDir dir("html-test");
  Fixture f = LoadFixture(dir.File("run"));
  ASSERT_EQ(f.groups.size(), 1u);
  std::string html = HtmlReport(f.data, f.groups, FixtureOptions());
  ExpectFixtureNumbers(html);
  EXPECT_EQ(AttrOf(html, "<body", "data-charts"), "3");
  EXPECT_EQ(AttrOf(html, "<section class=\"group\"", "data-task"), "gemm_n7168_k5120");
  EXPECT_NE(html.find("generated 2026-12-04 12:00 UTC"), std::string::npos);
  EXPECT_NE(html.find("&quot;verification&quot;: &quot;dynamic_present&quot;"), std::string::npos)
      << "the record is pretty-printed";
}

TEST(HtmlReport, EscapesWhatModelsWrite) {
  ScratchDir dir("html-test");
  Fixture f = LoadFixture(dir.File("run"));
  std::string html = HtmlReport(f.data, f.groups, FixtureOptions());
  EXPECT_NE(html.find("// a &lt; b &amp;&amp; c &gt; d &quot;quoted&quot; &#39;single&#39;"),
            std::string::npos);
  EXPECT_NE(html.find("&lt;/pre&gt;&lt;script&gt;document.body"), std::string::npos);
  EXPECT_EQ(html.find("</pre><script>document.body"), std::string::npos);
  EXPECT_EQ(Count(html, "<script>"), 1u) << "only the page's own script";
  EXPECT_NE(html.find("<title>Fixture &lt;report&gt; &amp; co</title>"), std::string::npos);
  EXPECT_NE(html.find("gemm&lt;128, 256&gt;(float const*"), std::string::npos);
}

TEST(HtmlReport, EscapeKeepsUtf8AndReplacesBrokenBytes) {
  EXPECT_EQ(HtmlEscape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(HtmlEscape("A·B\xE1\xB5\x80 ×"), "A·B\xE1\xB5\x80 ×");
  EXPECT_EQ(HtmlEscape("x\xFFy\xC0\xAFz\xE2\x82"),
            "x\xEF\xBF\xBDy\xEF\xBF\xBD\xEF\xBF\xBDz\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(HtmlEscape("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD") << "a surrogate";
}

TEST(HtmlReport, IsDeterministicAndSelfContained) {
  ScratchDir dir("html-test");
  Fixture f = LoadFixture(dir.File("run"));
  std::string a = HtmlReport(f.data, f.groups, FixtureOptions());
  Fixture g = LoadFixture(dir.File("run2"));
  // The run folder's path differs and is not on the page, so the bytes are equal.
  EXPECT_EQ(a, HtmlReport(g.data, g.groups, FixtureOptions()));
  for (const char* external : {"http://", "https://", "src=", "href=", "@import", "url("}) {
    size_t at = a.find(external);
    // The SVG namespace is an identifier, never fetched.
    while (at != std::string::npos && a.compare(at, 26, "http://www.w3.org/2000/svg") == 0)
      at = a.find(external, at + 1);
    EXPECT_EQ(at, std::string::npos) << external;
  }
}

TEST(HtmlReport, CutsLongSourcesAndNotesMissingFiles) {
  ScratchDir dir("html-test");
  Fixture f = LoadFixture(dir.File("run"));
  f.data.trajectories[0].turns[2].kernel_file = "kernels/not-there.cu";
  HtmlOptions o = FixtureOptions();
  o.max_source_bytes = 10;
  std::string html = HtmlReport(f.data, f.groups, o);
  EXPECT_NE(html.find("<pre class=\"source\">// a &lt; b &amp;</pre>"), std::string::npos);
  EXPECT_NE(html.find("cut at 10 bytes"), std::string::npos);
  EXPECT_NE(html.find("No kernel source at kernels/not-there.cu."), std::string::npos);
}

// gemm-0's turn 2 with the paper's tag but not ours: verified (paper) from turn 2, ours from 3.
TEST(HtmlReport, ShowsThePapersTagBesideOurs) {
  ScratchDir dir("html-test");
  std::string run = dir.File("run");
  WriteFixtureRun(run);
  json rec = FixtureRecord(true);
  rec["instructions"]["arch_tag"] = nullptr;
  rec["instructions"]["upstream_arch_tag"] = "H";
  WriteFileAtomic(run + "/evaluations/gemm-0-turn2.json", rec.dump());
  Dataset d = LoadRunFolders({run}).dataset;
  MetricOptions mo;
  mo.turn_limits = {2};
  mo.bootstrap_resamples = 0;
  std::string html = HtmlReport(d, ComputeMetrics(d, mo), FixtureOptions());
  EXPECT_EQ(AttrOf(html, "data-metric=\"verified@2\""), "0.333333");
  EXPECT_EQ(AttrOf(html, "data-metric=\"verified_upstream@2\""), "0.666667");
  EXPECT_EQ(AttrOf(html, "data-series=\"verified\" data-turn=\"2\""), "0.333333");
  EXPECT_EQ(AttrOf(html, "data-series=\"verified_upstream\" data-turn=\"2\""), "0.666667");
  EXPECT_NE(html.find("gemm-0 turn 2: correct, 0.5×, tag H under the paper's rule only"),
            std::string::npos);
  EXPECT_NE(html.find("<th>verified@T (paper)</th>"), std::string::npos);
  EXPECT_NE(html.find("<th>tag (paper)</th>"), std::string::npos);
}

TEST(HtmlReport, EmptyInputGivesAValidPage) {
  std::string html = HtmlReport(Dataset{}, {}, HtmlOptions{});
  EXPECT_NE(html.find("<body data-charts=\"0\" data-groups=\"0\">"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

// ---- the real browser ----

std::optional<std::string> FindChromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
    if (auto p = FindProgram(name)) return p;
  return std::nullopt;
}

struct BrowserRun {
  ExitInfo exit;
  std::string dom, log, output;
};

// Headless Chromium on a file: stdout (the DOM after scripts) and stderr (its log, where the
// page's console messages go) to separate files, since RunCommand captures them together.
BrowserRun RunChromium(const std::string& chromium, const std::string& dir, const std::string& page,
                       const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {"sh",
                                   "-c",
                                   "out=$1; err=$2; shift 2; exec \"$@\" >\"$out\" 2>\"$err\"",
                                   "sh",
                                   dir + "/stdout.txt",
                                   dir + "/stderr.txt",
                                   chromium,
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--no-first-run",
                                   "--user-data-dir=" + dir + "/profile",
                                   "--enable-logging=stderr",
                                   "--v=0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("file://" + page);
  CommandResult r = RunCommand(argv, std::chrono::seconds(120));
  BrowserRun b{r.exit, "", "", r.output};
  if (FileExists(dir + "/stdout.txt")) b.dom = ReadFile(dir + "/stdout.txt");
  if (FileExists(dir + "/stderr.txt")) b.log = ReadFile(dir + "/stderr.txt");
  return b;
}

// Console messages from the page, from Chromium's log; the rest of the log (dbus, GPU, fonts)
// is headless noise that says nothing about the page.
std::vector<std::string> PageConsoleLines(const std::string& log) {
  std::vector<std::string> out;
  for (const std::string& line : SplitLines(log))
    if (line.find("CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos)
      out.push_back(line);
  return out;
}

#define SKIP_WITHOUT_CHROMIUM(var)                                                        \
  auto var = FindChromium();                                                              \
  if (!var) {                                                                             \
    std::cout << "[  SKIPPED ] chromium is not installed (apt-get install -y chromium); " \
                 "the browser test did not run\n";                                        \
    GTEST_SKIP() << "chromium not installed";                                             \
  }

// The filter must see a real page error, or a clean log would prove nothing.
TEST(HtmlReportBrowser, TheConsoleFilterSeesPageErrors) {
  SKIP_WITHOUT_CHROMIUM(chromium);
  ScratchDir dir("html-browser");
  WriteFileAtomic(dir.File("bad.html"),
                  "<!DOCTYPE html><html><body><script>console.error('boom-from-page');"
                  "undefinedFunction();</script></body></html>\n");
  BrowserRun b = RunChromium(*chromium, dir.path(), dir.File("bad.html"), {"--dump-dom"});
  ASSERT_EQ(b.exit.kind, ExitKind::kExited) << b.exit.Describe() << b.output;
  std::string lines = Join(PageConsoleLines(b.log), "\n");
  EXPECT_NE(lines.find("boom-from-page"), std::string::npos) << b.log;
  EXPECT_NE(lines.find("Uncaught"), std::string::npos) << b.log;
}

TEST(HtmlReportBrowser, ThePageRendersWithoutErrorsAndKeepsItsNumbers) {
  SKIP_WITHOUT_CHROMIUM(chromium);
  ScratchDir dir("html-browser");
  Fixture f = LoadFixture(dir.File("run"));
  const char* env = std::getenv("PTXBENCH_ARTIFACTS_DIR");
  std::string artifacts = env && *env ? env : dir.path();
  MakeDirs(artifacts);
  std::string page = artifacts + "/report-fixture.html";
  WriteFileAtomic(page, HtmlReport(f.data, f.groups, FixtureOptions()));

  BrowserRun b = RunChromium(*chromium, dir.path(), page, {"--dump-dom"});
  ASSERT_EQ(b.exit.kind, ExitKind::kExited) << b.exit.Describe() << b.output;
  EXPECT_EQ(b.exit.code, 0) << b.log;
  std::vector<std::string> console = PageConsoleLines(b.log);
  EXPECT_TRUE(console.empty()) << Join(console, "\n");
  ASSERT_NE(b.dom.find("<body"), std::string::npos) << "no DOM dumped:\n" << b.log;
  EXPECT_EQ(AttrOf(b.dom, "<body", "data-selfcheck"), "ok") << TagWith(b.dom, "<body");
  // The browser parsed what we wrote: the numbers, and the source still text, not markup.
  ExpectFixtureNumbers(b.dom);
  EXPECT_EQ(Count(b.dom, "<script>"), 1u);
  EXPECT_NE(b.dom.find("&lt;/pre&gt;&lt;script&gt;"), std::string::npos);
  EXPECT_EQ(Count(b.dom, "<svg"), 3u);

  std::string png = artifacts + "/report-fixture.png";
  std::remove(png.c_str());
  BrowserRun s =
      RunChromium(*chromium, dir.path(), page,
                  {"--screenshot=" + png, "--window-size=1280,2400", "--hide-scrollbars"});
  ASSERT_EQ(s.exit.kind, ExitKind::kExited) << s.exit.Describe() << s.output;
  ASSERT_TRUE(FileExists(png)) << s.log;
  std::string bytes = ReadFile(png);
  EXPECT_EQ(bytes.substr(0, 8), "\x89PNG\r\n\x1a\n");
  EXPECT_GT(bytes.size(), 20000u) << "a blank page compresses to a few kB";
  std::cout << "screenshot: " << png << " (" << bytes.size() << " bytes); page: " << page << "\n";
}

}  // namespace
}  // namespace ptxbench

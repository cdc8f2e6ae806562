// The report as one self-contained HTML page: per group (model, arch, task, pack) the
// summary table, the correct/verified curve over turn limits, the speedup distribution, the
// per-turn outcomes, the instruction evidence per trajectory, and every correct kernel with its
// evaluation record and SASS evidence.
//
// The page needs no network (inline CSS and SVG, one small inline script) and is a pure
// function of its inputs plus the files under each trajectory's run_dir, so the same runs give
// the same bytes. Every figure and table cell that carries a number has stable ids and
// data-metric / data-value attributes, so tests (and scripts) read the numbers without parsing
// the text meant for people.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "record/report_rows.h"
#include "report/metrics.h"

namespace ptxbench {

struct HtmlOptions {
  std::string title = "ptxbench report";
  // Shown as is; the caller supplies it so that the generator itself reads no clock.
  std::string generated_at;
  // Kernel sources and evaluation records longer than this are cut (with a note), so that a
  // run with huge generated files still gives a page a browser opens.
  size_t max_source_bytes = 256 * 1024;
  size_t max_record_bytes = 256 * 1024;
  // At most this many SASS evidence lines per function are shown.
  size_t max_evidence_lines = 32;
};

// `groups` as ComputeMetrics(data) returns them; trajectories of `data` are matched to a group
// by its key. Files that are missing or unreadable are noted on the page, never thrown.
std::string HtmlReport(const Dataset& data, const std::vector<GroupMetrics>& groups,
                       const HtmlOptions& options = {});

// Text made safe for HTML element content and attribute values (& < > " '), with invalid
// UTF-8 bytes replaced by U+FFFD so the page stays valid whatever a model wrote.
std::string HtmlEscape(std::string_view text);

}  // namespace ptxbench

#include "record/report_rows.h"

#include "record/outcome.h"
#include "record/record.h"
#include "record/upstream_sass.h"

namespace ptxbench {

TurnRow TurnRowOf(const TurnRecord& t) {
  TurnRow r;
  r.turn = t.turn;
  r.outcome = t.outcome;
  r.status = t.status;
  r.reason = t.reason;
  r.speedup = t.speedup;
  r.tflops = t.tflops;
  r.evaluation_id = t.evaluation_id;
  r.kernel_file = t.kernel_file;
  r.evaluation_file = t.evaluation_file;
  r.prompt_tokens = t.usage.prompt_tokens;
  r.completion_tokens = t.usage.completion_tokens;
  r.reasoning_tokens = t.usage.reasoning_tokens;
  r.model_seconds = t.model_seconds;
  r.evaluation_seconds = t.evaluation_seconds;
  return r;
}

void AddRecordColumns(const EvaluationRecord& record, const std::string& arch, TurnRow* row) {
  const InstructionsView ins = record.Instructions();
  row->verification = ins.verification_text;
  row->arch_tag = ins.arch_tag;
  row->upstream_arch_tag = ins.upstream_arch_tag;
  row->upstream_sass = UpstreamSassColumns(record, arch, row->Correct(), row->evaluation_id);
}

TurnRow TurnRowFromRecord(const EvaluationRecord& record, const std::string& arch, int turn,
                          const std::string& evaluation_id) {
  TurnRow r;
  r.turn = turn;
  r.outcome = ToString(JudgeTurn(record, arch).outcome);
  r.status = record.status == Status::kUnknown ? "" : ToString(record.status);
  r.reason = record.reason;
  const PerformanceView perf = record.Performance();
  r.speedup = perf.speedup;
  r.tflops = perf.tflops;
  r.evaluation_id = evaluation_id;
  if (auto total = record.TotalSeconds()) r.evaluation_seconds = *total;
  AddRecordColumns(record, arch, &r);
  return r;
}

}  // namespace ptxbench

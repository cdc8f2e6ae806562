// `ptxbench __gpm_trace SECONDS`: a diagnostic (issue 37) that samples the GPU's GPM counters
// in back-to-back windows of about 120 ms and appends each to the PTXBENCH_GPU_TRACE file
// ("gpm": SM, tensor, DRAM and any-context utilization), so that a trace of several
// evaluations shows what the GPU did between and during their holds. Not used by a verdict.
#pragma once

namespace ptxbench {

int GpmTraceMain(int argc, char** argv);

}  // namespace ptxbench

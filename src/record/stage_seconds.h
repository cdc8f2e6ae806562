// The keys of `record.stage_seconds` that the evaluator's stages write: one spelling for each,
// shared by writers and readers. The map itself stays open rather than a struct with a field
// per stage: a record holds only the stages that ran,
// and older records name stages this version no longer has; all of them must read and write
// back as they are.
#pragma once

namespace ptxbench::stage_key {

inline constexpr char kScreen[] = "screen";
inline constexpr char kBuild[] = "build";
inline constexpr char kInspect[] = "inspect";
inline constexpr char kReference[] = "reference";
inline constexpr char kRun[] = "run";  // the correctness trials' child
inline constexpr char kCompare[] = "compare";
inline constexpr char kMemcheck[] = "memcheck";
// The GPU lock (run/gpu_lock.h), over the whole evaluation: seconds waited for it, and seconds
// held alone and shared (they overlap the stages above; a throughput run adds them up).
inline constexpr char kGpuLockWait[] = "gpu_lock_wait";
inline constexpr char kGpuAlone[] = "gpu_alone";
inline constexpr char kGpuShared[] = "gpu_shared";
// The timing layer's: its child, the baselines' runs before and after, the reference of the
// calls drawn after the loop, and their revalidation.
inline constexpr char kTiming[] = "timing";
inline constexpr char kTimingBaseline[] = "timing_baseline";
inline constexpr char kTimingReference[] = "timing_reference";
inline constexpr char kTimingRevalidate[] = "timing_revalidate";
inline constexpr char kProfile[] = "profile";
inline constexpr char kCrossCheck[] = "cross_check";
// The whole evaluation, from its start to its record (not the sum of the stages).
inline constexpr char kTotal[] = "total";

}  // namespace ptxbench::stage_key

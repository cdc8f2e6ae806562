// FlashInfer-Bench trace sets as task catalogs, so that a task can come from their dataset:
//
//   definitions/**.json   {name, op_type, axes {n: {type: const, value} | {type: var}},
//                          inputs/outputs {n: {shape: [axis...] | null, dtype}}, reference, tags}
//   workloads/**.jsonl    {"definition", "solution": null,
//                          "workload": {uuid, axes, inputs {n: {type: random|scalar|safetensors}}},
//                          "evaluation": null}
//
// We cannot run their Python reference, so a definition is taken only when its tensors map onto a
// family judged here natively, by structure (counts, ranks, dtypes, shared axes; names only where
// shapes cannot tell tensors apart, as Q, K and V): gemm (A[M,K], B[N,K] -> C[M,N], bf16),
// mha_fwd (Q, K, V [B,H,S,D] bf16 -> O bf16, LSE [B,H,S] fp32) and mha_bwd (Q, K, V, O, dO, LSE
// -> dQ, dK, dV). Attention must say its mask with a tag causal:true or causal:false. The rest
// is left out with the reason. Workloads: "random" inputs are what we do; a scalar input must be
// the value the family implies (the attention scale 1/sqrt(D)); "safetensors" inputs are refused
// (the harness draws every input itself). Malformed files are errors naming the file and line.
#pragma once

#include <string>
#include <vector>

#include "task/definition.h"

namespace ptxbench {

// True when `tasks_dir`/definitions holds FlashInfer-Bench definitions ("op_type"), false when
// it holds ours ("family") or does not exist. Throws InputError for invalid JSON, a definition
// that is neither kind, or a folder mixing both.
bool IsFlashInferTraceSet(const std::string& tasks_dir);

struct FlashInferTaskSet {
  std::vector<Definition> definitions;      // sorted by name
  std::vector<LeftOutDefinition> left_out;  // sorted by name
};
// Reads a trace set. Throws InputError naming the file (and line) for malformed data: invalid
// JSON, a missing or mistyped field, an axis a tensor names but the definition lacks, a
// workload line that is a trace or names a definition the set does not hold, a repeated uuid.
FlashInferTaskSet LoadFlashInferTaskSet(const std::string& trace_set);

// What a definition of `family` gets that their files do not say, the same as our own
// tasks/definitions of that family: the FLOP formula, the required instruction families per
// arch, the baseline.
struct FamilyTaskDefaults {
  std::string flops_formula;
  std::map<std::string, std::vector<std::string>> required_families;
  std::string baseline;
};
FamilyTaskDefaults DefaultsForFamily(const std::string& family, bool causal);

}  // namespace ptxbench

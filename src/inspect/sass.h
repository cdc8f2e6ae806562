// Static inspection: the SASS of the cubins embedded in the very shared object that runs,
// parsed into functions and instructions, and counted by instruction family (docs/design.md
// section 4).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/sandbox.h"

namespace ptxbench {

struct SassInstruction {
  uint64_t offset = 0;       // byte offset in the function, as /*0a40*/ prints it
  std::string predicate;     // "@P0", "@!UP1", or empty
  std::string opcode;        // with modifiers: "HGMMA.64x128x16.F32.BF16"
  std::string operands;      // the rest, without the trailing ';'
  std::string Text() const;  // "@P0 HGMMA.64x128x16.F32.BF16 gdesc[UR4], RZ, !UPT"
};

struct SassFunction {
  std::string mangled;
  std::string demangled;
  std::string arch;  // "sm_90a"
  std::vector<SassInstruction> instructions;
};

// Parses `cuobjdump -sass` output (sections "code for sm_XX", "Function : NAME", lines
// "/*0040*/  @P0 OPCODE operands ;  /* 0x… */").
std::vector<SassFunction> ParseCuobjdumpSass(std::string_view text);

// The instruction families of docs/design.md section 4, by opcode (modifiers ignored):
//   gmma     HGMMA IGMMA QGMMA BGMMA           (Hopper warpgroup MMA, wgmma)
//   tma      UTMALDG UTMASTG UTMAREDG          (Hopper bulk tensor copies; not UTMAPF/UTMACCTL)
//   tcgen05  UTC*                              (Blackwell tensor-core MMA, copy, commit)
//   tmem     LDTM STTM                         (Blackwell tensor memory)
// plus, for information only, `mma_sync` (HMMA, IMMA) — the pre-Hopper tensor-core path.
std::optional<std::string> FamilyOf(std::string_view opcode);
std::vector<std::string> InstructionFamilies();

// Whether a GMMA opcode multiplies bf16 inputs ("HGMMA.64x128x16.F32.BF16"): the only kind
// that counts toward a bf16 task's tensor-core work.
bool IsBf16Gmma(std::string_view opcode);
// Whether a GMMA opcode multiplies fp16 inputs: HGMMA without a .BF16 or .TF32 part
// ("HGMMA.64x128x16.F32", fp16 being HGMMA's own type), for an fp16 task (gemm_f16).
bool IsF16Gmma(std::string_view opcode);
// FLOPs of one warpgroup-level GMMA from its shape ("HGMMA.64x128x16.F32.BF16" → 2·64·128·16);
// nullopt when the opcode carries no shape.
std::optional<double> GmmaFlops(std::string_view opcode);

std::string Demangle(const std::string& mangled);

struct StaticInspection {
  std::string state = "not_reached";  // "ran", "skipped", "failed"
  std::string message;
  std::string tool;           // path of the disassembler
  std::string fatbin_sha256;  // of the shared object's .nv_fatbin section
  std::vector<std::string> cubin_sha256;
  std::vector<SassFunction> functions;
  double seconds = 0;
  // Per family: instruction count in the SASS, over all functions.
  std::map<std::string, long long> Totals() const;
  nlohmann::json ToJson() const;
};

// Extracts and disassembles the cubins of `shared_object` with cuobjdump (PATH, CUDA_HOME,
// /usr/local/cuda, or the pinned wheel under the source tree's .tools/). Never throws for a
// missing or failing tool: the state says so.
// The cuobjdump the inspection uses: the toolkit's, else the pinned copy scripts/setup.sh puts
// in .tools/ (`doctor` reports the same one).
std::optional<std::string> FindCuobjdump();

//
// cuobjdump runs under ObjectToolPolicy in work_dir/cubins (a folder of the evaluation's
// sandbox user, holding a copy of the object): a tool that parses what a candidate built gets
// no secret of ours and reads nothing but that folder, the toolkit and the system.
StaticInspection InspectSharedObject(const std::string& shared_object, const std::string& work_dir);

// The confinement of a tool that parses a candidate-built object (cuobjdump, nvdisasm): nvcc's
// (NvccSandboxPolicy: environment allow-list, namespaces with no network, Landlock reading the
// system and the tool's install folder, /dev/null only, rlimits), writing only `folder`, and a
// uid drop when we are root (and the sandbox user can run the tool).
SandboxPolicy ObjectToolPolicy(const std::string& tool, const std::string& folder);

}  // namespace ptxbench

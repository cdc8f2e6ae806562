// The messages a model starts from: the system message (role, rules, the family's exact ABI,
// how it is judged, the architecture knowledge pack) and the task message (the definition at
// one workload). Both are rendered from the templates under prompts/ (version-controlled),
// deterministically: the same definition, workload, arch and pack give the same bytes.
#pragma once

#include <map>
#include <string>

#include "task/definition.h"

namespace ptxbench {

// The prompts folder: $PTXBENCH_PROMPTS, else the source tree's prompts/.
std::string DefaultPromptsDir();
// The knowledge packs folder: $PTXBENCH_PACKS, else the source tree's packs/.
std::string DefaultPacksDir();

// Replaces every {{name}} in `text`. Throws InputError naming a placeholder that has no
// value (a template and the code that fills it must move together) or an unclosed one.
std::string RenderTemplate(const std::string& text,
                           const std::map<std::string, std::string>& values);

// The pack for `arch` in `variant` (agent/pack.h): "none" gives ""; any other variant needs
// packs/<arch>/manifest.json and throws UsageError without it or for an unknown variant (no
// silent run without the pack asked for).
std::string LoadPack(const std::string& packs_dir, const std::string& arch,
                     const std::string& variant);

struct Prompts {
  std::string system, task;
  std::string version;  // sha256 of both texts: which prompt a trajectory saw
};

Prompts RenderPrompts(const std::string& prompts_dir, const Definition& def, const Workload& wl,
                      const std::string& arch, const std::string& pack_text);

}  // namespace ptxbench

#include "fixit/teacher.h"

#include <cstdio>
#include <vector>

#include "agent/model_config.h"
#include "agent/provider.h"
#include "agent/replay.h"
#include "common/error.h"
#include "common/files.h"

namespace ptxbench {

Teacher LoadTeacher(const std::string& models_file, const std::string& name) {
  std::string file =
      models_file.empty() ? std::string(PTXBENCH_SOURCE_DIR) + "/agent/models.json" : models_file;
  const std::vector<ModelConfig> models = LoadModelConfigs(file);
  for (const ModelConfig& m : models) {
    if (m.name != name) continue;
    Teacher t;
    t.name = m.name;
    t.info = PublicModelJson(m);
    if (m.provider == "replay") {
      std::string replay = m.file;
      if (!replay.empty() && replay[0] != '/' && !FileExists(replay))
        replay = std::string(PTXBENCH_SOURCE_DIR) + "/" + replay;
      t.provider = ReplayProvider::Load(replay, PTXBENCH_SOURCE_DIR);
    } else {
      ModelConfig config = m;
      // The teacher endpoint's 429s and 5xx on the terminal as they happen.
      config.on_retry = [](const std::string& line) {
        std::fprintf(stderr, "teacher %s\n", line.c_str());
      };
      t.provider = MakeHttpProvider(config);
    }
    return t;
  }
  throw UsageError("no model '" + name + "' in " + file);
}

}  // namespace ptxbench

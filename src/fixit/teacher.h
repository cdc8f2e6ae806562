// The teacher of a Fixit stage that asks one (repair, reason): a model of the models file.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/chat.h"

namespace ptxbench {

struct Teacher {
  std::unique_ptr<ChatProvider> provider;
  nlohmann::json info;  // what files may say about it (PublicModelJson): never a key
  std::string name;
};

// The model `name` of the models file (default agent/models.json): an HTTP provider whose
// retries are said on stderr as they happen, or a replay. Throws UsageError for an unknown
// name.
Teacher LoadTeacher(const std::string& models_file, const std::string& name);

}  // namespace ptxbench

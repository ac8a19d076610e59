#pragma once
// A model file read back: the network with its decision rule (ModelFile.cpp),
// for the policy that serves it (LearnedPolicy.cpp) and for combining an ensemble's members.
#include <memory>
#include <string>

#include "Nets.h"
#include "RowNet.h"

namespace mirage::learned {

struct LoadedModel {
  AgentKind kind = AgentKind::kDqn;
  DecisionRule rule;
  std::shared_ptr<ScoreNet> net;
  std::unique_ptr<RowNet> row;  // the same network, for one decision at a time
};

// Throws InputError naming the file when it is not a model file this build can read.
std::shared_ptr<const LoadedModel> load_model(const std::string& path);

}  // namespace mirage::learned

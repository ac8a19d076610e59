#include "mirage/agents/PolicyRegistry.h"

#include "mirage/agents/Baselines.h"
#include "mirage/core/Error.h"

namespace mirage {

std::vector<std::string> policy_names() {
  return {"reactive", "average", std::string(kOracleName)};
}

std::unique_ptr<Policy> make_policy(std::string_view name) {
  if (name == "reactive") return std::make_unique<ReactivePolicy>();
  if (name == "average") return std::make_unique<AveragePolicy>();
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  if (name == kOracleName)
    throw InputError({"", 0, "policy"}, "the oracle exists only in simulation (mirage eval)");
  throw InputError({"", 0, "policy"},
                   "unknown policy '" + std::string(name) + "' (expected one of: " + known + ")");
}

bool is_known_policy(std::string_view name) {
  for (const auto& n : policy_names())
    if (n == name) return true;
  return false;
}

}  // namespace mirage

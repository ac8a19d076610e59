#include "mirage/agents/PolicyRegistry.h"

#include <atomic>
#include <filesystem>

#include "mirage/agents/Baselines.h"
#include "mirage/agents/learned/ModelPolicyHook.h"
#include "mirage/core/Error.h"

namespace mirage {
namespace {

// Set by mirage_learned (which links LibTorch); empty in programs built without it.
std::atomic<ModelPolicyLoader> model_loader{nullptr};

}  // namespace

void set_model_policy_loader(ModelPolicyLoader loader) {
  model_loader.store(loader);
}

bool names_model_file(std::string_view name) {
  if (name.size() >= kModelFileExtension.size() &&
      name.substr(name.size() - kModelFileExtension.size()) == kModelFileExtension)
    return true;
  std::error_code ec;
  return !name.empty() && std::filesystem::is_regular_file(std::filesystem::path(name), ec);
}

std::vector<std::string> policy_names() {
  return {"reactive", "average", "forecast", "forecast-recent", std::string(kOracleName)};
}

std::unique_ptr<Policy> make_policy(std::string_view name) {
  if (name == "reactive") return std::make_unique<ReactivePolicy>();
  if (name == "average") return std::make_unique<AveragePolicy>();
  if (name == "forecast") return std::make_unique<ForecastPolicy>();
  if (name == "forecast-recent")
    return std::make_unique<ForecastPolicy>(RuntimeGuess::recent_ends());
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  if (name == kOracleName)
    throw InputError({"", 0, "policy"}, "the oracle exists only in simulation (mirage eval)");
  if (names_model_file(name)) {
    if (const ModelPolicyLoader load = model_loader.load()) return load(std::string(name));
    throw InputError({std::string(name), 0, "policy"},
                     "this program was built without the learned agents, so it cannot load "
                     "model files");
  }
  throw InputError({"", 0, "policy"}, "unknown policy '" + std::string(name) +
                                          "' (expected one of: " + known + ", or a model file " +
                                          std::string(kModelFileExtension) + ")");
}

bool is_known_policy(std::string_view name) {
  for (const auto& n : policy_names())
    if (n == name) return true;
  return false;
}

}  // namespace mirage

#pragma once
// The seam between the policy registry and the learned agents. The registry (mirage_agents) does
// not link LibTorch; mirage_learned does, and installs its model-file loader here when a program
// calls mirage::learned::register_learned_policies(). make_policy() then hands it every name that
// is an existing file or ends in kModelFileExtension.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "mirage/core/Policy.h"

namespace mirage {

inline constexpr std::string_view kModelFileExtension = ".mirage-model";

// Loads the policy saved in a model file, its decision threshold replaced by `threshold` when
// one is given (MODEL@THRESHOLD); throws InputError with a clear message on failure.
using ModelPolicyLoader = std::unique_ptr<Policy> (*)(const std::string& path,
                                                      std::optional<double> threshold);

// Installs (or, with nullptr, removes) the loader. Thread-safe.
void set_model_policy_loader(ModelPolicyLoader loader);

// Whether the model file's knob is a risk (a model trained with the price ratio as an input,
// MODEL@RISK as quantile@RISK) rather than a threshold; installed with the loader. Throws
// InputError as the loader does.
using ModelRiskReader = bool (*)(const std::string& path);
void set_model_risk_reader(ModelRiskReader reader);

// Why `path` cannot be a model file, read from its first bytes without loading LibTorch: it is
// missing, or it is no LibTorch archive (a zip file, as `mirage train` writes). nullopt when it
// may be one; the plugin reads the rest. One line, naming the file.
std::optional<std::string> model_file_problem(const std::string& path);

// True when make_policy would treat `name_or_file` as a model file: it ends in
// kModelFileExtension or names an existing regular file.
bool names_model_file(std::string_view name_or_file);

}  // namespace mirage

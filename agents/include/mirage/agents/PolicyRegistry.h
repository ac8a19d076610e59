#pragma once
// Policies by name (baselines) or by model file (learned agents, later). The oracle is not a
// Policy: it needs the simulator's what-if forks, so the evaluation harness runs it itself.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mirage/core/Policy.h"

namespace mirage {

inline constexpr std::string_view kOracleName = "oracle";

// Names the registry knows, for help texts and error messages.
std::vector<std::string> policy_names();

// Creates the policy called `name_or_file`. Throws InputError naming the known policies when
// the name is unknown.
std::unique_ptr<Policy> make_policy(std::string_view name_or_file);

// True for names the harness handles itself (the oracle) and for names make_policy accepts.
bool is_known_policy(std::string_view name_or_file);

}  // namespace mirage

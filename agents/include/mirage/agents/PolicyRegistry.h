#pragma once
// Policies by name (baselines) or by model file (learned agents, later). The oracle is not a
// Policy: it needs the simulator's what-if forks, so the evaluation harness runs it itself.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mirage/core/Policy.h"

namespace mirage {

inline constexpr std::string_view kOracleName = "oracle";

// Names the registry knows, for help texts and error messages.
std::vector<std::string> policy_names();

// A policy's name and its risk knob: "average@2h" is `average` with a lead of 2 h (Baselines.h).
struct PolicySpec {
  std::string family;
  std::optional<Seconds> lead;
};
// Splits at the last '@' when what follows reads as a lead ("2h", "-30m", "0"); otherwise the
// whole name is the family (a model file's path may hold an '@').
PolicySpec parse_policy_spec(std::string_view name);

// The leads `mirage eval --sweep-risk` tries for a family, from least to most overlap; empty for
// a family without a knob.
std::vector<Seconds> risk_sweep(std::string_view family);

// Creates the policy called `name_or_file`. Throws InputError naming the known policies when
// the name is unknown.
std::unique_ptr<Policy> make_policy(std::string_view name_or_file);

// True for names the harness handles itself (the oracle) and for names make_policy accepts.
bool is_known_policy(std::string_view name_or_file);

}  // namespace mirage

#pragma once
// Policies by name (baselines) or by model file (learned agents, later). The oracle is not a
// Policy: it needs the simulator's what-if forks, so the evaluation harness runs it itself.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mirage/agents/WaitPredictor.h"
#include "mirage/core/Policy.h"

namespace mirage {

inline constexpr std::string_view kOracleName = "oracle";

// Names the registry knows, for help texts and error messages.
std::vector<std::string> policy_names();

// A policy's name and its risk knob: "average@2h" is `average` with a lead of 2 h (Baselines.h);
// "agent.mirage-model@0.5" is that model with a decision threshold of 0.5 (its margin's units:
// hours for dqn and moe, a logit for pg; lower submits earlier), or, for a model trained with the
// price ratio as an input (`risk_input`), that model at the risk 0.5, read as quantile's level
// (an idle hour priced 0.5 against an hour charged twice 0.5: learned/RiskInput.h);
// "quantile@0.8" is `quantile` at the level 0.8.
// A name is read once, where it comes in (a flag, the config, a campaign's record), into this
// value, which is what every function below takes.
struct PolicySpec {
  std::string name;  // as given: what reports, notes and errors call it
  std::string family;
  std::optional<Seconds> lead;      // baselines
  std::optional<double> threshold;  // model files
  std::optional<double> level;      // quantile

  PolicySpec() = default;
  // Reads `name`: splits at the last '@' when what follows reads as the family's knob: a lead
  // ("2h", "-30m", "0") for a baseline, a number for a model file or `quantile`. Otherwise the
  // whole name is the family (a model file's path may hold an '@'). Implicit, so that a name
  // written where a policy is taken (a test, a benchmark) is read there.
  PolicySpec(std::string_view name);  // NOLINT(google-explicit-constructor)
  PolicySpec(const std::string& name) : PolicySpec(std::string_view(name)) {}
  PolicySpec(const char* name) : PolicySpec(std::string_view(name)) {}
};
inline PolicySpec parse_policy_spec(std::string_view name) {
  return PolicySpec(name);
}

// The points `mirage eval --sweep-risk` tries for a family, as policy names, from least to most
// overlap (leads up, thresholds down, levels up: quantile's, and a model file's whose knob is a
// risk); empty for a family without a knob.
std::vector<std::string> risk_sweep(std::string_view family);

// What some policies need beyond their name: `quantile`, the successor's wait on the site (a
// binned distribution fitted by `mirage eval` from the trace's earlier months, or read from the
// file `mirage trace waits` or `mirage train --agent wait-model` wrote).
struct PolicyContext {
  std::shared_ptr<const WaitPredictor> waits;
};

// Creates the policy called `name_or_file`. Throws InputError naming the known policies when
// the name is unknown, and when `quantile` is asked for with no wait distribution in `context`.
std::unique_ptr<Policy> make_policy(const PolicySpec& policy, const PolicyContext& context = {});

// True for a policy that reads PolicyContext::waits (`quantile` at any level): every place that
// must hand it one, or refuse it, asks this.
bool reads_wait_distribution(const PolicySpec& policy);

// True for names the harness handles itself (the oracle) and for names make_policy accepts.
bool is_known_policy(const PolicySpec& policy);

}  // namespace mirage

// The agent kinds and learning modes by name: torch-free, so that `mirage` parses --agent and the
// hyperparameters file without loading the plugin.
#include <array>

#include "mirage/agents/learned/Training.h"

namespace mirage::learned {

std::string_view to_string(AgentKind kind) {
  switch (kind) {
    case AgentKind::kDqn: return "dqn";
    case AgentKind::kPg: return "pg";
    case AgentKind::kMoe: return "moe";
  }
  return "?";
}

std::optional<AgentKind> parse_agent_kind(std::string_view text) {
  if (text == "dqn") return AgentKind::kDqn;
  if (text == "pg") return AgentKind::kPg;
  if (text == "moe") return AgentKind::kMoe;
  return std::nullopt;
}

std::string_view to_string(Objective v) {
  return v == Objective::kCost ? "cost" : "match-average";
}
std::string_view to_string(WaitTarget v) {
  return v == WaitTarget::kBootstrap ? "bootstrap" : "rollout";
}
std::string_view to_string(PgEstimator v) {
  return v == PgEstimator::kReinforce ? "reinforce" : "exact";
}
std::string_view to_string(const std::optional<ForecastGuard>& guard) {
  return guard ? to_string(*guard) : "auto";
}

namespace {

// Each mode's values, once: parsing and the list of names both read them.
template <class Enum>
constexpr auto kModeValues = nullptr;
template <>
constexpr std::array kModeValues<Objective>{Objective::kCost, Objective::kMatchAverage};
template <>
constexpr std::array kModeValues<WaitTarget>{WaitTarget::kBootstrap, WaitTarget::kRollout};
template <>
constexpr std::array kModeValues<PgEstimator>{PgEstimator::kReinforce, PgEstimator::kExact};

}  // namespace

template <class Enum>
std::optional<Enum> parse_mode(std::string_view text) {
  for (const Enum v : kModeValues<Enum>)
    if (to_string(v) == text) return v;
  return std::nullopt;
}

template <class Enum>
std::vector<std::string_view> mode_names() {
  std::vector<std::string_view> names;
  for (const Enum v : kModeValues<Enum>) names.push_back(to_string(v));
  return names;
}

template std::optional<Objective> parse_mode(std::string_view);
template std::optional<WaitTarget> parse_mode(std::string_view);
template std::optional<PgEstimator> parse_mode(std::string_view);
template std::vector<std::string_view> mode_names<Objective>();
template std::vector<std::string_view> mode_names<WaitTarget>();
template std::vector<std::string_view> mode_names<PgEstimator>();

}  // namespace mirage::learned

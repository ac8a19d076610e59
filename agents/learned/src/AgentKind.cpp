// The agent kinds and learning modes by name: torch-free, so that `mirage` parses --agent and the
// hyperparameters file without loading the plugin.
#include <initializer_list>

#include "mirage/learned/Training.h"

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
std::string_view to_string(OverlapCap v) {
  return v == OverlapCap::kPooled ? "pooled" : "blocks";
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
template <class Enum>
std::optional<Enum> parse_by_name(std::string_view text, std::initializer_list<Enum> values) {
  for (const Enum v : values)
    if (to_string(v) == text) return v;
  return std::nullopt;
}
}  // namespace

template <>
std::optional<Objective> parse_mode(std::string_view text) {
  return parse_by_name(text, {Objective::kCost, Objective::kMatchAverage});
}
template <>
std::optional<OverlapCap> parse_mode(std::string_view text) {
  return parse_by_name(text, {OverlapCap::kPooled, OverlapCap::kBlocks});
}
template <>
std::optional<WaitTarget> parse_mode(std::string_view text) {
  return parse_by_name(text, {WaitTarget::kBootstrap, WaitTarget::kRollout});
}
template <>
std::optional<PgEstimator> parse_mode(std::string_view text) {
  return parse_by_name(text, {PgEstimator::kReinforce, PgEstimator::kExact});
}

}  // namespace mirage::learned

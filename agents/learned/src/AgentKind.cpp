// The agent kinds and the forecast guard by name: torch-free, so that `mirage` parses --agent and
// the hyperparameters file without loading the plugin.
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

std::string_view to_string(const std::optional<ForecastGuard>& guard) {
  return guard ? to_string(*guard) : "auto";
}

}  // namespace mirage::learned

// The agent kinds by name: torch-free, so that `mirage` parses --agent without loading the plugin.
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

}  // namespace mirage::learned

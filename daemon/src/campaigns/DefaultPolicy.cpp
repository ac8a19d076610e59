#include "mirage/daemon/campaigns/DefaultPolicy.h"

#include <spdlog/fmt/fmt.h>

#include "DefaultPolicyVerdict.h"

namespace mirage::daemon {

std::string compiled_default_policy() {
  return verdict::kPolicy;
}

std::string default_policy_note(const std::string& default_policy) {
  if (default_policy != verdict::kPolicy)
    return fmt::format("policy {}: the daemon's default ([policy] default in its config)",
                       default_policy);
  // Issue 58's rule: a learned agent is the default where it earned at least half of the chains.
  const bool learned =
      verdict::kChains > 0 && 2 * verdict::kLearnedEarnedChains >= verdict::kChains;
  return fmt::format(
      "policy {} (the default): learned agents earned their place (least cost, or on the "
      "frontier and cheaper than the baseline chosen the month before) on {} of {} chains in "
      "real waits ({} judged there, measured {}), so the default is {}: see "
      "docs/learned-agents.md",
      default_policy, verdict::kLearnedEarnedChains, verdict::kChains, verdict::kJudgedInRealWaits,
      verdict::kMeasured, learned ? "a learned agent" : "the best baseline");
}

}  // namespace mirage::daemon

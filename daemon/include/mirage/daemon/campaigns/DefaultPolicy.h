#pragma once
// The policy of a campaign that names none: what the learned agents' verdict chose
// (bench/learned_verdict.sh writes daemon/config/default-policy.toml from its figures; the build
// compiles it in), and the one line `campaign add` says about the choice.
#include <string>

namespace mirage::daemon {

// The verdict's policy: a learned agent where it earned at least half of the chains in the world
// of real waits, else the best baseline.
std::string compiled_default_policy();

// Why a campaign without a policy got `default_policy` (the daemon's [policy] default): the
// verdict's figures when it is the compiled one, else the site's choice.
std::string default_policy_note(const std::string& default_policy);

}  // namespace mirage::daemon

#pragma once
// What the `quantile` policy reads of the successor's wait (agents/WaitPredictor.h), for the chain
// a command evaluates: read from the file `mirage trace waits` or `mirage train --agent
// wait-model` wrote, or a binned distribution fitted on the trace's
// kFitWindow before the evaluation window, never on the months it is judged on.
#include <memory>
#include <string>

#include "mirage/agents/Episode.h"
#include "mirage/agents/WaitDistribution.h"

namespace mirage::cli {

inline constexpr Seconds kFitWindow = 90 * kDay;

// Says on stderr, in one line, where it came from. Throws InputError when the file is bad or the
// months before `before` hold too few jobs to fit.
std::shared_ptr<const WaitPredictor> wait_distribution_for(const Trace& trace,
                                                           const ClusterSpec& cluster,
                                                           const ChainSpec& chain, Seconds before,
                                                           const std::string& file);

}  // namespace mirage::cli

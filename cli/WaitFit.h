#pragma once
// The wait distribution the `quantile` policy reads (agents/WaitDistribution.h), for the chain a
// command evaluates: read from the file `mirage trace waits` wrote, or fitted on the trace's
// kFitWindow before the evaluation window, never on the months it is judged on.
#include <memory>
#include <string>

#include "mirage/agents/Episode.h"
#include "mirage/agents/WaitDistribution.h"

namespace mirage::cli {

inline constexpr Seconds kFitWindow = 90 * kDay;

// Says on stderr, in one line, where it came from. Throws InputError when the file is bad or the
// months before `before` hold too few jobs to fit.
std::shared_ptr<const WaitDistribution> wait_distribution_for(const Trace& trace,
                                                              const ClusterSpec& cluster,
                                                              const ChainSpec& chain,
                                                              Seconds before,
                                                              const std::string& file);

// "24 bins ... fitted on 412 real jobs of 8+ nodes with a limit of 24h or more, submitted
// 2022-11-01 .. 2023-02-01": for messages.
std::string describe(const WaitDistribution& d);

}  // namespace mirage::cli

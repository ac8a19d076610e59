#pragma once
// Work the log does not show, replayed as jobs. A calibration's capacity steps say how many nodes
// such work held over time (other partitions on the same nodes, reservations, drained nodes);
// the replay runs it as background jobs that queue and are planned like the others, at the
// priority their age and size give them, not as nodes that vanish at each step. So a job with a
// reservation holds hidden work back as it holds any lower-priority job, and the backfill plan
// sees when hidden work ends: a 48-hour job can be planned behind it, as slurmctld plans behind
// another partition's jobs on shared nodes (docs/simulator.md).
#include <vector>

#include "mirage/core/ClusterSpec.h"
#include "mirage/simulator/Simulator.h"

namespace mirage {

// Hidden work still held after the last step is held this long: to the end of any replay.
inline constexpr Seconds kHiddenWorkOpenEnded = 100 * 365 * kDay;

// The background jobs whose nodes add up to each step's unavailable nodes, in submit order: each
// rise is a job of the nodes it adds; each fall ends the latest-begun of them first, splitting
// one where it takes part of its nodes. Each job's time limit is its run, as known as its end.
std::vector<SimJobSpec> hidden_work(const std::vector<CapacityStep>& steps);

}  // namespace mirage

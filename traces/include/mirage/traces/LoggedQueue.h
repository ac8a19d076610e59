#pragma once
// The queue as a log says it was: at a moment, the jobs submitted and not yet started (pending)
// and those started and not yet ended (running), with the recent starts' waits and the recent
// ends' runtimes, as the simulator and the daemon put them in a QueueSnapshot. What a policy would
// have seen had it looked at the real cluster then, so that a predictor fitted on the log reads
// the same vocabulary as the policies it serves.
#include <cstddef>
#include <functional>
#include <vector>

#include "mirage/core/ClusterSpec.h"
#include "mirage/core/QueueSnapshot.h"
#include "mirage/traces/Trace.h"

namespace mirage {

// Calls `visit(i, snapshot)` with the logged queue at each `times[i]` (ascending), on a machine of
// `total_nodes` with `gpus_per_node` and `priority` (the weights a forecast ranks the pending jobs
// by). A job counts from its submission (strictly before the moment, so a job submitted at that
// very moment is not in its own queue); jobs the log never saw start are left out, since it does
// not say when
// // they left the queue. `jobs` sorted by submit time, as Trace keeps them. One pass over the log.
void for_each_logged_queue(const std::vector<Job>& jobs, const std::vector<Seconds>& times,
                           int total_nodes, int gpus_per_node, const PriorityParameters& priority,
                           const std::function<void(std::size_t, const QueueSnapshot&)>& visit);

}  // namespace mirage

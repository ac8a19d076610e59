#pragma once
// What the queue says, at a job's submission, of the job's own size class (1 node, 2-7, 8+: the
// classes the wait check reports by): how long its running jobs waited, how long its pending jobs
// have waited so far (a lower bound on their waits), and how many of each. The encoder's snapshot
// features pool every size, so a month in which the large jobs wait longer and longer while the
// small ones do not hardly moves them; these see it at the moment of submission. Read from the
// QueueSnapshot alone, which the log (LoggedQueue) and the daemon (slurmctld's jobs) both fill:
// one vocabulary, fitted and live.
#include <array>

#include "mirage/core/QueueSnapshot.h"

namespace mirage {

// In order: the running jobs of the class, their waits' median and 90th percentile
// (FeatureEncoder::time_feature, as the other wait inputs) and their count as a share of the
// machine's nodes; then the pending jobs of the class, likewise with the time waited so far. An
// empty side reads as zeros.
inline constexpr int kClassQueueInputs = 6;
std::array<float, kClassQueueInputs> class_queue_inputs(const QueueSnapshot& queue, int job_nodes);

}  // namespace mirage

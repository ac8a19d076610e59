#pragma once
// When would a job submitted now start? A plan of the queue as Slurm's backfill plans it, from
// what a QueueSnapshot says and nothing else, so that live and simulated decisions see the same:
//   - running jobs hold their resources until their time limits (true runtimes are unknown);
//   - pending jobs are placed oldest first (the age factor; the snapshot carries no priority),
//     each at the earliest time it fits for its whole limit (conservative backfilling), at most
//     kPlannedJobs of them (bf_max_job_test), over at most kHorizon;
//   - then the new job, behind all of them.
// Limits overstate runtimes and the order ignores other priority factors, so the figure is a
// feature for the policies to weigh, not a promise.
#include "mirage/core/Observation.h"
#include "mirage/core/QueueSnapshot.h"

namespace mirage {

struct PlannedStart {
  Seconds wait = 0;          // planned start - snapshot time (kHorizon when it does not fit)
  Seconds wait_running = 0;  // the same with the pending jobs left out: when the running jobs
                             // alone free enough (a lower bound; the gap to `wait` is the queue)
};

class QueueForecast {
 public:
  static constexpr int kPlannedJobs = 200;
  static constexpr Seconds kHorizon = 14 * kDay;

  // A job of `nodes` nodes with `gpus_per_node` GPUs each (0: whole nodes) and `time_limit`.
  static PlannedStart plan(const QueueSnapshot& queue, int nodes, int gpus_per_node,
                           Seconds time_limit);
  // The campaign's successor, in the queue the observation saw.
  static PlannedStart plan_successor(const Observation& obs);
};

}  // namespace mirage

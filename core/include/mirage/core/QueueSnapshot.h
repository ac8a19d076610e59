#pragma once
// The state of one partition at one instant: what a policy may know about the queue. Produced
// identically by the simulator and by the daemon's Slurm poller.
#include <algorithm>
#include <vector>

#include "mirage/core/ClusterSpec.h"
#include "mirage/core/Time.h"

namespace mirage {

struct PendingJobView {
  Seconds time_limit = 0;
  int nodes = 0;
  int gpus_per_node = 0;
  Seconds waited = 0;  // time in the queue so far
};

struct RunningJobView {
  Seconds time_limit = 0;
  int nodes = 0;
  int gpus_per_node = 0;
  Seconds waited = 0;  // how long it waited before it started
  Seconds run = 0;     // time run so far
};

struct QueueSnapshot {
  Seconds time = 0;  // Unix seconds of the observation
  int total_nodes = 0;
  int gpus_per_node = 0;
  std::vector<PendingJobView> pending;
  std::vector<RunningJobView> running;
  // Mean queue wait of the most recently started jobs (up to kRecentStarts of them), as the
  // `average` baseline uses; recent_starts says how many were seen.
  static constexpr int kRecentStarts = 100;
  double recent_mean_wait_s = 0;
  int recent_starts = 0;
  // How the most recently ended jobs (up to kRecentEnds) ran: runtime / time limit, capped at 1,
  // in order of their ends. Most jobs end long before their limits (on LS6 half of them within
  // 5% of it), so a forecast that plans with limits overstates waits.
  static constexpr int kRecentEnds = 100;
  std::vector<float> recent_runtime_shares;
  // One entry of recent_runtime_shares, as the simulator and the daemon both note it (a job
  // without a limit counts as having run to it).
  static float runtime_share(Seconds runtime, Seconds limit) {
    const double share =
        limit > 0 ? static_cast<double>(runtime) / static_cast<double>(limit) : 1.0;
    return static_cast<float>(std::clamp(share, 0.0, 1.0));
  }
  // The scheduler's priority weights (slurm.conf's multifactor age and job-size factors), so
  // that a forecast ranks the pending jobs as the scheduler does. All zero: by age alone.
  PriorityParameters priority = PriorityParameters::unweighted();
};

}  // namespace mirage

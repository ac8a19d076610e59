#pragma once
// When will a pending job start? mirage's forecast (QueueForecast) of one job already in the
// queue, from one job dump and the partition's settings, the way the daemon plans a successor:
// the other pending jobs ranked by the priorities slurmctld reports, the job at its own reported
// priority and accrued age. Beside it, the same plan with every priority recomputed from the
// age and size weights alone (what the forecast did before it read slurmctld's priorities), so
// that the two can be judged against the start the job really gets (`mirage forecast`).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mirage/core/QueueSnapshot.h"
#include "mirage/daemon/slurm/SlurmClient.h"

namespace mirage::daemon {

struct JobForecast {
  JobId job = 0;
  Seconds now = 0;  // the dump's time
  PendingState state = PendingState::kEligible;
  std::string reason;  // slurmctld's pending reason
  double priority = kUnknownPriority;
  Seconds accrued = 0;
  // Held by its user's limits: it starts no earlier than the user's first running job ends.
  bool held_by_limit = false;
  Seconds reported_start = kUnknownTime;    // by the reported priorities
  Seconds recomputed_start = kUnknownTime;  // by the weights' priorities (age and size)
};

// Nothing when `job` is not pending in `partition` (or not in `jobs`). A job that cannot start as
// it is (held, waiting on a dependency or a begin time, or unable to run as asked) gets no start.
std::optional<JobForecast> forecast_job(const std::vector<SlurmJob>& jobs,
                                        const PartitionInfo& partition, JobId job, Seconds now,
                                        std::uint32_t owner);

}  // namespace mirage::daemon

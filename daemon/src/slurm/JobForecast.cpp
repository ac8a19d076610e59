#include "mirage/daemon/slurm/JobForecast.h"

#include <algorithm>

#include "mirage/core/QueueForecast.h"
#include "mirage/daemon/slurm/SnapshotBuilder.h"

namespace mirage::daemon {

std::optional<JobForecast> forecast_job(const std::vector<SlurmJob>& jobs,
                                        const PartitionInfo& partition, JobId id, Seconds now,
                                        std::uint32_t owner) {
  const auto it =
      std::find_if(jobs.begin(), jobs.end(), [&](const SlurmJob& j) { return j.id == id; });
  if (it == jobs.end() || it->state != SlurmJobState::kPending) return std::nullopt;
  SnapshotBuilder builder(partition.name);
  if (!builder.in_partition(*it)) return std::nullopt;
  builder.use_partition(partition);
  builder.set_owner(owner);
  // The job itself is the one planned: the queue is everyone else.
  std::vector<SlurmJob> others;
  others.reserve(jobs.size());
  for (const SlurmJob& j : jobs)
    if (j.id != id) others.push_back(j);
  QueueSnapshot q = builder.build(others, now);
  const PendingJobView self = builder.build({*it}, now).pending.at(0);

  JobForecast f;
  f.job = id;
  f.now = now;
  f.state = self.state;
  f.reason = it->reason;
  f.priority = self.priority;
  f.accrued = self.accrued;
  ForecastJob job{it->nodes, it->gpus_per_node, it->time_limit, self.priority, 0, self.accrued};
  if (self.state == PendingState::kLimit) {
    // It waits for its owner's work: the first of the owner's running jobs to end frees room
    // (a limit that needs more than that shows once it ends).
    f.held_by_limit = true;
    Seconds first = QueueForecast::kHorizon;
    for (const RunningJobView& r : q.running)
      if (r.own) first = std::min(first, std::max<Seconds>(0, r.time_limit - r.run));
    job.held_for = first;
  } else if (self.state != PendingState::kEligible) {
    return f;
  }
  const auto start = [&](const QueueSnapshot& queue, const ForecastJob& j) {
    const Seconds wait = QueueForecast::plan(queue, j).wait;
    return wait < QueueForecast::kHorizon ? now + wait : kUnknownTime;
  };
  f.reported_start = start(q, job);
  // Before slurmctld's priorities were read: every job ranked by age and size alone.
  for (PendingJobView& p : q.pending) p.priority = kUnknownPriority;
  job.priority = kUnknownPriority;
  f.recomputed_start = start(q, job);
  return f;
}

}  // namespace mirage::daemon

#include "mirage/core/QueueForecast.h"

#include <algorithm>
#include <cmath>

#include "mirage/core/AvailabilityProfile.h"

namespace mirage {
namespace {

// Resources are counted in GPUs on GPU machines (a job without a GPU count takes whole nodes),
// in nodes otherwise; one interchangeable pool, as the snapshot does not say which nodes are busy.
struct Units {
  int machine_gpus_per_node = 0;
  int operator()(int nodes, int gpus_per_node) const {
    if (machine_gpus_per_node <= 0) return nodes;
    return nodes * (gpus_per_node > 0 ? gpus_per_node : machine_gpus_per_node);
  }
};

Seconds wait_in(const AvailabilityProfile& profile, int units, Seconds limit) {
  const auto p = profile.earliest_start({1, units}, limit, QueueForecast::kHorizon);
  return p ? p->start : QueueForecast::kHorizon;
}

// The earliest start at or after `delay`, less `delay`: the profile's units are taken away
// before it (free counts may go negative there, which only means "does not fit").
Seconds wait_after(AvailabilityProfile profile, int capacity, int units, Seconds limit,
                   Seconds delay) {
  if (delay <= 0) return wait_in(profile, units, limit);
  if (delay >= QueueForecast::kHorizon) return QueueForecast::kHorizon;
  profile.occupy_until(0, capacity, delay);
  return wait_in(profile, units, limit) - delay;
}

}  // namespace

PlannedStart QueueForecast::plan(const QueueSnapshot& q, int nodes, int gpus_per_node,
                                 Seconds time_limit, double runtime_share, Seconds delay) {
  const Units units{q.gpus_per_node};
  const int capacity = units(std::max(1, q.total_nodes), 0);
  const int wanted = units(nodes, gpus_per_node);
  if (wanted > capacity) return {kHorizon, kHorizon, kHorizon};
  const Seconds limit = std::max<Seconds>(kMinute, time_limit);
  const double share = std::clamp(runtime_share, 0.0, 1.0);
  const auto expected = [share](Seconds left) {
    return static_cast<Seconds>(
        std::llround(share * static_cast<double>(std::max<Seconds>(0, left))));
  };

  // Times are relative to the snapshot: the profile starts at 0.
  AvailabilityProfile profile(0, 1, capacity);
  for (const RunningJobView& r : q.running)
    profile.occupy_until(0, units(r.nodes, r.gpus_per_node), expected(r.time_limit - r.run));
  PlannedStart out;
  out.wait_running = wait_in(profile, wanted, limit);

  // Slurm's multifactor priority from what the snapshot says, sizes in the pool's units.
  const auto priority = [&](int u, Seconds waited) {
    return q.priority.score(waited, static_cast<double>(u) / static_cast<double>(capacity));
  };
  struct Ranked {
    double priority;
    const PendingJobView* job;
  };
  const double successor = priority(wanted, 0);
  std::vector<Ranked> ahead;
  ahead.reserve(q.pending.size());
  for (const PendingJobView& p : q.pending) {
    const double rank = priority(units(p.nodes, p.gpus_per_node), p.waited);
    // Equal priority: the job already queued goes first (earlier submission).
    if (rank >= successor) ahead.push_back({rank, &p});
  }
  const auto planned = std::min<std::size_t>(ahead.size(), kPlannedJobs);
  // Highest priority first; ties oldest first, then larger first, for a deterministic order.
  std::partial_sort(ahead.begin(), ahead.begin() + static_cast<std::ptrdiff_t>(planned),
                    ahead.end(), [](const Ranked& a, const Ranked& b) {
                      if (a.priority != b.priority) return a.priority > b.priority;
                      return a.job->waited != b.job->waited ? a.job->waited > b.job->waited
                                                            : a.job->nodes > b.job->nodes;
                    });
  for (std::size_t i = 0; i < planned; ++i) {
    const PendingJobView& p = *ahead[i].job;
    const int u = units(p.nodes, p.gpus_per_node);
    if (u > capacity) continue;  // never starts; blocks nobody
    const Seconds d = std::max<Seconds>(kMinute, expected(p.time_limit));
    if (const auto at = profile.earliest_start({1, u}, d, kHorizon)) profile.reserve(*at, u, d);
  }
  out.wait = wait_in(profile, wanted, limit);
  out.wait_after_delay = wait_after(profile, capacity, wanted, limit, delay);
  return out;
}

PlannedStart QueueForecast::plan_successor(const Observation& obs, double runtime_share) {
  const CampaignView& c = obs.campaign;
  return plan(obs.latest, c.successor_nodes, c.successor_gpus_per_node, c.successor_limit,
              runtime_share, c.predecessor_remaining());
}

}  // namespace mirage

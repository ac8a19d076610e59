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

// How long a job of `limit` that has run `run` goes on running, as a RuntimeGuess says.
class RuntimeModel {
 public:
  RuntimeModel(RuntimeGuess guess, const std::vector<float>& recent)
      : share_(std::clamp(guess.share, 0.0, 1.0)) {
    if (!guess.recent || recent.size() < static_cast<std::size_t>(RuntimeGuess::kMinRecentEnds))
      return;
    shares_.assign(recent.begin(), recent.end());
    for (float& s : shares_) s = std::clamp(s, 0.f, 1.f);
    std::sort(shares_.begin(), shares_.end());
    tail_sum_.assign(shares_.size() + 1, 0.0);
    for (std::size_t k = shares_.size(); k-- > 0;) tail_sum_[k] = tail_sum_[k + 1] + shares_[k];
  }

  Seconds left(Seconds limit, Seconds run) const {
    const Seconds to_limit = std::max<Seconds>(0, limit - run);
    if (shares_.empty())
      return static_cast<Seconds>(std::llround(share_ * static_cast<double>(to_limit)));
    if (limit <= 0) return 0;
    // The mean share of the ended jobs that outlived this one's, less what it has run; one that
    // outlived them all runs to its limit.
    const double done = static_cast<double>(run) / static_cast<double>(limit);
    const auto k = static_cast<std::size_t>(
        std::upper_bound(shares_.begin(), shares_.end(), static_cast<float>(done)) -
        shares_.begin());
    if (k == shares_.size()) return to_limit;
    const double mean = tail_sum_[k] / static_cast<double>(shares_.size() - k);
    return std::min(to_limit, static_cast<Seconds>(std::llround(std::max(0.0, mean - done) *
                                                                static_cast<double>(limit))));
  }

 private:
  double share_;
  std::vector<float> shares_;     // ascending
  std::vector<double> tail_sum_;  // tail_sum_[k]: the sum of shares_[k..]
};

}  // namespace

PlannedStart QueueForecast::plan(const QueueSnapshot& q, int nodes, int gpus_per_node,
                                 Seconds time_limit, RuntimeGuess runtimes, Seconds delay) {
  const Units units{q.gpus_per_node};
  const int capacity = units(std::max(1, q.total_nodes), 0);
  const int wanted = units(nodes, gpus_per_node);
  if (wanted > capacity) return {kHorizon, kHorizon, kHorizon};
  const Seconds limit = std::max<Seconds>(kMinute, time_limit);
  const RuntimeModel runtime(runtimes, q.recent_runtime_shares);

  // Times are relative to the snapshot: the profile starts at 0.
  AvailabilityProfile profile(0, 1, capacity);
  for (const RunningJobView& r : q.running)
    profile.occupy_until(0, units(r.nodes, r.gpus_per_node), runtime.left(r.time_limit, r.run));
  PlannedStart out;
  out.wait_running = wait_in(profile, wanted, limit);

  // Slurm's multifactor priority from what the snapshot says, sizes in the pool's units.
  const auto priority = [&](int u, Seconds waited) {
    return q.priority.score(waited, static_cast<double>(u) / static_cast<double>(capacity));
  };
  struct Ranked {
    double priority;
    int units;
    const PendingJobView* job;
  };
  std::vector<Ranked> ranked;
  ranked.reserve(q.pending.size());
  for (const PendingJobView& p : q.pending) {
    const int u = units(p.nodes, p.gpus_per_node);
    ranked.push_back({priority(u, p.waited), u, &p});
  }
  const auto planned = std::min<std::size_t>(ranked.size(), kPlannedJobs);
  // Highest priority first; ties oldest first, then larger first, for a deterministic order.
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(planned),
                    ranked.end(), [](const Ranked& a, const Ranked& b) {
                      if (a.priority != b.priority) return a.priority > b.priority;
                      return a.job->waited != b.job->waited ? a.job->waited > b.job->waited
                                                            : a.job->nodes > b.job->nodes;
                    });
  ranked.resize(planned);
  const auto never_starts = [&](const Ranked& r) { return r.units > capacity; };  // blocks nobody
  const auto runs_for = [&](const PendingJobView& p) {
    return std::max<Seconds>(kMinute, runtime.left(p.time_limit, 0));
  };

  // Submitted now: the jobs that outrank it (equal priority: the one already queued goes first)
  // are placed ahead of it; those it outranks are planned after it and cannot delay it.
  const double successor = priority(wanted, 0);
  AvailabilityProfile now = profile;
  bool all_ahead = true;  // every planned job outranks it now
  for (const Ranked& r : ranked) {
    if (never_starts(r)) continue;
    if (r.priority < successor) {
      all_ahead = false;
      continue;
    }
    const Seconds d = runs_for(*r.job);
    if (const auto at = now.earliest_start({1, r.units}, d, kHorizon)) now.reserve(*at, r.units, d);
  }
  out.wait = wait_in(now, wanted, limit);

  // Submitted `delay` from now: until then it is not in the queue, so every pending job that
  // fits before then starts, the ones it will outrank included (small jobs take the nodes that
  // free up meanwhile); at `delay` the jobs that have aged past its priority by then are ahead of
  // it, the others behind. Without the first, a window that small jobs close looked open.
  if (delay <= 0) {
    out.wait_after_delay = out.wait;
  } else if (delay >= kHorizon) {
    out.wait_after_delay = kHorizon;
  } else {
    // Age only raises a priority, so a job ahead now is ahead then: where every one is ahead
    // now, the later plan places the same jobs in the same order as `now`.
    AvailabilityProfile later = all_ahead ? now : profile;
    if (!all_ahead)
      for (const Ranked& r : ranked) {
        if (never_starts(r)) continue;
        const Seconds d = runs_for(*r.job);
        const auto at = later.earliest_start({1, r.units}, d, kHorizon);
        if (!at) continue;
        if (at->start < delay || priority(r.units, r.job->waited + delay) >= successor)
          later.reserve(*at, r.units, d);
      }
    // Free counts before `delay` may go negative, which only means "does not fit".
    later.occupy_until(0, capacity, delay);
    out.wait_after_delay = wait_in(later, wanted, limit) - delay;
  }
  return out;
}

PlannedStart QueueForecast::plan_successor(const Observation& obs, RuntimeGuess runtimes) {
  const CampaignView& c = obs.campaign;
  return plan(obs.latest, c.successor_nodes, c.successor_gpus_per_node, c.successor_limit, runtimes,
              c.predecessor_remaining());
}

}  // namespace mirage

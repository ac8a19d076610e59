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

PlannedStart QueueForecast::plan(const QueueSnapshot& q, const ForecastJob& job,
                                 RuntimeGuess runtimes, Seconds delay) {
  const Units units{q.gpus_per_node};
  const int total = std::max(1, q.total_nodes);
  const int capacity = units(total, 0);
  const int wanted = units(job.nodes, job.gpus_per_node);
  if (wanted > capacity) return {kHorizon, kHorizon, kHorizon, job.held_for > 0};
  // Down, drained and reserved nodes are out of the plan: the rest is what the queue shares.
  const int available = units(std::clamp(total - q.unavailable_nodes, 0, total), 0);
  const Seconds limit = std::max<Seconds>(kMinute, job.time_limit);
  const RuntimeModel runtime(runtimes, q.recent_runtime_shares);

  // Times are relative to the snapshot: the profile starts at 0.
  AvailabilityProfile profile(0, 1, available);
  std::vector<AvailabilityProfile::Holding> held;
  held.reserve(q.running.size());
  for (const RunningJobView& r : q.running)
    held.push_back({0, units(r.nodes, r.gpus_per_node), runtime.left(r.time_limit, r.run)});
  profile.occupy_all(held);
  // Reservations to come take their nodes over their windows: no job is planned across them.
  for (const NodeReservation& v : q.reservations) {
    const Seconds from = std::max<Seconds>(0, v.start - q.time), to = v.end - q.time;
    if (to > from && from < kHorizon)
      profile.reserve({from, {0}}, units(std::min(v.nodes, total), 0), to - from);
  }
  PlannedStart out;
  out.held_by_limit = job.held_for > 0;
  if (job.held_for <= 0) {
    out.wait_running = wait_in(profile, wanted, limit);
  } else {
    AvailabilityProfile held = profile;
    held.occupy_until(0, available, job.held_for);
    out.wait_running = wait_in(held, wanted, limit);
  }

  // The priority now of a job that reports none: the snapshot's weights, sizes in the pool's
  // units, age since it became eligible.
  const auto size_share = [&](int u) {
    return static_cast<double>(u) / static_cast<double>(capacity);
  };
  struct Ranked {
    double priority;  // now
    Seconds accrued;  // age so far: what it adds from now on depends on it (PriorityMaxAge)
    int units;
    const PendingJobView* job;
  };
  std::vector<Ranked> ranked;
  ranked.reserve(q.pending.size());
  for (const PendingJobView& p : q.pending) {
    if (p.state != PendingState::kEligible) continue;  // set aside: it cannot start now
    const int u = units(p.nodes, p.gpus_per_node);
    if (u > available) continue;  // cannot start on what is up: blocks nobody
    const double now =
        p.priority != kUnknownPriority ? p.priority : q.priority.score(p.accrued, size_share(u));
    ranked.push_back({now, p.accrued, u, &p});
  }
  // Highest priority first; ties oldest first, then larger first, for a deterministic order.
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    return a.job->waited != b.job->waited ? a.job->waited > b.job->waited
                                          : a.job->nodes > b.job->nodes;
  });
  // Its priority `t` from now: the age factor goes on growing until PriorityMaxAge.
  const auto priority_in = [&](const Ranked& r, Seconds t) {
    return r.priority + q.priority.age_part(r.accrued + t) - q.priority.age_part(r.accrued);
  };
  const auto runs_for = [&](const PendingJobView& p) {
    return std::max<Seconds>(kMinute, runtime.left(p.time_limit, 0));
  };
  // The new job on submission, and `t` later while its owner's limits hold it (it accrues age).
  const double submitted = job.priority != kUnknownPriority
                               ? job.priority
                               : q.priority.score(job.accrued, size_share(wanted));
  const auto held_priority = [&](Seconds t) {
    return submitted + q.priority.age_part(job.accrued + t) - q.priority.age_part(job.accrued);
  };

  // Competing from `at` on with priority `then`: every pending job that fits before `at` starts
  // (the ones it will outrank included: small jobs take the nodes that free up meanwhile); at
  // `at` the jobs that have aged past it are ahead of it, the others behind. Returns its start,
  // from the snapshot.
  const auto start_entering = [&](Seconds at, double then) {
    AvailabilityProfile later = profile;
    for (const Ranked& r : ranked) {
      const Seconds d = runs_for(*r.job);
      const auto start = later.earliest_start({1, r.units}, d, kHorizon);
      if (!start) continue;
      if (start->start < at || priority_in(r, at) >= then) later.reserve(*start, r.units, d);
    }
    // Free counts before `at` may go negative, which only means "does not fit".
    later.occupy_until(0, available, at);
    return wait_in(later, wanted, limit);
  };

  // Submitted now and free to start: the jobs that outrank it (equal priority: the one already
  // queued goes first) are placed ahead of it; those it outranks cannot delay it.
  AvailabilityProfile now = profile;
  bool all_ahead = true;  // every planned job outranks it now
  if (job.held_for <= 0) {
    for (const Ranked& r : ranked) {
      if (r.priority < submitted) {
        all_ahead = false;
        continue;
      }
      const Seconds d = runs_for(*r.job);
      if (const auto at = now.earliest_start({1, r.units}, d, kHorizon))
        now.reserve(*at, r.units, d);
    }
    out.wait = wait_in(now, wanted, limit);
  } else {
    out.wait = std::min(kHorizon, start_entering(job.held_for, held_priority(job.held_for)));
  }

  // Submitted `delay` from now: until then it is not in the queue. Without the jobs that start
  // meanwhile, a window that small jobs close looked open.
  if (delay <= 0) {
    out.wait_after_delay = out.wait;
  } else if (delay >= kHorizon) {
    out.wait_after_delay = kHorizon;
  } else if (job.held_for <= 0 && all_ahead) {
    // Age only raises a priority, so a job ahead now is ahead then: the later plan places the
    // same jobs in the same order as `now`.
    AvailabilityProfile later = now;
    later.occupy_until(0, available, delay);
    out.wait_after_delay = wait_in(later, wanted, limit) - delay;
  } else {
    const Seconds enters = std::max(delay, job.held_for);
    out.wait_after_delay = start_entering(enters, held_priority(enters - delay)) - delay;
  }
  return out;
}

ForecastJob QueueForecast::successor(const Observation& obs) {
  const CampaignView& c = obs.campaign;
  const QueueSnapshot& q = obs.latest;
  ForecastJob job{c.successor_nodes, c.successor_gpus_per_node, c.successor_limit};
  // Same user, account, QOS and partition as the running predecessor: its priority less its age
  // and size parts is what the successor starts from (its fair share as it stands now).
  if (c.predecessor_running && c.predecessor_priority != kUnknownPriority) {
    const Units units{q.gpus_per_node};
    const double capacity = units(std::max(1, q.total_nodes), 0);
    const auto size_part = [&](int nodes, int gpus_per_node) {
      return q.priority.size_part(units(nodes, gpus_per_node) / capacity);
    };
    job.priority = c.predecessor_priority - q.priority.age_part(c.predecessor_waited) -
                   size_part(c.predecessor_nodes, c.predecessor_gpus_per_node) +
                   q.priority.age_part(0) + size_part(job.nodes, job.gpus_per_node);
  }
  // The user's limits: submitted now, it pends until enough of the user's running work (the
  // predecessor's included) has ended to leave room for it.
  UserLimits l = q.user_limits;
  for (const auto& [qos, limits] : q.user_limits_by_qos)
    if (!c.qos.empty() && qos == c.qos) l = limits;
  if (l.max_running_jobs <= 0 && l.max_running_nodes <= 0) return job;
  std::vector<std::pair<Seconds, int>> own;  // end (to its limit), nodes
  for (const RunningJobView& r : q.running)
    if (r.own) own.push_back({std::max<Seconds>(0, r.time_limit - r.run), r.nodes});
  // A source that does not mark the user's jobs: the predecessor is the user's work.
  if (own.empty() && c.predecessor_running)
    own.push_back({std::max<Seconds>(0, c.predecessor_remaining()), c.predecessor_nodes});
  std::sort(own.begin(), own.end());
  int jobs = static_cast<int>(own.size()), nodes = 0;
  for (const auto& o : own) nodes += o.second;
  const auto fits = [&] {
    return (l.max_running_jobs <= 0 || jobs + 1 <= l.max_running_jobs) &&
           (l.max_running_nodes <= 0 || nodes + job.nodes <= l.max_running_nodes);
  };
  for (const auto& [end, n] : own) {
    if (fits()) break;
    job.held_for = end;
    --jobs;
    nodes -= n;
  }
  if (!fits()) job.held_for = kHorizon;  // over the limit on its own: it never starts
  return job;
}

PlannedStart QueueForecast::plan_successor(const Observation& obs, RuntimeGuess runtimes) {
  return plan(obs.latest, successor(obs), runtimes, obs.campaign.predecessor_remaining());
}

}  // namespace mirage

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "SimulatorOrder.h"
#include "mirage/core/AvailabilityProfile.h"
#include "mirage/core/QueueForecast.h"
#include "mirage/simulator/HiddenWork.h"
#include "mirage/simulator/Simulator.h"

namespace mirage {

using simulator_order::LaterEnd;

PendingJobView Simulator::pending_view(SimJobIndex j, PendingState state,
                                       Seconds accruing_since) const {
  const SimJobSpec& s = job(j);
  PendingJobView p;
  p.time_limit = s.time_limit;
  p.nodes = s.nodes;
  p.gpus_per_node = s.gpus_per_node;
  p.waited = now_ - state_[j].submitted;
  p.accrued = now_ - accruing_since;
  p.priority = priority_of(s, accruing_since);
  // An eligible job its user's limits hold back waits for that user's work, not for room; one
  // whose limit would run across a weekly boundary waits for the boundary to pass, as slurmctld
  // reports a job a recurring reservation holds (ReqNodeNotAvail, Reserved for maintenance); in a
  // down window every job waits for the partition to come up (PartitionDown).
  p.state = state;
  if (state == PendingState::kEligible && over_user_limit(s))
    p.state = PendingState::kLimit;
  else if (state == PendingState::kEligible && (down_until(now_) || runs_across_boundary(j, now_)))
    p.state = PendingState::kNotYetEligible;
  return p;
}

std::optional<PendingJobView> Simulator::pending_view(SimJobIndex j) const {
  if (state(j) != SimJobState::kPending) return std::nullopt;
  for (const EligibleJob& e : eligible_)
    if (e.job == j) return pending_view(j, PendingState::kEligible, e.since);
  if (std::find(dependency_held_.begin(), dependency_held_.end(), j) != dependency_held_.end())
    return pending_view(j, PendingState::kDependency, now_);
  return pending_view(j, PendingState::kNotYetEligible, now_);
}

QueueSnapshot Simulator::snapshot_without_jobs() const {
  QueueSnapshot q;
  q.time = now_;
  q.total_nodes = spec_.nodes;
  q.gpus_per_node = spec_.gpus_per_node;
  q.priority = spec_.priority;
  q.unavailable_nodes = unavailable_nodes();
  // The snapshot is the campaign's (kCampaignUser's): its limits are every user's.
  q.user_limits = spec_.user_limits;
  q.reservations = boundary_reservations();
  q.recent_starts = recent_count_;
  q.recent_mean_wait_s = recent_count_ > 0 ? static_cast<double>(recent_sum_) / recent_count_ : 0.0;
  // Oldest first: the ring's next slot holds the oldest once it is full (two spans copied: every
  // decision takes a snapshot).
  std::vector<float>& shares = q.recent_runtime_shares;
  const auto ring = recent_shares_.begin();
  if (recent_ends_ < QueueSnapshot::kRecentEnds) {
    shares.assign(ring, ring + recent_ends_);
  } else {
    shares.reserve(recent_shares_.size());
    shares.assign(ring + recent_end_pos_, recent_shares_.end());
    shares.insert(shares.end(), ring, ring + recent_end_pos_);
  }
  return q;
}

QueueSnapshot Simulator::snapshot() const {
  QueueSnapshot q = snapshot_without_jobs();
  // Hidden work is not in the partition's queue: it shows as the nodes it holds, as a live
  // partition shows nodes that other work holds.
  q.pending.reserve(pending_count());
  for (const EligibleJob& e : eligible_)
    if (!hidden(e.job)) q.pending.push_back(pending_view(e.job, PendingState::kEligible, e.since));
  for (const auto& e : begin_heap_)
    q.pending.push_back(pending_view(e.second, PendingState::kNotYetEligible, now_));
  for (SimJobIndex j : dependency_held_)
    q.pending.push_back(pending_view(j, PendingState::kDependency, now_));
  q.running.reserve(running_.size());
  for (const RunningJob& r : running_) {
    if (hidden(r.job)) continue;
    const SimJobSpec& s = job(r.job);
    RunningJobView v;
    v.time_limit = s.time_limit;
    v.nodes = s.nodes;
    v.gpus_per_node = s.gpus_per_node;
    v.waited = r.start - state_[r.job].submitted;
    v.run = now_ - r.start;
    v.priority = r.priority;
    v.own = s.user == kCampaignUser;
    q.running.push_back(v);
  }
  return q;
}

Seconds Simulator::planned_start(SimJobSpec spec, Seconds horizon) const {
  // slurmctld's will-run test (job_start_data, 22.05) places the job among the running jobs
  // alone, each to its limit: no pending job, no limit, no change of capacity to come.
  Simulator plan = fork();
  plan.spec_.down = nullptr;  // an outage is not announced: slurmctld cannot plan around it
  plan.next_arrival_ = plan.trace_->size();
  plan.clear_eligible();
  plan.begin_heap_.clear();
  plan.dependency_held_.clear();
  plan.next_hidden_ = plan.hidden_->size();
  for (RunningJob& r : plan.running_) r.end = r.expected_end;
  std::make_heap(plan.running_.begin(), plan.running_.end(), LaterEnd{});
  spec.runtime = spec.time_limit;
  spec.user = 0;  // no user limit holds it
  spec.after_any.reset();
  spec.begin = 0;
  const SimJobIndex j = plan.submit(spec);
  return plan.run_until_started(j, now_ + horizon) ? plan.start_time(j) : kUnknownTime;
}

}  // namespace mirage

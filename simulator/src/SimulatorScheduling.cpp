#include <algorithm>
#include <cmath>
#include <limits>
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
using simulator_order::round_up;

namespace {

struct EndsBefore {
  bool operator()(const AvailabilityProfile::Holding& a,
                  const AvailabilityProfile::Holding& b) const {
    return a.end < b.end;
  }
};

}  // namespace

Seconds Simulator::planned_end(Seconds expected_end) const {
  return round_up(expected_end, std::max<Seconds>(1, spec_.scheduler.bf_resolution));
}

bool Simulator::fits_now(const SimJobSpec& s) const {
  if (spec_.allocation == AllocationMode::kWholeNode) return s.nodes <= free_nodes_;
  const int g = gpus_needed(s);
  int usable = 0;
  for (auto f : free_gpus_) usable += f >= g;
  return usable >= s.nodes;
}

void Simulator::start_job(std::size_t eligible_pos, const std::vector<std::uint16_t>* nodes) {
  const SimJobIndex j = eligible_[eligible_pos].job;
  const SimJobSpec& s = job(j);
  RunningJob r;
  r.priority = eligible_priority(eligible_[eligible_pos]);  // as Slurm keeps it once it runs
  remove_eligible(eligible_pos);
  r.job = j;
  r.start = now_;
  r.end = now_ + std::min(s.runtime, s.time_limit);
  r.expected_end = now_ + s.time_limit;
  if (spec_.allocation == AllocationMode::kWholeNode) {
    free_nodes_ -= s.nodes;
    const AvailabilityProfile::Holding h{0, s.nodes, planned_end(r.expected_end)};
    planned_ends_.insert(
        std::upper_bound(planned_ends_.begin(), planned_ends_.end(), h, EndsBefore{}), h);
  } else {
    const int g = gpus_needed(s);
    if (nodes) {
      r.gpu_nodes = *nodes;
    } else {
      for (int n = 0; n < spec_.nodes && static_cast<int>(r.gpu_nodes.size()) < s.nodes; ++n)
        if (free_gpus_[n] >= g) r.gpu_nodes.push_back(static_cast<std::uint16_t>(n));
    }
    for (auto n : r.gpu_nodes) free_gpus_[n] = static_cast<std::uint16_t>(free_gpus_[n] - g);
  }
  if (s.user != 0 &&
      (spec_.user_limits.max_running_jobs > 0 || spec_.user_limits.max_running_nodes > 0)) {
    UserUse& u = user_use_[s.user];
    ++u.jobs;
    u.nodes += s.nodes;
  }
  note_share(s, now_, true);
  PerJob& p = state_.mut(j);
  p.state = SimJobState::kRunning;
  p.start = now_;
  if (hidden(j)) {  // what the partition's own queue never shows: not among its recent starts
    hidden_nodes_ += s.nodes;
  } else {
    const Seconds wait = now_ - p.submitted;  // a follower's from when it was submitted
    recent_sum_ += wait - recent_waits_[static_cast<std::size_t>(recent_pos_)];
    recent_waits_[static_cast<std::size_t>(recent_pos_)] = wait;
    recent_pos_ = (recent_pos_ + 1) % QueueSnapshot::kRecentStarts;
    recent_count_ = std::min(recent_count_ + 1, QueueSnapshot::kRecentStarts);
  }
  running_.push_back(std::move(r));
  std::push_heap(running_.begin(), running_.end(), LaterEnd{});
  mark_dirty(false);
}

void Simulator::release(const RunningJob& r) {
  const SimJobSpec& s = job(r.job);
  note_share(s, r.start, false);
  if (UserUse* use = user_use_.find(s.user)) {
    --use->jobs;
    use->nodes -= s.nodes;
  }
  if (hidden(r.job)) hidden_nodes_ -= s.nodes;
  if (spec_.allocation == AllocationMode::kWholeNode) {
    free_nodes_ += s.nodes;
    const AvailabilityProfile::Holding h{0, s.nodes, planned_end(r.expected_end)};
    auto it = std::lower_bound(planned_ends_.begin(), planned_ends_.end(), h, EndsBefore{});
    while (it->units != h.units) ++it;  // one of the same end and size: any will do
    planned_ends_.erase(it);
  } else {
    const int g = gpus_needed(s);
    for (auto n : r.gpu_nodes) free_gpus_[n] = static_cast<std::uint16_t>(free_gpus_[n] + g);
  }
}

void Simulator::main_schedule() {
  main_needed_ = false;
  if (down_until(now_)) return;  // the partition is down: nothing starts until it is up
  ++counters_.main_passes;
  // Start jobs in priority order until the first that does not fit. Only the best job is needed
  // each round, so a linear scan beats sorting the whole queue after every event.
  // Jobs held by their user's limits are passed over, as Slurm passes over a job pending for a
  // QOS limit: they block nobody. On a full machine nothing fits: no need to look; nor where the
  // best job is sure not to fit without ranking the queue.
  if (spec_.allocation == AllocationMode::kWholeNode && best_cannot_fit()) return;
  while (!eligible_.empty() &&
         (spec_.allocation != AllocationMode::kWholeNode || free_nodes_ > 0)) {
    const std::vector<Ranked>& ranked = ranked_eligible();
    const std::size_t best = best_within_limits(ranked);
    // A job that would run across a boundary waits for it, and blocks the rest as one that does
    // not fit does: backfill starts what ends before the boundary.
    if (best == ranked.size()) break;
    const Ranked best_r = ranked[best];
    if (!fits_now(job(best_r.job)) || runs_across_boundary(best_r.job, now_)) {
      main_blocker_ = best_r.job;
      break;
    }
    start_job(best, nullptr);
  }
}

bool Simulator::best_cannot_fit() {
  if (free_nodes_ <= 0) return true;  // every job needs a node: no need to look at the queue
  std::vector<const EligibleJob*>& fitting = bf_.fitting;
  fitting.clear();
  const EligibleJob* blocker = nullptr;
  for (const EligibleJob& e : eligible_) {
    if (e.nodes > free_nodes_) {
      if (e.job == main_blocker_) blocker = &e;
    } else if (!over_user_limit(e.user, e.nodes)) {
      fitting.push_back(&e);
    }
  }
  if (fitting.empty()) return true;
  if (!blocker || over_user_limit(blocker->user, blocker->nodes)) return false;
  // The factors from the users' slots, each computed once an instant and share version (the
  // ranking of this instant reads them too), and here only those of the users priced; none
  // without fairshare (fairshare_of's 0 for every user).
  const bool fairshare = spec_.priority.weight_fairshare > 0;
  const auto ranked = [this, fairshare](const EligibleJob& e) {
    const double factor = fairshare ? slot_factor(eligible_users_[e.slot]) : 0.0;
    return Ranked{e.job, e.nodes, e.user, priority_from(e, factor), e.submit, e.planned};
  };
  const Ranked b = ranked(*blocker);
  return std::all_of(fitting.begin(), fitting.end(),
                     [&](const EligibleJob* e) { return before(b, ranked(*e)); });
}

const std::vector<Simulator::Ranked>& Simulator::rank_in_order() {
  const std::vector<Ranked>& ranked = ranked_eligible();
  // The last pass's order, kept by a swap of buffers, not copied out job by job.
  std::vector<Ranked>& order = bf_.order;
  std::vector<Ranked>& last = bf_.last_order;
  std::swap(order, last);
  // The jobs in the last pass's order, the ones new since then after them: between passes few
  // change places, so an insertion sort from there costs about a comparison a job.
  std::vector<std::uint32_t>& slot = bf_.slot_of;
  if (slot.size() < state_.size()) slot.resize(state_.size(), 0);
  for (std::size_t i = 0; i < ranked.size(); ++i)
    slot[ranked[i].job] = static_cast<std::uint32_t>(i + 1);
  order.resize(ranked.size());
  std::size_t taken = 0;
  const auto take = [&](SimJobIndex j) {
    if (slot[j] == 0) return;  // not eligible now, or taken already
    order[taken++] = ranked[slot[j] - 1];
    slot[j] = 0;
  };
  for (const Ranked& r : last) take(r.job);
  for (const Ranked& r : ranked) take(r.job);
  // The same order as any sort's (`before` is a strict total order); where the order moved much
  // (a fork's first pass has none to start from), a sort of the whole.
  const auto cmp = [](const Ranked& a, const Ranked& b) { return before(a, b); };
  const std::size_t budget = 4 * order.size() + 16;
  std::size_t moves = 0;
  for (std::size_t i = 1; i < order.size() && moves <= budget; ++i) {
    const Ranked x = order[i];
    std::size_t k = i;
    for (; k > 0 && before(x, order[k - 1]) && ++moves <= budget; --k) order[k] = order[k - 1];
    order[k] = x;
  }
  if (moves > budget) std::sort(order.begin(), order.end(), cmp);
  return order;
}

template <class Place>
std::optional<Seconds> Simulator::start_past_holds(SimJobIndex j, const Place& place) const {
  std::optional<Seconds> start = place(std::numeric_limits<Seconds>::min());
  // Planned past each boundary it would run across, as a recurring reservation is planned,
  // and past each down window it would start in.
  while (start) {
    std::optional<Seconds> after = mirage::down_until(bf_.down_ahead, *start);
    if (!after && runs_across_boundary(j, *start)) after = next_boundary_after(*start);
    if (!after) break;
    start = place(*after);
  }
  return start;
}

std::size_t Simulator::best_within_limits(const std::vector<Ranked>& ranked) const {
  std::size_t best = ranked.size();
  for (std::size_t i = 0; i < ranked.size(); ++i)
    if ((best == ranked.size() || before(ranked[i], ranked[best])) &&
        !over_user_limit(ranked[i].user, ranked[i].nodes))
      best = i;
  return best;
}

bool Simulator::no_room_beside_the_top(const std::vector<Ranked>& ranked, Seconds latest_start) {
  // The pass passes over the jobs before it (their users' limits hold them) without planning
  // them, and tests it first whatever bf_max_job_user (its user's first).
  const std::size_t best = best_within_limits(ranked);
  if (best == ranked.size()) return false;
  const Ranked* top = &ranked[best];
  const AvailabilityProfile& profile = bf_.profile;
  const int free_now = profile.free_now(0);
  if (spec_.scheduler.bf_max_job_test < 1 || top->nodes <= free_now) return false;
  const std::optional<Seconds> start = start_past_holds(top->job, [&](Seconds not_before) {
    return profile.earliest_start_pooled(top->nodes, top->planned, latest_start, not_before);
  });
  if (!start || *start <= now_) return false;  // no reservation, or it may start now
  // The running jobs' plan only gives nodes back as time goes on, so the least free from now to
  // a job's planned end is those free now, and, where the end is past the top job's start, those
  // free at that start less its nodes (its run the fewest free).
  const int free_beside_top = profile.free_at(*start) - top->nodes;
  // A job held by its user's limits or a boundary its limit would run across never starts now
  // (the pass's own starts only tighten the limits).
  return std::none_of(ranked.begin(), ranked.end(), [&](const Ranked& r) {
    const int room = now_ + r.planned > *start ? std::min(free_now, free_beside_top) : free_now;
    return &r != top && r.nodes <= room && !over_user_limit(r.user, r.nodes) &&
           !runs_across_boundary(r.job, now_);
  });
}

void Simulator::backfill_schedule() {
  if (eligible_.empty() || down_until(now_)) return;
  const SchedulerParameters& sp = spec_.scheduler;
  const bool whole_node = spec_.allocation == AllocationMode::kWholeNode;
  // Reservations are rebuilt from scratch each pass (Slurm keeps none between passes), so a
  // pass on a machine with nothing free cannot start anything: skip it.
  if (whole_node ? free_nodes_ <= 0
                 : std::all_of(free_gpus_.begin(), free_gpus_.end(), [](auto f) { return f == 0; }))
    return;
  ++counters_.backfill_passes;
  // A pass shows only in the jobs it starts now: where no pending job within its user's limits
  // fits the nodes free now, it starts none, whatever it would plan. Cheaper to see than to rank
  // the queue (on a congested machine most passes find a few nodes free and only larger jobs).
  if (whole_node && std::none_of(eligible_.begin(), eligible_.end(), [&](const EligibleJob& e) {
        return e.nodes <= free_nodes_ && !over_user_limit(e.user, e.nodes);
      }))
    return;

  // The plan: what running jobs hold until their expected ends (time limits, not runtimes),
  // rounded up to bf_resolution as Slurm's plan is.
  const Seconds res = std::max<Seconds>(1, sp.bf_resolution);
  AvailabilityProfile& profile = bf_.profile;
  profile.reset(now_, whole_node ? 1 : spec_.nodes, whole_node ? spec_.nodes : spec_.gpus_per_node);
  if (whole_node) {
    const auto after_now = std::upper_bound(
        planned_ends_.begin(), planned_ends_.end(), now_,
        [](Seconds t, const AvailabilityProfile::Holding& h) { return t < h.end; });
    profile.occupy_sorted({after_now, planned_ends_.end()});
  } else {
    std::vector<AvailabilityProfile::Holding>& held = bf_.held;
    held.clear();
    for (const RunningJob& r : running_) {
      const SimJobSpec& s = job(r.job);
      for (auto n : r.gpu_nodes) held.push_back({n, gpus_needed(s), round_up(r.expected_end, res)});
    }
    profile.occupy_all(held);
  }
  const Seconds latest_start = now_ + sp.bf_window;
  // The down windows a job of this pass could be planned in: mostly none, and then no job needs
  // looking up in them.
  std::vector<DownWindow>& down_ahead = bf_.down_ahead;
  down_ahead.clear();
  if (spec_.down) {
    const auto ends_after = [](Seconds t, const DownWindow& w) { return t < w.to; };
    for (auto it = std::upper_bound(spec_.down->begin(), spec_.down->end(), now_, ends_after);
         it != spec_.down->end() && it->from <= latest_start; ++it)
      down_ahead.push_back(*it);
  }
  // Most passes that get this far start nothing: the best job's reservation leaves the jobs that
  // fit now no room. Seen before the queue is ranked, they end here.
  const bool proven_idle = whole_node && no_room_beside_the_top(ranked_eligible(), latest_start);
  if (proven_idle) {
    ++counters_.backfill_passes_proven_idle;
    if (!check_idle_proofs_) return;
  }

  // Jobs in priority order, at most bf_max_job_test of them (in a buffer kept between passes:
  // a congested replay makes hundreds of thousands of passes).
  const std::vector<Ranked>& order = rank_in_order();
  const std::size_t tested = std::min<std::size_t>(
      order.size(), static_cast<std::size_t>(std::max(0, sp.bf_max_job_test)));
  const auto at = [&order](std::size_t k) {
    return order.begin() + static_cast<std::ptrdiff_t>(k);
  };
  const auto cut = at(tested);
  int free_now = whole_node ? free_nodes_ : 0;
  bool reserved_one = false;
  std::vector<SimJobIndex>& to_start = bf_.to_start;
  to_start.clear();
  std::vector<std::vector<std::uint16_t>> to_start_nodes;  // GPU-granular: each start's nodes
  // This pass's starts per limited user, so that one pass does not start past a limit (a pass
  // starts few jobs: a list).
  std::vector<std::pair<std::uint32_t, UserUse>>& started_by = bf_.started_by;
  started_by.clear();
  const auto started_of = [&started_by](std::uint32_t user) -> UserUse* {
    for (auto& [id, use] : started_by)
      if (id == user) return &use;
    return nullptr;
  };
  const bool limited =
      spec_.user_limits.max_running_jobs > 0 || spec_.user_limits.max_running_nodes > 0;
  // bf_max_job_user: a user's jobs past this many in the pass are neither started nor planned.
  std::unordered_map<std::uint32_t, int> tested_by;
  // A pass shows only in the jobs it starts now: once every job left to test needs more nodes
  // than are free now (what the pass's own starts leave; later reservations never take them) or
  // is held by its user's limits (which the pass's starts only tighten), none of them can start,
  // and what they would reserve changes nothing.
  const auto fitting_after = [&](std::size_t k) {
    const int free = profile.free_now(0);
    return std::count_if(at(k), cut, [&](const Ranked& r) {
      return r.nodes <= free && !over_user_limit(r.user, r.nodes);
    });
  };
  std::ptrdiff_t fitting = whole_node ? fitting_after(0) : 0;
  // Likewise, a job starts now only where the plan leaves its nodes free from now to the end of
  // its limit, and every reservation only takes from the plan: once no job left to test has that
  // room, none of them can start. Looked at after each reservation in the future, in a list of
  // the jobs left that had room at the last look (made at the first; a job without room then has
  // none for the rest of the pass; one its user's limits hold is left out), each dropped once it
  // is tested or has no room.
  std::vector<int>& least = bf_.least_free;
  std::vector<Ranked>& with_room = bf_.with_room;
  with_room.clear();
  bool listed = false;
  std::size_t changed_from = 0;  // the plan's first segment changed since `least` was made
  const auto room_after = [&](std::size_t k) {
    profile.least_free_so_far(least, changed_from);
    changed_from = std::numeric_limits<std::size_t>::max();
    if (!listed) {
      for (auto r = at(k + 1); r != cut; ++r)
        if (r->nodes <= least[0] && !over_user_limit(r->user, r->nodes)) with_room.push_back(*r);
      listed = true;
    }
    for (; !with_room.empty(); with_room.pop_back()) {
      const Ranked& r = with_room.back();
      // Tested already: ranked no lower than the job just tested (order[0..k] are the best).
      if (!before(order[k], r)) continue;
      if (r.nodes <= profile.least_free_until(least, now_ + r.planned)) return true;
    }
    return false;
  };
  for (std::size_t k = 0; k < tested; ++k) {
    if (whole_node && fitting == 0) break;
    const SimJobIndex j = order[k].job;
    const SimJobSpec& s = job(j);
    if (whole_node && s.nodes <= profile.free_now(0) && !over_user_limit(s)) --fitting;
    if (limited && s.user != 0) {
      const UserUse* extra = started_of(s.user);
      if (over_user_limit(s, extra ? extra->jobs : 0, extra ? extra->nodes : 0)) continue;
    }
    if (sp.bf_max_job_user > 0 && s.user != 0 && ++tested_by[s.user] > sp.bf_max_job_user) continue;
    const Seconds duration = order[k].planned;
    const ResourceRequest req =
        whole_node ? ResourceRequest{1, s.nodes} : ResourceRequest{s.nodes, gpus_needed(s)};
    // EASY: once the top blocked job holds a reservation, others may only start now.
    const bool may_reserve = sp.backfill == BackfillMode::kSlurm || !reserved_one;
    const Seconds horizon = may_reserve ? latest_start : now_;
    // A whole-node plan is one pool: its start alone, with no placement made (a pass tests
    // many jobs); a GPU-granular one keeps the nodes it chose.
    std::optional<Placement>& placed = bf_.placed;
    const auto place = [&](Seconds not_before) -> std::optional<Seconds> {
      if (whole_node) return profile.earliest_start_pooled(s.nodes, duration, horizon, not_before);
      placed = profile.earliest_start(req, duration, horizon, not_before);
      return placed ? std::optional<Seconds>(placed->start) : std::nullopt;
    };
    const std::optional<Seconds> start = start_past_holds(j, place);
    if (!start) continue;
    if (whole_node)
      changed_from = std::min(changed_from, profile.reserve_pooled(*start, req.units, duration));
    else
      profile.reserve(*placed, req.units, duration);
    if (*start == now_) {
      if (limited && s.user != 0) {
        UserUse* extra = started_of(s.user);
        if (!extra) extra = &started_by.emplace_back(s.user, UserUse{}).second;
        ++extra->jobs;
        extra->nodes += s.nodes;
      }
      to_start.push_back(j);
      if (!whole_node) to_start_nodes.push_back(std::move(placed->slots));
      if (whole_node) {
        free_now -= s.nodes;
        // Nothing else can start now, and the pass's reservations die with it.
        if (free_now == 0) break;
        fitting = fitting_after(k + 1);
      }
    } else {
      reserved_one = true;
      if (whole_node && !room_after(k)) break;
    }
  }
  if (proven_idle && !to_start.empty()) ++counters_.backfill_idle_proofs_broken;
  for (std::size_t k = 0; k < to_start.size(); ++k) {
    auto pos = std::find_if(eligible_.begin(), eligible_.end(),
                            [&](const EligibleJob& e) { return e.job == to_start[k]; });
    start_job(static_cast<std::size_t>(pos - eligible_.begin()),
              whole_node ? nullptr : &to_start_nodes[k]);
    ++counters_.backfill_starts;
  }
}

}  // namespace mirage

#include "mirage/simulator/Simulator.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "SimulatorOrder.h"
#include "mirage/core/AvailabilityProfile.h"
#include "mirage/core/QueueForecast.h"
#include "mirage/simulator/HiddenWork.h"

namespace mirage {

using simulator_order::LaterBegin;
using simulator_order::LaterEnd;
using simulator_order::round_up;
std::vector<SimJobSpec> to_sim_jobs(const std::vector<Job>& jobs) {
  std::vector<SimJobSpec> out;
  out.reserve(jobs.size());
  std::unordered_map<std::string, std::uint32_t> users;
  std::unordered_map<JobId, SimJobIndex> index_of;
  for (std::size_t i = 0; i < jobs.size(); ++i)
    index_of.emplace(jobs[i].id, static_cast<SimJobIndex>(i));
  for (const Job& j : jobs) {
    SimJobSpec s;
    if (!j.user.empty())
      s.user = users.emplace(j.user, static_cast<std::uint32_t>(users.size() + 1)).first->second;
    s.submit = j.submit;
    s.runtime = std::max<Seconds>(0, j.runtime());
    s.time_limit = j.time_limit > 0 ? j.time_limit : std::max<Seconds>(1, s.runtime);
    s.nodes = j.nodes;
    s.gpus_per_node = j.gpus_per_node;
    // A dependency on a job not replayed (dropped, or outside this slice) is no dependency.
    if (j.after_any != 0)
      if (const auto it = index_of.find(j.after_any);
          it != index_of.end() && it->second != out.size()) {
        s.after_any = it->second;
        // A follower is submitted by its job's end: that job must come before it.
        if (j.think >= 0 && it->second < out.size()) s.think = j.think;
      }
    out.push_back(s);
  }
  return out;
}

Simulator::Simulator(ClusterSpec spec, std::shared_ptr<const std::vector<SimJobSpec>> jobs)
    : spec_(std::move(spec)), trace_(std::move(jobs)) {
  if (spec_.nodes <= 0) throw std::invalid_argument("the machine needs at least one node");
  if (spec_.allocation == AllocationMode::kGpuGranular && spec_.gpus_per_node <= 0)
    throw std::invalid_argument("GPU-granular allocation needs gpus_per_node > 0");
  if (spec_.nodes > 65535) throw std::invalid_argument("at most 65535 nodes are supported");
  const auto& t = *trace_;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const SimJobSpec& s = t[i];
    const std::string who = "job #" + std::to_string(i);
    if (s.nodes <= 0) throw std::invalid_argument(who + " asks for a non-positive node count");
    if (s.nodes > spec_.nodes)
      throw std::invalid_argument(who + " asks for " + std::to_string(s.nodes) +
                                  " nodes but the machine has " + std::to_string(spec_.nodes));
    if (spec_.allocation == AllocationMode::kGpuGranular && s.gpus_per_node > spec_.gpus_per_node)
      throw std::invalid_argument(who + " asks for " + std::to_string(s.gpus_per_node) +
                                  " GPUs per node but nodes have " +
                                  std::to_string(spec_.gpus_per_node));
    if (s.time_limit <= 0 || s.runtime < 0)
      throw std::invalid_argument(who + " has a non-positive time limit or negative runtime");
    if (i > 0 && s.submit < t[i - 1].submit)
      throw std::invalid_argument("jobs must be sorted by submit time (" + who + ")");
  }
  std::uint32_t users = 0;
  for (const SimJobSpec& s : t) users = std::max(users, s.user);
  if (users > (1u << 20)) users = 0;  // not numbered densely: all in the map
  user_use_ = PerUser<UserUse>(users);
  shares_ = PerUser<UserShare>(users);
  slot_of_user_ = PerUser<std::uint32_t>(users);
  free_nodes_ = spec_.nodes;
  if (spec_.allocation == AllocationMode::kGpuGranular)
    free_gpus_.assign(static_cast<std::size_t>(spec_.nodes),
                      static_cast<std::uint16_t>(spec_.gpus_per_node));
  set_now(t.empty() ? 0 : t.front().submit);
  usage_origin_ = now_;
  if (spec_.scheduler.bf_interval <= 0) spec_.scheduler.bf_interval = 1;
  if (spec_.priority.weight_fairshare > 0 && spec_.priority.decay_half_life <= 0)
    throw std::invalid_argument("fairshare needs a positive decay half-life");
  static const auto kNoHiddenWork = std::make_shared<const std::vector<SimJobSpec>>();
  hidden_ = kNoHiddenWork;
  if (spec_.unavailable && !spec_.unavailable->empty()) {
    if (spec_.allocation != AllocationMode::kWholeNode)
      throw std::invalid_argument("capacity over time is modelled for whole-node allocation only");
    const auto& steps = *spec_.unavailable;
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (steps[i].unavailable_nodes < 0 || steps[i].unavailable_nodes > spec_.nodes ||
          (i > 0 && steps[i].from < steps[i - 1].from))
        throw std::invalid_argument("capacity step " + std::to_string(i) +
                                    " is out of order or out of range");
    hidden_ = std::make_shared<const std::vector<SimJobSpec>>(hidden_work(steps));
  }
  state_.resize(t.size() + hidden_->size());
  std::vector<std::pair<SimJobIndex, SimJobIndex>> follows;
  for (std::size_t i = 0; i < t.size(); ++i)
    if (t[i].think >= 0 && t[i].after_any) follows.emplace_back(*t[i].after_any, i);
  if (!follows.empty()) {
    std::sort(follows.begin(), follows.end());
    followers_ = std::make_shared<const std::vector<std::pair<SimJobIndex, SimJobIndex>>>(
        std::move(follows));
  }
}

SimJobState Simulator::state(SimJobIndex j) const {
  return state_.at(j).state;
}
Seconds Simulator::start_time(SimJobIndex j) const {
  return state_.at(j).start;
}
Seconds Simulator::submit_time(SimJobIndex j) const {
  return state_.at(j).submitted;
}
std::vector<Seconds> Simulator::waits(std::size_t count) const {
  std::vector<Seconds> out(count, kUnknownTime);
  for (std::size_t i = 0; i < count; ++i)
    if (const PerJob& p = state_.at(i); p.start != kUnknownTime) out[i] = p.start - p.submitted;
  return out;
}
Seconds Simulator::end_time(SimJobIndex j) const {
  const PerJob& p = state_.at(j);
  return p.state == SimJobState::kDone || p.state == SimJobState::kCancelled ? p.end : kUnknownTime;
}

std::size_t Simulator::pending_count() const {
  return eligible_.size() + begin_heap_.size() + dependency_held_.size();
}

int Simulator::gpus_needed(const SimJobSpec& s) const {
  return s.gpus_per_node > 0 ? s.gpus_per_node : spec_.gpus_per_node;
}

// ---- events ----------------------------------------------------------------------------------

Seconds Simulator::next_event_time() const {
  Seconds t = kNever;
  if (next_arrival_ < trace_->size()) t = std::min(t, (*trace_)[next_arrival_].submit);
  if (!running_.empty()) t = std::min(t, running_.front().end);
  if (!begin_heap_.empty()) t = std::min(t, begin_heap_.front().first);
  if (next_hidden_ < hidden_->size()) t = std::min(t, (*hidden_)[next_hidden_].submit);
  if (!submit_heap_.empty()) t = std::min(t, submit_heap_.front().first);
  if (dirty_ && spec_.scheduler.backfill != BackfillMode::kNone && !eligible_.empty())
    t = std::min(t, next_backfill_);
  // A boundary passed lets the jobs it held start: both schedulers look again then.
  if (!eligible_.empty()) {
    if (const auto b = next_boundary_after(now_)) t = std::min(t, *b);
    // The end of a down window lets the jobs it held start: both schedulers look again then.
    if (const auto up = down_until(now_)) t = std::min(t, *up);
  }
  return t;
}

void Simulator::mark_dirty(bool main_too) {
  if (!dirty_ || next_backfill_ < now_) {
    dirty_ = true;
    const Seconds bf = spec_.scheduler.bf_interval;
    // The next backfill tick at or after now (ticks sit on multiples of bf_interval).
    next_backfill_ = std::max(round_up(now_, bf), last_backfill_ + bf);
  }
  // A start frees nothing, so it gives the main scheduler nothing new to try.
  if (main_too) main_needed_ = true;
}

void Simulator::run_until(Seconds t) {
  while (true) {
    if (main_needed_) main_schedule();
    const Seconds next = next_event_time();
    if (next > t) break;
    process_events_at(next);
  }
  if (t > now_) set_now(t);
}

void Simulator::run_to_completion() {
  while (true) {
    if (main_needed_) main_schedule();
    const Seconds next = next_event_time();
    if (next == kNever) break;
    // Nothing but hidden work left, and no trace job to come: the replay is over.
    if (next_arrival_ == trace_->size() && submit_heap_.empty() &&
        pending_count() + running_.size() == static_cast<std::size_t>(hidden_live_))
      break;
    process_events_at(next);
  }
}

bool Simulator::run_until_started(SimJobIndex j, Seconds deadline) {
  while (state_.at(j).state == SimJobState::kPending ||
         state_.at(j).state == SimJobState::kFuture) {
    if (main_needed_) {
      main_schedule();
      continue;
    }
    const Seconds next = next_event_time();
    if (next > deadline || next == kNever) {
      if (deadline > now_ && deadline != kNever) set_now(deadline);
      break;
    }
    process_events_at(next);
  }
  const auto st = state_.at(j).state;
  return st == SimJobState::kRunning || st == SimJobState::kDone;
}

void Simulator::process_events_at(Seconds t) {
  set_now(t);
  ++counters_.events;
  // Ends first, so that what they free is usable by what arrives at the same instant.
  while (!running_.empty() && running_.front().end <= t) {
    std::pop_heap(running_.begin(), running_.end(), LaterEnd{});
    RunningJob r = std::move(running_.back());
    running_.pop_back();
    release(r);
    complete(r.job, SimJobState::kDone);
  }
  while (next_hidden_ < hidden_->size() && (*hidden_)[next_hidden_].submit <= t) {
    ++hidden_live_;
    arrive(static_cast<SimJobIndex>(trace_->size() + next_hidden_++));
  }
  while (next_arrival_ < trace_->size() && (*trace_)[next_arrival_].submit <= t) {
    // A job that follows another's end is submitted by that end (complete), not now.
    const SimJobSpec& s = (*trace_)[next_arrival_];
    if (s.think < 0 || !s.after_any) arrive(static_cast<SimJobIndex>(next_arrival_));
    ++next_arrival_;
  }
  while (!submit_heap_.empty() && submit_heap_.front().first <= t) {
    std::pop_heap(submit_heap_.begin(), submit_heap_.end(), LaterBegin{});
    const SimJobIndex j = submit_heap_.back().second;
    submit_heap_.pop_back();
    arrive(j);
  }
  while (!begin_heap_.empty() && begin_heap_.front().first <= t) {
    std::pop_heap(begin_heap_.begin(), begin_heap_.end(), LaterBegin{});
    const SimJobIndex j = begin_heap_.back().second;
    begin_heap_.pop_back();
    become_eligible_or_hold(j);
  }
  if (const auto b = next_boundary_after(t - 1); b && *b == t) mark_dirty(true);
  if (const auto up = down_until(t - 1); up && *up == t) mark_dirty(true);
  if (main_needed_) main_schedule();
  if (dirty_ && t >= next_backfill_ && spec_.scheduler.backfill != BackfillMode::kNone) {
    backfill_schedule();
    last_backfill_ = t;
    dirty_ = false;
  }
}

void Simulator::arrive(SimJobIndex j) {
  PerJob& p = state_.mut(j);
  p.state = SimJobState::kPending;
  p.submitted = now_;
  const SimJobSpec& s = job(j);
  // Every user with work on the machine holds an equal share.
  if (spec_.priority.weight_fairshare > 0 && s.user != 0 && !shares_.find(s.user)) {
    keep_period_start_totals();  // the count of users a period's factors divide by
    shares_.try_emplace(s.user);
    ++share_version_;
  }
  if (s.begin > now_) {
    begin_heap_.emplace_back(s.begin, j);
    std::push_heap(begin_heap_.begin(), begin_heap_.end(), LaterBegin{});
    return;
  }
  become_eligible_or_hold(j);
}

void Simulator::become_eligible_or_hold(SimJobIndex j) {
  const SimJobSpec& s = job(j);
  if (s.after_any) {
    const auto dep = state_.at(*s.after_any).state;
    if (dep != SimJobState::kDone && dep != SimJobState::kCancelled) {
      dependency_held_.push_back(j);
      ++state_.mut(*s.after_any).held_behind;
      return;
    }
  }
  // Age counts from here: a held job accrues none.
  add_eligible(j);
}

void Simulator::add_eligible(SimJobIndex j) {
  const SimJobSpec& s = job(j);
  eligible_.push_back({j, s.user, now_, s.submit, size_part(s),
                       round_up(s.time_limit, std::max<Seconds>(1, spec_.scheduler.bf_resolution)),
                       s.nodes, user_slot(s.user)});
  ++eligible_changes_;
  mark_dirty(true);
}

void Simulator::remove_eligible(std::size_t pos) {
  // The ranking of this instant, made for eligible_ as it was, loses the same entry the same way.
  std::vector<Ranked>& ranked = bf_.ranked;
  const bool ranked_in_step = bf_.ranked_changes == eligible_changes_ &&
                              bf_.ranked_at == priority_at() && ranked.size() == eligible_.size();
  release_user_slot(eligible_[pos].slot);
  eligible_[pos] = eligible_.back();
  eligible_.pop_back();
  ++eligible_changes_;
  if (ranked_in_step) {
    ranked[pos] = ranked.back();
    ranked.pop_back();
    bf_.ranked_changes = eligible_changes_;
  }
}

void Simulator::clear_eligible() {
  eligible_.clear();
  eligible_users_.clear();
  free_user_slots_.clear();
  slot_of_user_ = PerUser<std::uint32_t>();
  ++eligible_changes_;
}

std::uint32_t Simulator::user_slot(std::uint32_t user) {
  auto [slot, made] = slot_of_user_.try_emplace(user);
  if (made) {
    if (free_user_slots_.empty()) {
      *slot = static_cast<std::uint32_t>(eligible_users_.size());
      eligible_users_.emplace_back();
    } else {
      *slot = free_user_slots_.back();
      free_user_slots_.pop_back();
    }
    eligible_users_[*slot] = EligibleUser{user, 0, 0.0, 0.0};
    factors_at_ = -1;  // its factor is to be computed
  }
  ++eligible_users_[*slot].jobs;
  return *slot;
}

void Simulator::release_user_slot(std::uint32_t slot) {
  EligibleUser& u = eligible_users_[slot];
  if (--u.jobs > 0) return;
  slot_of_user_.erase(u.user);
  free_user_slots_.push_back(slot);
}

void Simulator::complete(SimJobIndex j, SimJobState final_state) {
  PerJob& p = state_.mut(j);
  const bool visible = !hidden(j);
  if (p.state == SimJobState::kRunning && visible) note_runtime(job(j).time_limit, now_ - p.start);
  p.state = final_state;
  p.end = now_;
  if (!visible) --hidden_live_;
  if (recording_ && visible) outcomes_.push_back({j, p.start, p.end});
  mark_dirty(true);
  // Its followers are submitted as their users saw it end, each after its think time.
  if (followers_) {
    auto it =
        std::lower_bound(followers_->begin(), followers_->end(), std::pair{j, SimJobIndex{0}});
    for (; it != followers_->end() && it->first == j; ++it) {
      submit_heap_.emplace_back(now_ + job(it->second).think, it->second);
      std::push_heap(submit_heap_.begin(), submit_heap_.end(), LaterBegin{});
    }
  }
  if (p.held_behind == 0) return;
  p.held_behind = 0;
  // Release jobs waiting on this one (afterany: whatever the outcome).
  std::vector<SimJobIndex> released;
  std::erase_if(dependency_held_, [&](SimJobIndex h) {
    if (job(h).after_any == j) {
      released.push_back(h);
      return true;
    }
    return false;
  });
  for (SimJobIndex h : released) become_eligible_or_hold(h);
}

void Simulator::note_runtime(Seconds limit, Seconds runtime) {
  recent_shares_[static_cast<std::size_t>(recent_end_pos_)] =
      QueueSnapshot::runtime_share(runtime, limit);
  recent_end_pos_ = (recent_end_pos_ + 1) % QueueSnapshot::kRecentEnds;
  recent_ends_ = std::min(recent_ends_ + 1, QueueSnapshot::kRecentEnds);
}

// ---- external actions --------------------------------------------------------------------------

SimJobIndex Simulator::submit(SimJobSpec s) {
  if (s.nodes <= 0 || s.nodes > spec_.nodes)
    throw std::invalid_argument("submitted job asks for " + std::to_string(s.nodes) +
                                " nodes; the machine has " + std::to_string(spec_.nodes));
  if (s.time_limit <= 0) throw std::invalid_argument("submitted job needs a positive time limit");
  s.submit = now_;
  s.think = -1;  // submitted now, whatever it follows
  const SimJobIndex j = next_submit_index();
  extra_.push_back(s);
  state_.push_back(PerJob{});
  arrive(j);
  main_needed_ = true;
  return j;
}

void Simulator::cancel(SimJobIndex j) {
  const PerJob& p = state_.at(j);
  if (p.state == SimJobState::kPending) {
    if (const auto it = std::find_if(eligible_.begin(), eligible_.end(),
                                     [&](const EligibleJob& e) { return e.job == j; });
        it != eligible_.end()) {
      release_user_slot(it->slot);
      eligible_.erase(it);
    }
    ++eligible_changes_;
    if (std::erase(dependency_held_, j) > 0) --state_.mut(*job(j).after_any).held_behind;
    std::erase_if(begin_heap_, [&](const auto& e) { return e.second == j; });
    std::make_heap(begin_heap_.begin(), begin_heap_.end(), LaterBegin{});
    complete(j, SimJobState::kCancelled);
  } else if (p.state == SimJobState::kRunning) {
    end_early(j, now_);
    auto it = std::find_if(running_.begin(), running_.end(),
                           [&](const RunningJob& r) { return r.job == j; });
    RunningJob r = std::move(*it);
    running_.erase(it);
    std::make_heap(running_.begin(), running_.end(), LaterEnd{});
    release(r);
    complete(j, SimJobState::kCancelled);
  } else if (p.state == SimJobState::kFuture) {
    throw std::invalid_argument("cannot cancel a job that has not been submitted yet");
  }
}

void Simulator::release_dependency(SimJobIndex j) {
  if (std::erase(dependency_held_, j) == 0) return;
  --state_.mut(*job(j).after_any).held_behind;
  add_eligible(j);
}

void Simulator::end_early(SimJobIndex j, Seconds at) {
  for (RunningJob& r : running_) {
    if (r.job == j) {
      r.end = std::min(r.end, std::max(at, now_));
      std::make_heap(running_.begin(), running_.end(), LaterEnd{});
      return;
    }
  }
}

Simulator Simulator::fork() const {
  Simulator copy = *this;
  copy.recording_ = false;
  copy.outcomes_.clear();
  copy.outcomes_.shrink_to_fit();
  return copy;
}

}  // namespace mirage

#include "mirage/simulator/Simulator.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "mirage/core/AvailabilityProfile.h"
#include "mirage/core/QueueForecast.h"
#include "mirage/simulator/HiddenWork.h"

namespace mirage {
namespace {

Seconds round_up(Seconds t, Seconds step) {
  if (step <= 1) return t;
  const Seconds r = t % step;
  return r == 0 ? t : t + (step - r);
}

// Min-heap on actual end time; ties by job index for determinism.
struct LaterEnd {
  template <class R>
  bool operator()(const R& a, const R& b) const {
    return a.end != b.end ? a.end > b.end : a.job > b.job;
  }
};

struct LaterBegin {
  bool operator()(const std::pair<Seconds, SimJobIndex>& a,
                  const std::pair<Seconds, SimJobIndex>& b) const {
    return a > b;
  }
};

}  // namespace

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
  free_nodes_ = spec_.nodes;
  if (spec_.allocation == AllocationMode::kGpuGranular)
    free_gpus_.assign(static_cast<std::size_t>(spec_.nodes),
                      static_cast<std::uint16_t>(spec_.gpus_per_node));
  now_ = t.empty() ? 0 : t.front().submit;
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

bool Simulator::over_user_limit(const SimJobSpec& s, int extra_jobs, int extra_nodes) const {
  const UserLimits& l = spec_.user_limits;
  if (s.user == 0 || (l.max_running_jobs <= 0 && l.max_running_nodes <= 0)) return false;
  const UserUse* use = user_use_.find(s.user);
  const int jobs = (use ? use->jobs : 0) + extra_jobs;
  const int nodes = (use ? use->nodes : 0) + extra_nodes;
  return (l.max_running_jobs > 0 && jobs + 1 > l.max_running_jobs) ||
         (l.max_running_nodes > 0 && nodes + s.nodes > l.max_running_nodes);
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
  if (t > now_) now_ = t;
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
      if (deadline > now_ && deadline != kNever) now_ = deadline;
      break;
    }
    process_events_at(next);
  }
  const auto st = state_.at(j).state;
  return st == SimJobState::kRunning || st == SimJobState::kDone;
}

void Simulator::process_events_at(Seconds t) {
  now_ = t;
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
  state_[j].state = SimJobState::kPending;
  state_[j].submitted = now_;
  const SimJobSpec& s = job(j);
  // Every user with work on the machine holds an equal share.
  if (spec_.priority.weight_fairshare > 0 && s.user != 0 && shares_.try_emplace(s.user).second)
    ++share_version_;
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
      return;
    }
  }
  // Age counts from here: a held job accrues none.
  eligible_.push_back({j, now_});
  mark_dirty(true);
}

void Simulator::complete(SimJobIndex j, SimJobState final_state) {
  PerJob& p = state_[j];
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
  if (dependency_held_.empty()) return;
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

// ---- resources ---------------------------------------------------------------------------------

std::optional<Seconds> Simulator::next_boundary_after(Seconds t) const {
  if (!spec_.boundaries) return std::nullopt;
  return mirage::next_boundary_after(*spec_.boundaries, t);
}

std::optional<Seconds> Simulator::down_until(Seconds t) const {
  if (!spec_.down) return std::nullopt;
  return mirage::down_until(*spec_.down, t);
}

bool Simulator::runs_across_boundary(SimJobIndex j, Seconds start) const {
  return spec_.boundaries && !hidden(j) &&
         mirage::runs_across_boundary(*spec_.boundaries, start, job(j).time_limit);
}

bool Simulator::fits_now(const SimJobSpec& s) const {
  if (spec_.allocation == AllocationMode::kWholeNode) return s.nodes <= free_nodes_;
  const int g = gpus_needed(s);
  int usable = 0;
  for (auto f : free_gpus_) usable += f >= g;
  return usable >= s.nodes;
}

void Simulator::start_job(std::size_t eligible_pos, const std::vector<std::uint16_t>* nodes) {
  const auto [j, eligible_since] = eligible_[eligible_pos];
  const SimJobSpec& s = job(j);
  RunningJob r;
  r.priority = priority_of(s, eligible_since);  // as Slurm keeps it once the job runs
  eligible_[eligible_pos] = eligible_.back();
  eligible_.pop_back();
  r.job = j;
  r.start = now_;
  r.end = now_ + std::min(s.runtime, s.time_limit);
  r.expected_end = now_ + s.time_limit;
  if (spec_.allocation == AllocationMode::kWholeNode) {
    free_nodes_ -= s.nodes;
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
  state_[j].state = SimJobState::kRunning;
  state_[j].start = now_;
  if (hidden(j)) {  // what the partition's own queue never shows: not among its recent starts
    hidden_nodes_ += s.nodes;
  } else {
    const Seconds wait = now_ - state_[j].submitted;  // a follower's from when it was submitted
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
  } else {
    const int g = gpus_needed(s);
    for (auto n : r.gpu_nodes) free_gpus_[n] = static_cast<std::uint16_t>(free_gpus_[n] + g);
  }
}

// ---- fairshare ---------------------------------------------------------------------------------

double Simulator::usage_weight(Seconds t) const {
  return std::exp2(static_cast<double>(t - usage_origin_) /
                   static_cast<double>(spec_.priority.decay_half_life));
}

void Simulator::note_share(const SimJobSpec& s, Seconds start, bool starting) {
  if (spec_.priority.weight_fairshare <= 0 || s.user == 0) return;
  const double units = spec_.allocation == AllocationMode::kGpuGranular
                           ? static_cast<double>(s.nodes) * gpus_needed(s)
                           : static_cast<double>(s.nodes);
  UserShare& u = shares_[s.user];
  const double sign = starting ? 1.0 : -1.0;
  u.running += sign * units;
  u.running_since += sign * units * static_cast<double>(start);
  total_running_ += sign * units;
  total_running_since_ += sign * units * static_cast<double>(start);
  if (!starting) {
    // Ended work, weighted at the middle of its run.
    const double used =
        units * static_cast<double>(now_ - start) * usage_weight((start + now_) / 2);
    u.usage += used;
    total_usage_ += used;
    // Keep the weights finite: move the origin forward every 400 half-lives.
    if (static_cast<double>(now_ - usage_origin_) >
        400.0 * static_cast<double>(spec_.priority.decay_half_life)) {
      const double w = usage_weight(now_);
      shares_.for_each([w](UserShare& share) { share.usage /= w; });
      total_usage_ /= w;
      usage_origin_ = now_;
    }
  }
  ++share_version_;
}

void Simulator::add_steady_usage(std::uint32_t user, double units) {
  if (spec_.priority.weight_fairshare <= 0 || user == 0) return;
  // Units held since forever, decayed with the half-life h: units x h / ln 2, weighted at now.
  const double used = units * static_cast<double>(spec_.priority.decay_half_life) / std::log(2.0) *
                      usage_weight(now_);
  shares_[user].usage += used;
  total_usage_ += used;
  ++share_version_;
}

// 2^(-usage share / fair share), with an equal share for every user seen: 1 for a user who has
// used nothing, 0.5 for one who used exactly their share, towards 0 for heavy users.
double Simulator::fairshare_factor(std::uint32_t user) const {
  UserShare& u = shares_[user];
  if (u.factor_at == now_ && u.factor_version == share_version_) return u.factor;
  if (weight_at_ != now_ || weight_origin_ != usage_origin_) {
    weight_now_ = usage_weight(now_);
    weight_at_ = now_;
    weight_origin_ = usage_origin_;
  }
  const double w = weight_now_;
  const double now = static_cast<double>(now_);
  const double mine = u.usage + w * (u.running * now - u.running_since);
  const double all = total_usage_ + w * (total_running_ * now - total_running_since_);
  u.factor = all > 0 ? std::exp2(-static_cast<double>(shares_.size()) * mine / all) : 1.0;
  u.factor_at = now_;
  u.factor_version = share_version_;
  return u.factor;
}

// ---- scheduling --------------------------------------------------------------------------------

double Simulator::priority_of(const SimJobSpec& s, Seconds eligible_since) const {
  const double units = spec_.allocation == AllocationMode::kGpuGranular
                           ? static_cast<double>(s.nodes) * gpus_needed(s)
                           : static_cast<double>(s.nodes);
  const double fairshare =
      spec_.priority.weight_fairshare > 0 ? (s.user != 0 ? fairshare_factor(s.user) : 0.5) : 0.0;
  return spec_.priority.score(now_ - eligible_since,
                              units / static_cast<double>(spec_.capacity_units()), fairshare);
}

void Simulator::main_schedule() {
  main_needed_ = false;
  if (down_until(now_)) return;  // the partition is down: nothing starts until it is up
  ++counters_.main_passes;
  // Start jobs in priority order until the first that does not fit. Only the best job is needed
  // each round, so a linear scan beats sorting the whole queue after every event.
  // Jobs held by their user's limits are passed over, as Slurm passes over a job pending for a
  // QOS limit: they block nobody. On a full machine nothing fits: no need to look.
  while (!eligible_.empty() &&
         (spec_.allocation != AllocationMode::kWholeNode || free_nodes_ > 0)) {
    std::size_t best = eligible_.size();
    Ranked best_r{};
    for (std::size_t i = 0; i < eligible_.size(); ++i) {
      const SimJobSpec& s = job(eligible_[i].first);
      if (over_user_limit(s)) continue;
      Ranked r{eligible_[i].first, priority_of(s, eligible_[i].second), s.submit};
      if (best == eligible_.size() || before(r, best_r)) {
        best = i;
        best_r = r;
      }
    }
    // A job that would run across a boundary waits for it, and blocks the rest as one that does
    // not fit does: backfill starts what ends before the boundary.
    if (best == eligible_.size() || !fits_now(job(best_r.job)) ||
        runs_across_boundary(best_r.job, now_))
      break;
    start_job(best, nullptr);
  }
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

  // Jobs in priority order, at most bf_max_job_test of them (in a buffer kept between passes:
  // a congested replay makes hundreds of thousands of passes).
  std::vector<Ranked>& order = bf_order_;
  order.clear();
  for (const auto& [j, since] : eligible_) {
    const SimJobSpec& s = job(j);
    order.push_back({j, priority_of(s, since), s.submit});
  }
  const std::size_t tested = std::min<std::size_t>(
      order.size(), static_cast<std::size_t>(std::max(0, sp.bf_max_job_test)));
  auto cmp = [](const Ranked& a, const Ranked& b) { return before(a, b); };
  // The first `tested` by selection, then sorted: cheaper than a partial sort on a long queue, and
  // the same order (`before` is a strict total order).
  const auto cut = order.begin() + static_cast<std::ptrdiff_t>(tested);
  if (cut != order.end()) std::nth_element(order.begin(), cut, order.end(), cmp);
  std::sort(order.begin(), cut, cmp);

  // The plan: what running jobs hold until their expected ends (time limits, not runtimes),
  // rounded up to bf_resolution as Slurm's plan is.
  const Seconds res = std::max<Seconds>(1, sp.bf_resolution);
  AvailabilityProfile profile(now_, whole_node ? 1 : spec_.nodes,
                              whole_node ? spec_.nodes : spec_.gpus_per_node);
  std::vector<AvailabilityProfile::Holding>& held = bf_held_;
  held.clear();
  for (const RunningJob& r : running_) {
    const Seconds end = round_up(r.expected_end, res);
    const SimJobSpec& s = job(r.job);
    if (whole_node) {
      held.push_back({0, s.nodes, end});
    } else {
      for (auto n : r.gpu_nodes) held.push_back({n, gpus_needed(s), end});
    }
  }
  profile.occupy_all(held);
  const Seconds latest_start = now_ + sp.bf_window;
  // The down windows a job of this pass could be planned in: mostly none, and then no job needs
  // looking up in them.
  std::vector<DownWindow> down_ahead;
  if (spec_.down) {
    const auto ends_after = [](Seconds t, const DownWindow& w) { return t < w.to; };
    for (auto it = std::upper_bound(spec_.down->begin(), spec_.down->end(), now_, ends_after);
         it != spec_.down->end() && it->from <= latest_start; ++it)
      down_ahead.push_back(*it);
  }
  int free_now = whole_node ? free_nodes_ : 0;
  bool reserved_one = false;
  std::vector<SimJobIndex> to_start;
  std::vector<std::vector<std::uint16_t>> to_start_nodes;
  // This pass's starts per limited user, so that one pass does not start past a limit (a pass
  // starts few jobs: a list).
  std::vector<std::pair<std::uint32_t, UserUse>> started_by;
  const auto started_of = [&started_by](std::uint32_t user) -> UserUse* {
    for (auto& [id, use] : started_by)
      if (id == user) return &use;
    return nullptr;
  };
  const bool limited =
      spec_.user_limits.max_running_jobs > 0 || spec_.user_limits.max_running_nodes > 0;
  // bf_max_job_user: a user's jobs past this many in the pass are neither started nor planned.
  std::unordered_map<std::uint32_t, int> tested_by;
  for (std::size_t k = 0; k < tested; ++k) {
    const SimJobIndex j = order[k].job;
    const SimJobSpec& s = job(j);
    if (limited && s.user != 0) {
      const UserUse* extra = started_of(s.user);
      if (over_user_limit(s, extra ? extra->jobs : 0, extra ? extra->nodes : 0)) continue;
    }
    if (sp.bf_max_job_user > 0 && s.user != 0 && ++tested_by[s.user] > sp.bf_max_job_user) continue;
    const Seconds duration = round_up(s.time_limit, res);
    const ResourceRequest req =
        whole_node ? ResourceRequest{1, s.nodes} : ResourceRequest{s.nodes, gpus_needed(s)};
    // EASY: once the top blocked job holds a reservation, others may only start now.
    const bool may_reserve = sp.backfill == BackfillMode::kSlurm || !reserved_one;
    const Seconds horizon = may_reserve ? latest_start : now_;
    auto placement = profile.earliest_start(req, duration, horizon);
    // Planned past each boundary it would run across, as a recurring reservation is planned,
    // and past each down window it would start in.
    while (placement) {
      std::optional<Seconds> after = mirage::down_until(down_ahead, placement->start);
      if (!after && runs_across_boundary(j, placement->start))
        after = next_boundary_after(placement->start);
      if (!after) break;
      placement = profile.earliest_start(req, duration, horizon, *after);
    }
    if (!placement) continue;
    if (placement->start == now_) {
      profile.reserve(*placement, req.units, duration);
      if (limited && s.user != 0) {
        UserUse* extra = started_of(s.user);
        if (!extra) extra = &started_by.emplace_back(s.user, UserUse{}).second;
        ++extra->jobs;
        extra->nodes += s.nodes;
      }
      to_start.push_back(j);
      to_start_nodes.push_back(placement->slots);
      if (whole_node) {
        free_now -= s.nodes;
        // Nothing else can start now, and the pass's reservations die with it.
        if (free_now == 0) break;
      }
    } else {
      profile.reserve(*placement, req.units, duration);
      reserved_one = true;
    }
  }
  for (std::size_t k = 0; k < to_start.size(); ++k) {
    auto pos = std::find_if(eligible_.begin(), eligible_.end(),
                            [&](const auto& e) { return e.first == to_start[k]; });
    start_job(static_cast<std::size_t>(pos - eligible_.begin()),
              whole_node ? nullptr : &to_start_nodes[k]);
    ++counters_.backfill_starts;
  }
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
  state_.push_back({});
  arrive(j);
  main_needed_ = true;
  return j;
}

void Simulator::cancel(SimJobIndex j) {
  PerJob& p = state_.at(j);
  if (p.state == SimJobState::kPending) {
    std::erase_if(eligible_, [&](const auto& e) { return e.first == j; });
    std::erase(dependency_held_, j);
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
  eligible_.push_back({j, now_});
  mark_dirty(true);
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

bool Simulator::eligible_within_limits(SimJobIndex j) const {
  if (state(j) != SimJobState::kPending || over_user_limit(job(j))) return false;
  return std::any_of(eligible_.begin(), eligible_.end(),
                     [j](const auto& e) { return e.first == j; });
}

bool Simulator::held_by_down_window(SimJobIndex j) const {
  return down_until(now_) && eligible_within_limits(j);
}

bool Simulator::held_by_boundary(SimJobIndex j) const {
  // As pending_view decides it: a down window comes first.
  return spec_.boundaries && !down_until(now_) && runs_across_boundary(j, now_) &&
         eligible_within_limits(j);
}

std::vector<NodeReservation> Simulator::boundary_reservations() const {
  std::vector<NodeReservation> out;
  if (!spec_.boundaries) return out;
  for (auto b = next_boundary_after(now_); b && *b <= now_ + QueueForecast::kHorizon;
       b = next_boundary_after(*b))
    out.push_back({*b, *b + 1, spec_.nodes});
  return out;
}

std::optional<PendingJobView> Simulator::pending_view(SimJobIndex j) const {
  if (state(j) != SimJobState::kPending) return std::nullopt;
  for (const auto& [e, since] : eligible_)
    if (e == j) return pending_view(j, PendingState::kEligible, since);
  if (std::find(dependency_held_.begin(), dependency_held_.end(), j) != dependency_held_.end())
    return pending_view(j, PendingState::kDependency, now_);
  return pending_view(j, PendingState::kNotYetEligible, now_);
}

double Simulator::started_priority(SimJobIndex j) const {
  for (const RunningJob& r : running_)
    if (r.job == j) return r.priority;
  return kUnknownPriority;
}

QueueSnapshot Simulator::snapshot() const {
  QueueSnapshot q;
  q.time = now_;
  q.total_nodes = spec_.nodes;
  q.gpus_per_node = spec_.gpus_per_node;
  q.priority = spec_.priority;
  q.unavailable_nodes = unavailable_nodes();
  // The snapshot is the campaign's (kCampaignUser's): its limits are every user's.
  q.user_limits = spec_.user_limits;
  q.reservations = boundary_reservations();
  // Hidden work is not in the partition's queue: it shows as the nodes it holds, as a live
  // partition shows nodes that other work holds.
  q.pending.reserve(pending_count());
  for (const auto& [j, since] : eligible_)
    if (!hidden(j)) q.pending.push_back(pending_view(j, PendingState::kEligible, since));
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
  q.recent_starts = recent_count_;
  q.recent_mean_wait_s = recent_count_ > 0 ? static_cast<double>(recent_sum_) / recent_count_ : 0.0;
  // Oldest first: the ring's next slot holds the oldest once it is full.
  q.recent_runtime_shares.reserve(static_cast<std::size_t>(recent_ends_));
  const int oldest = recent_ends_ < QueueSnapshot::kRecentEnds ? 0 : recent_end_pos_;
  for (int k = 0; k < recent_ends_; ++k)
    q.recent_runtime_shares.push_back(
        recent_shares_[static_cast<std::size_t>((oldest + k) % QueueSnapshot::kRecentEnds)]);
  return q;
}

Simulator Simulator::fork() const {
  Simulator copy = *this;
  copy.recording_ = false;
  copy.outcomes_.clear();
  copy.outcomes_.shrink_to_fit();
  return copy;
}

Seconds Simulator::planned_start(SimJobSpec spec, Seconds horizon) const {
  // slurmctld's will-run test (job_start_data, 22.05) places the job among the running jobs
  // alone, each to its limit: no pending job, no limit, no change of capacity to come.
  Simulator plan = fork();
  plan.spec_.down = nullptr;  // an outage is not announced: slurmctld cannot plan around it
  plan.next_arrival_ = plan.trace_->size();
  plan.eligible_.clear();
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

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "mirage/core/AvailabilityProfile.h"
#include "mirage/core/QueueForecast.h"
#include "mirage/simulator/HiddenWork.h"
#include "mirage/simulator/Simulator.h"

namespace mirage {
namespace {

// Usage weighted as of t (the decay weight there w): the ended work's, plus what the running
// units have held so far (units x t, less the sum of units x start).
double usage_as_of(double ended, double running, double running_since, double w, double t) {
  return ended + w * (running * t - running_since);
}

}  // namespace

double Simulator::usage_weight(Seconds t) const {
  return std::exp2(static_cast<double>(t - usage_origin_) /
                   static_cast<double>(spec_.priority.decay_half_life));
}

void Simulator::keep_period_start_totals() {
  if (spec_.scheduler.priority_calc_period <= 0 || totals_changed_in_ == priority_at_) return;
  total_usage_at_start_ = total_usage_;
  total_running_at_start_ = total_running_;
  total_running_since_at_start_ = total_running_since_;
  users_at_start_ = shares_.size();
  totals_changed_in_ = priority_at_;
}

Simulator::UserShare& Simulator::changing_share(std::uint32_t user) {
  keep_period_start_totals();
  UserShare& u = shares_[user];
  if (spec_.scheduler.priority_calc_period > 0 && u.changed_in != priority_at_) {
    u.usage_at_start = u.usage;
    u.running_at_start = u.running;
    u.running_since_at_start = u.running_since;
    u.changed_in = priority_at_;
  }
  return u;
}

void Simulator::note_share(const SimJobSpec& s, Seconds start, bool starting) {
  if (spec_.priority.weight_fairshare <= 0 || s.user == 0) return;
  const double units = spec_.allocation == AllocationMode::kGpuGranular
                           ? static_cast<double>(s.nodes) * gpus_needed(s)
                           : static_cast<double>(s.nodes);
  UserShare& u = changing_share(s.user);
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
      shares_.for_each([w](UserShare& share) {
        share.usage /= w;
        share.usage_at_start /= w;
      });
      total_usage_ /= w;
      total_usage_at_start_ /= w;
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
  changing_share(user).usage += used;
  total_usage_ += used;
  ++share_version_;
}

// 2^(-usage share / fair share), with an equal share for every user seen: 1 for a user who has
// used nothing, 0.5 for one who used exactly their share, towards 0 for heavy users.
double Simulator::fairshare_factor(std::uint32_t user) const {
  // Every user with work in the queue has a record (arrive): found without making one, as every
  // pending job of every pass asks.
  UserShare* found = shares_.find(user);
  UserShare& u = found ? *found : shares_[user];
  if (u.factor_at == priority_at() && u.factor_version == factor_version()) return u.factor;
  if (spec_.scheduler.priority_calc_period > 0) return period_start_factor(u);
  if (weight_at_ != now_ || weight_origin_ != usage_origin_) {
    weight_now_ = usage_weight(now_);
    weight_at_ = now_;
    weight_origin_ = usage_origin_;
  }
  const double w = weight_now_;
  const double now = static_cast<double>(now_);
  const double mine = usage_as_of(u.usage, u.running, u.running_since, w, now);
  const double all = usage_as_of(total_usage_, total_running_, total_running_since_, w, now);
  if (all > 0) {
    const double exponent = -static_cast<double>(shares_.size()) * mine / all;
    if (exponent != u.exponent) u.factor = std::exp2(exponent);  // NaN (none yet) differs
    u.exponent = exponent;
  } else {
    u.factor = 1.0;
    u.exponent = std::numeric_limits<double>::quiet_NaN();
  }
  u.factor_at = priority_at();
  u.factor_version = factor_version();
  return u.factor;
}

double Simulator::period_start_factor(UserShare& u) const {
  const Seconds at = priority_at_;
  const bool mine_kept = u.changed_in == at, all_kept = totals_changed_in_ == at;
  const double w = usage_weight(at), t = static_cast<double>(at);
  const double mine =
      mine_kept ? usage_as_of(u.usage_at_start, u.running_at_start, u.running_since_at_start, w, t)
                : usage_as_of(u.usage, u.running, u.running_since, w, t);
  const double all = all_kept
                         ? usage_as_of(total_usage_at_start_, total_running_at_start_,
                                       total_running_since_at_start_, w, t)
                         : usage_as_of(total_usage_, total_running_, total_running_since_, w, t);
  const auto users = static_cast<double>(all_kept ? users_at_start_ : shares_.size());
  u.factor = all > 0 ? std::exp2(-users * mine / all) : 1.0;
  u.factor_at = at;
  u.factor_version = 0;
  return u.factor;
}

double Simulator::size_part(const SimJobSpec& s) const {
  const double units = spec_.allocation == AllocationMode::kGpuGranular
                           ? static_cast<double>(s.nodes) * gpus_needed(s)
                           : static_cast<double>(s.nodes);
  return spec_.priority.size_part(units / static_cast<double>(spec_.capacity_units()));
}

double Simulator::fairshare_of(std::uint32_t user) const {
  if (spec_.priority.weight_fairshare <= 0) return 0.0;
  return user != 0 ? fairshare_factor(user) : 0.5;
}

// PriorityParameters::score's sum, in its order: the same figure from a size part kept.
double Simulator::priority_of(const SimJobSpec& s, Seconds eligible_since) const {
  return spec_.priority.age_part(priority_at() - eligible_since) + size_part(s) +
         spec_.priority.weight_fairshare * fairshare_of(s.user);
}

void Simulator::refresh_user_factors() {
  if (factors_at_ == priority_at() && factors_version_ == factor_version()) return;
  for (EligibleUser& u : eligible_users_)
    if (u.jobs > 0) slot_factor(u);
  factors_at_ = priority_at();
  factors_version_ = factor_version();
}

const std::vector<Simulator::Ranked>& Simulator::ranked_eligible() {
  std::vector<Ranked>& ranked = bf_.ranked;
  const bool same_jobs = bf_.ranked_at == priority_at() && bf_.ranked_changes == eligible_changes_;
  if (same_jobs && bf_.ranked_shares == factor_version()) return ranked;
  refresh_user_factors();
  bf_.ranked_shares = factor_version();
  if (same_jobs) {
    // The same instant and jobs (a start took one out): a priority moves only with its user's
    // factor, and is then the same sum as below.
    bool moved = false;
    for (const EligibleUser& u : eligible_users_)
      moved |= u.jobs > 0 && u.fairshare != u.ranked_with;
    if (moved)
      for (std::size_t i = 0; i < eligible_.size(); ++i)
        if (const EligibleUser& u = eligible_users_[eligible_[i].slot];
            u.fairshare != u.ranked_with)
          ranked[i].priority = priority_from(eligible_[i], u.fairshare);
  } else if (bf_.ranked_changes == eligible_changes_ && ranked.size() == eligible_.size()) {
    // The same jobs in the same places at a later instant: only the priorities move.
    for (std::size_t i = 0; i < eligible_.size(); ++i) {
      const EligibleJob& e = eligible_[i];
      ranked[i].priority = priority_from(e, eligible_users_[e.slot].fairshare);
    }
    bf_.ranked_at = priority_at();
    if (check_kept_rankings_) {
      ++counters_.kept_rankings;
      for (std::size_t i = 0; i < eligible_.size(); ++i) {
        const EligibleJob& e = eligible_[i];
        const Ranked& r = ranked[i];
        if (r.job != e.job || r.nodes != e.nodes || r.user != e.user || r.submit != e.submit ||
            r.planned != e.planned || r.priority != eligible_priority(e)) {
          ++counters_.kept_rankings_wrong;
          break;
        }
      }
    }
  } else {
    ranked.resize(eligible_.size());
    for (std::size_t i = 0; i < eligible_.size(); ++i) {
      const EligibleJob& e = eligible_[i];
      const double priority = priority_from(e, eligible_users_[e.slot].fairshare);
      ranked[i] = {e.job, e.nodes, e.user, priority, e.submit, e.planned};
    }
    bf_.ranked_at = priority_at();
    bf_.ranked_changes = eligible_changes_;
  }
  for (EligibleUser& u : eligible_users_) u.ranked_with = u.fairshare;
  return ranked;
}

double Simulator::started_priority(SimJobIndex j) const {
  for (const RunningJob& r : running_)
    if (r.job == j) return r.priority;
  return kUnknownPriority;
}

}  // namespace mirage

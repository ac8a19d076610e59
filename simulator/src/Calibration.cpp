#include "mirage/simulator/Calibration.h"

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

namespace mirage {
namespace {

// A step function of time built from +/- events: the value from each event time on.
struct Steps {
  std::vector<Seconds> times;
  std::vector<int> values;
  static Steps from_events(std::vector<std::pair<Seconds, int>> events) {
    // Ends before starts at the same instant: a node freed and taken in the same second is
    // never held twice.
    std::sort(events.begin(), events.end());
    Steps s;
    int v = 0;
    for (const auto& [t, d] : events) {
      v += d;
      if (!s.times.empty() && s.times.back() == t)
        s.values.back() = v;
      else {
        s.times.push_back(t);
        s.values.push_back(v);
      }
    }
    return s;
  }
  int at(Seconds t) const {
    const auto it = std::upper_bound(times.begin(), times.end(), t);
    return it == times.begin() ? 0 : values[static_cast<std::size_t>(it - times.begin()) - 1];
  }
  int max_in(Seconds from, Seconds to) const {  // over [from, to)
    int m = at(from);
    auto it = std::upper_bound(times.begin(), times.end(), from);
    for (; it != times.end() && *it < to; ++it)
      m = std::max(m, values[static_cast<std::size_t>(it - times.begin())]);
    return m;
  }
};

// The limit a log shows: the most any user reached, when at least `min_users` reached it.
int limit_signature(const std::vector<int>& per_user_max, int min_users, int& at_limit) {
  const int most =
      per_user_max.empty() ? 0 : *std::max_element(per_user_max.begin(), per_user_max.end());
  at_limit = static_cast<int>(std::count(per_user_max.begin(), per_user_max.end(), most));
  return most >= 1 && at_limit >= min_users ? most : 0;
}

}  // namespace

Calibration infer_calibration(const std::vector<Job>& all, const ClusterSpec& spec,
                              const CalibrationSettings& settings) {
  Calibration c;
  std::vector<const Job*> jobs;
  for (const Job& j : all)
    if (j.started() && j.end != kUnknownTime && j.end >= j.start) jobs.push_back(&j);
  if (jobs.empty()) return c;

  // Per-user running jobs and nodes over time.
  std::unordered_map<std::string, std::vector<std::pair<Seconds, int>>> job_events, node_events;
  std::vector<std::pair<Seconds, int>> occupancy;
  for (const Job* j : jobs) {
    occupancy.emplace_back(j->start, j->nodes);
    occupancy.emplace_back(j->end, -j->nodes);
    if (j->user.empty()) continue;
    job_events[j->user].emplace_back(j->start, 1);
    job_events[j->user].emplace_back(j->end, -1);
    node_events[j->user].emplace_back(j->start, j->nodes);
    node_events[j->user].emplace_back(j->end, -j->nodes);
  }
  std::unordered_map<std::string, Steps> user_jobs, user_nodes;
  std::vector<int> most_jobs, most_nodes;
  for (auto& [user, events] : job_events) {
    Steps s = Steps::from_events(std::move(events));
    most_jobs.push_back(s.values.empty() ? 0 : *std::max_element(s.values.begin(), s.values.end()));
    user_jobs.emplace(user, std::move(s));
  }
  for (auto& [user, events] : node_events) {
    Steps s = Steps::from_events(std::move(events));
    most_nodes.push_back(s.values.empty() ? 0
                                          : *std::max_element(s.values.begin(), s.values.end()));
    user_nodes.emplace(user, std::move(s));
  }
  c.users = static_cast<int>(user_jobs.size());
  c.user_limits.max_running_jobs =
      limit_signature(most_jobs, settings.limit_min_users, c.users_at_job_limit);
  c.user_limits.max_running_nodes =
      limit_signature(most_nodes, settings.limit_min_users, c.users_at_node_limit);

  if (spec.allocation != AllocationMode::kWholeNode) return c;

  // Capacity: one figure per window.
  const Steps used = Steps::from_events(std::move(occupancy));
  Seconds first = jobs.front()->submit, last = 0;
  for (const Job* j : jobs) {
    first = std::min(first, j->submit);
    last = std::max(last, j->end);
  }
  const Seconds w = std::max<Seconds>(1, settings.capacity_window);
  const Seconds origin = first - ((first % w) + w) % w;
  const auto windows = static_cast<std::size_t>((last - origin) / w + 1);
  c.windows = static_cast<int>(windows);
  std::vector<char> congested(windows, 0);
  const UserLimits& lim = c.user_limits;
  auto held_by_limits = [&](const Job& j, Seconds t) {
    if (j.user.empty()) return false;
    if (lim.max_running_jobs > 0 && user_jobs.at(j.user).at(t) >= lim.max_running_jobs) return true;
    return lim.max_running_nodes > 0 &&
           user_nodes.at(j.user).at(t) + j.nodes > lim.max_running_nodes;
  };
  const Seconds step = std::max<Seconds>(1, settings.sample_every);
  for (const Job* j : jobs) {
    if (j->start - j->submit < step) continue;  // no sampled instant sees it waiting
    for (Seconds t = j->submit + step; t < j->start;) {
      const auto k = static_cast<std::size_t>((t - origin) / w);
      if (congested[k]) {  // nothing more to learn in this window: skip to the next
        t = origin + static_cast<Seconds>(k + 1) * w;
        t += (step - (t - j->submit) % step) % step;
        continue;
      }
      if (!held_by_limits(*j, t)) congested[k] = 1;
      t += step;
    }
  }
  double unavailable_sum = 0;
  for (std::size_t k = 0; k < windows; ++k) {
    const Seconds from = origin + static_cast<Seconds>(k) * w;
    int unavailable = 0;
    if (congested[k]) {
      ++c.congested_windows;
      unavailable = std::clamp(spec.nodes - used.max_in(from, from + w), 0, spec.nodes - 1);
    }
    unavailable_sum += unavailable;
    if (c.unavailable.empty() ? unavailable != 0
                              : c.unavailable.back().unavailable_nodes != unavailable)
      c.unavailable.push_back({from, unavailable});
  }
  // After the log, the whole machine again: no job is left waiting for a window that never ends.
  if (!c.unavailable.empty() && c.unavailable.back().unavailable_nodes != 0)
    c.unavailable.push_back({origin + static_cast<Seconds>(windows) * w, 0});
  c.mean_unavailable = unavailable_sum / static_cast<double>(windows);
  return c;
}

void apply_calibration(const Calibration& calibration, ClusterSpec& spec) {
  spec.user_limits = calibration.user_limits;
  spec.unavailable =
      calibration.unavailable.empty()
          ? nullptr
          : std::make_shared<const std::vector<CapacityStep>>(calibration.unavailable);
}

}  // namespace mirage

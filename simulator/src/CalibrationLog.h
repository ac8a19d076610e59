#pragma once
// What a log shows, indexed for the questions every part of the calibration asks (who ran what
// when), and the rules a waiting job may have been held by. Internal to the inference.
#include <algorithm>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mirage/core/ClusterSpec.h"
#include "mirage/core/Job.h"
#include "mirage/simulator/Calibration.h"

namespace mirage::calibration {

// A step function of time built from +/- events: the value from each event time on.
struct Steps {
  std::vector<Seconds> times;
  std::vector<int> values;

  static Steps from_events(std::vector<std::pair<Seconds, int>> events) {
    // Ends (negative) before starts at the same instant: a node freed and taken in one second
    // is never counted twice.
    std::sort(events.begin(), events.end());
    Steps s;
    int v = 0;
    for (const auto& [t, d] : events) {
      v += d;
      if (!s.times.empty() && s.times.back() == t) {
        s.values.back() = v;
      } else {
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
    for (auto it = std::upper_bound(times.begin(), times.end(), from);
         it != times.end() && *it < to; ++it)
      m = std::max(m, values[static_cast<std::size_t>(it - times.begin())]);
    return m;
  }
  int most() const { return values.empty() ? 0 : *std::max_element(values.begin(), values.end()); }
  // The least value over [from, to), and the first instant it holds.
  std::pair<int, Seconds> lowest_in(Seconds from, Seconds to) const {
    std::pair<int, Seconds> low{at(from), from};
    for (auto it = std::upper_bound(times.begin(), times.end(), from);
         it != times.end() && *it < to; ++it)
      if (const int v = values[static_cast<std::size_t>(it - times.begin())]; v < low.first)
        low = {v, *it};
    return low;
  }
  // The most held for at least `share` of [from, to) in all (0: at any moment, max_in).
  int held_for(Seconds from, Seconds to, double share) const {
    if (share <= 0) return max_in(from, to);
    std::vector<std::pair<int, Seconds>> spans;  // value, how long
    Seconds since = from;
    int v = at(from);
    for (auto it = std::upper_bound(times.begin(), times.end(), from);
         it != times.end() && *it < to; ++it) {
      spans.emplace_back(v, *it - since);
      since = *it;
      v = values[static_cast<std::size_t>(it - times.begin())];
    }
    spans.emplace_back(v, to - since);
    std::sort(spans.begin(), spans.end(), std::greater<>());
    const double needed = share * static_cast<double>(to - from);
    Seconds held = 0;
    for (const auto& [value, span] : spans)
      if ((held += span) >= needed) return value;
    return spans.back().first;
  }
};

// What the log shows, indexed for the questions the inference asks: who ran what when.
struct LogView {
  std::vector<const Job*> jobs;  // those with a real start and end
  Steps used;                    // nodes the log's jobs held
  std::unordered_map<std::string, Steps> user_jobs, user_nodes;
  // Each user's jobs in the order they ended (dependencies and followers look back along it).
  std::unordered_map<std::string, std::vector<const Job*>> ends;

  explicit LogView(const std::vector<Job>& all) {
    std::unordered_map<std::string, std::vector<std::pair<Seconds, int>>> job_events, node_events;
    std::vector<std::pair<Seconds, int>> occupancy;
    for (const Job& j : all) {
      if (!j.started() || j.end == kUnknownTime || j.end < j.start) continue;
      jobs.push_back(&j);
      occupancy.emplace_back(j.start, j.nodes);
      occupancy.emplace_back(j.end, -j.nodes);
      if (j.user.empty()) continue;
      ends[j.user].push_back(&j);
      job_events[j.user].emplace_back(j.start, 1);
      job_events[j.user].emplace_back(j.end, -1);
      node_events[j.user].emplace_back(j.start, j.nodes);
      node_events[j.user].emplace_back(j.end, -j.nodes);
    }
    used = Steps::from_events(std::move(occupancy));
    for (auto& [user, events] : job_events)
      user_jobs.emplace(user, Steps::from_events(std::move(events)));
    for (auto& [user, events] : node_events)
      user_nodes.emplace(user, Steps::from_events(std::move(events)));
    for (auto& [user, list] : ends)
      std::sort(list.begin(), list.end(), [](const Job* a, const Job* b) {
        return a->end != b->end ? a->end < b->end : a->id < b->id;
      });
  }

  // Would the limits have held `j` back at `t` (its user's other jobs running then)?
  bool held_by_limits(const Job& j, Seconds t, const UserLimits& lim) const {
    if (j.user.empty()) return false;
    if (lim.max_running_jobs > 0 && user_jobs.at(j.user).at(t) >= lim.max_running_jobs) return true;
    return lim.max_running_nodes > 0 &&
           user_nodes.at(j.user).at(t) + j.nodes > lim.max_running_nodes;
  }
};

// The log's jobs by their start (ties by id).
inline std::vector<const Job*> jobs_by_start(const LogView& log) {
  std::vector<const Job*> by_start = log.jobs;
  std::sort(by_start.begin(), by_start.end(), [](const Job* a, const Job* b) {
    return a->start != b->start ? a->start < b->start : a->id < b->id;
  });
  return by_start;
}

// Whether `j`, waiting at `t`, was held by what the log shows of the cluster's rules: its user's
// limits, a boundary its time limit would have run across, or a down window.
inline bool held_by_rules(const LogView& log, const Job& j, Seconds t, const Calibration& c) {
  return log.held_by_limits(j, t, c.user_limits) ||
         runs_across_boundary(c.boundaries, t, j.time_limit) || down_until(c.down, t).has_value();
}

inline int capacity_at(const Calibration& c, const ClusterSpec& spec, Seconds t) {
  const auto it = std::upper_bound(c.unavailable.begin(), c.unavailable.end(), t,
                                   [](Seconds v, const CapacityStep& s) { return v < s.from; });
  return spec.nodes - (it == c.unavailable.begin() ? 0 : std::prev(it)->unavailable_nodes);
}

}  // namespace mirage::calibration

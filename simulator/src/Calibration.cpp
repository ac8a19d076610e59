#include "mirage/simulator/Calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <future>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "mirage/simulator/Fidelity.h"
#include "mirage/simulator/Simulator.h"

namespace mirage {
namespace {

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

// The limit a log shows: the most any user reached, when at least `min_users` reached it.
int limit_signature(const std::vector<int>& per_user_max, int min_users, int& at_limit) {
  const int most =
      per_user_max.empty() ? 0 : *std::max_element(per_user_max.begin(), per_user_max.end());
  at_limit = static_cast<int>(std::count(per_user_max.begin(), per_user_max.end(), most));
  return most >= 1 && at_limit >= min_users ? most : 0;
}

void infer_limits(const LogView& log, const CalibrationSettings& settings, Calibration& c) {
  std::vector<int> most_jobs, most_nodes;
  for (const auto& [user, steps] : log.user_jobs) most_jobs.push_back(steps.most());
  for (const auto& [user, steps] : log.user_nodes) most_nodes.push_back(steps.most());
  c.users = static_cast<int>(log.user_jobs.size());
  c.user_limits.max_running_jobs =
      limit_signature(most_jobs, settings.limit_min_users, c.users_at_job_limit);
  c.user_limits.max_running_nodes =
      limit_signature(most_nodes, settings.limit_min_users, c.users_at_node_limit);
}

// Weekly boundaries: per stretch of settings.boundary_stretch, the hours of the day that the time
// limits of few of the log's jobs ran across on weekdays, or on weekend days (as a recurring
// reservation holds on WEEKDAY or WEEKEND): at most boundary_share of the median hour of the
// week's count, and fewer than either neighbouring hour's (a switch, not a quiet night, nor a
// machine down for a day, which one day in twenty barely moves). Consecutive stretches with the
// same hours make one period.
void infer_boundaries(const LogView& log, const CalibrationSettings& settings, Calibration& c) {
  constexpr int kHours = static_cast<int>(kWeek / kHour);
  constexpr int kLeastEvidence = 8;  // the median hour's count, below which a stretch says nothing
  Seconds first = log.jobs.front()->start, last = first;
  for (const Job* j : log.jobs) {
    first = std::min(first, j->start);
    last = std::max(last, j->start);
  }
  const Seconds len = std::max<Seconds>(kWeek, settings.boundary_stretch / kWeek * kWeek);
  const Seconds origin = week_start(first);
  const auto stretches = static_cast<std::size_t>((last - origin) / len + 1);
  std::vector<std::vector<int>> across(stretches, std::vector<int>(kHours, 0));
  for (const Job* j : log.jobs) {
    const Seconds end = j->start + std::min<Seconds>(j->time_limit, len);
    for (Seconds b = (j->start / kHour + 1) * kHour; b < end; b += kHour) {
      const auto k = static_cast<std::size_t>((b - origin) / len);
      if (k < stretches) ++across[k][static_cast<std::size_t>((b - week_start(b)) / kHour)];
    }
  }
  for (std::size_t k = 0; k < stretches; ++k) {
    const std::vector<int>& n = across[k];
    std::vector<int> sorted = n;
    std::nth_element(sorted.begin(), sorted.begin() + kHours / 2, sorted.end());
    const int median = sorted[kHours / 2];
    if (median < kLeastEvidence) continue;
    std::vector<Seconds> offsets;
    // Days 0-4 (Monday to Friday) and 5-6, each hour of the day pooled over them.
    for (const auto& [day0, days] : {std::pair{0, 5}, std::pair{5, 2}}) {
      const auto pooled = [&](int h) {
        h = (h + 24) % 24;
        double sum = 0;
        for (int d = day0; d < day0 + days; ++d) sum += n[static_cast<std::size_t>(d * 24 + h)];
        return sum / days;
      };
      for (int h = 0; h < 24; ++h)
        if (pooled(h) <= settings.boundary_share * median && pooled(h) < pooled(h - 1) &&
            pooled(h) < pooled(h + 1))
          for (int d = day0; d < day0 + days; ++d) offsets.push_back((d * 24 + h) * kHour);
    }
    if (offsets.empty()) continue;
    std::sort(offsets.begin(), offsets.end());
    const Seconds from = origin + static_cast<Seconds>(k) * len;
    if (!c.boundaries.empty() && c.boundaries.back().to == from &&
        c.boundaries.back().offsets == offsets)
      c.boundaries.back().to = from + len;
    else
      c.boundaries.push_back({from, from + len, std::move(offsets)});
  }
}

// A job that may have waited for another of its user's: that job, and whether the two are members
// of a throttled array.
struct WaitedFor {
  const Job* job = nullptr;
  bool array_member = false;
};
using DependencyCandidates = std::unordered_map<const Job*, WaitedFor>;

// Whether `j`, waiting at `t`, was held by what the log shows of the cluster's rules: its user's
// limits, a boundary its time limit would have run across, or a down window.
bool held_by_rules(const LogView& log, const Job& j, Seconds t, const Calibration& c) {
  return log.held_by_limits(j, t, c.user_limits) ||
         runs_across_boundary(c.boundaries, t, j.time_limit) || down_until(c.down, t).has_value();
}

// Down windows: each stretch of at least settings.down_min between two consecutive starts of the
// log in which the nodes its jobs held fell to settings.down_share of the machine (for longer than
// a scheduler takes to react) while a job that would have fitted in the rest waited, its limits
// and the boundaries not holding it: a running scheduler would have started it. The window runs
// from just after the one start to the next.
void infer_down_windows(const LogView& log, const ClusterSpec& spec,
                        const CalibrationSettings& settings, Calibration& c) {
  std::vector<const Job*> by_start = log.jobs;
  std::sort(by_start.begin(), by_start.end(),
            [](const Job* a, const Job* b) { return a->start < b->start; });
  std::vector<Seconds> submits;  // to count the jobs submitted by an instant
  submits.reserve(log.jobs.size());
  for (const Job* j : log.jobs) submits.push_back(j->submit);
  std::sort(submits.begin(), submits.end());
  const double most_held = settings.down_share * spec.nodes;
  for (std::size_t i = 0; i + 1 < by_start.size(); ++i) {
    const Seconds from = by_start[i]->start + 1, to = by_start[i + 1]->start;
    if (to - from + 1 < settings.down_min) continue;
    // Running work only ends in the stretch; its last minutes (settings.sample_every) are left
    // out, a scheduler's reaction to an end, not a machine left idle.
    const auto [held, t] = log.used.lowest_in(from, to - settings.sample_every);
    if (held > most_held) continue;
    // The jobs waiting at t all start at or after `to`: go through them in start order until
    // one fits, or every job waiting then has been seen.
    const auto submitted = static_cast<std::size_t>(
        std::upper_bound(submits.begin(), submits.end(), t) - submits.begin());
    std::size_t waiting = submitted > i + 1 ? submitted - (i + 1) : 0;
    bool fitted = false;
    for (std::size_t k = i + 1; k < by_start.size() && waiting > 0 && !fitted; ++k) {
      const Job& j = *by_start[k];
      if (j.submit > t) continue;
      --waiting;
      fitted = j.nodes <= spec.nodes - held && !held_by_rules(log, j, t, c);
    }
    if (fitted) c.down.push_back({from, to});
  }
}

// The capacity windows a log spans: `count` of `length`, the first from `origin`.
struct Windows {
  Seconds origin = 0, length = kDay;
  std::size_t count = 0;
};

Windows capacity_windows(const LogView& log, const CalibrationSettings& settings) {
  Seconds first = log.jobs.front()->submit, last = 0;
  for (const Job* j : log.jobs) {
    first = std::min(first, j->submit);
    last = std::max(last, j->end);
  }
  Windows win;
  win.length = std::max<Seconds>(1, settings.capacity_window);
  win.origin = first - ((first % win.length) + win.length) % win.length;
  win.count = static_cast<std::size_t>((last - win.origin) / win.length + 1);
  return win;
}

// Per capacity window, the room that stood idle where waiting jobs fitted it: at each instant of
// a grid (every settings.sample_every from the windows' origin) at which a job waited that nothing
// the log shows held back (its user's limits, a boundary, a down window) and that may not have
// waited for its user's own job (`skip`), the nodes the log's jobs left free where the smallest
// such job fitted in them, else none (a large job waiting while the machine drains for it is no
// evidence of room); their mean per window, and how many instants (none: the window says nothing).
struct IdleBesideWaits {
  std::vector<double> mean;
  std::vector<int> instants;

  // Over every instant of every window.
  double pooled() const {
    double sum = 0;
    long n = 0;
    for (std::size_t k = 0; k < mean.size(); ++k) {
      sum += mean[k] * instants[k];
      n += instants[k];
    }
    return n > 0 ? sum / static_cast<double>(n) : 0.0;
  }
};

IdleBesideWaits idle_beside_waits(const LogView& log, const ClusterSpec& spec, const Calibration& c,
                                  const std::unordered_set<JobId>& skip, const Windows& win,
                                  Seconds step) {
  const auto grid =
      static_cast<std::size_t>((static_cast<Seconds>(win.count) * win.length + step - 1) / step);
  constexpr int kNone = std::numeric_limits<int>::max();
  std::vector<int> smallest(grid, kNone);  // the fewest nodes a job waiting then asked for
  for (const Job* j : log.jobs) {
    if (skip.count(j->id)) continue;
    // The first grid instant after its submission.
    for (Seconds t = win.origin + ((j->submit - win.origin) / step + 1) * step; t < j->start;
         t += step) {
      const auto i = static_cast<std::size_t>((t - win.origin) / step);
      if (i >= grid) break;
      if (j->nodes < smallest[i] && !held_by_rules(log, *j, t, c)) smallest[i] = j->nodes;
    }
  }
  IdleBesideWaits out{std::vector<double>(win.count, 0), std::vector<int>(win.count, 0)};
  for (std::size_t i = 0; i < grid; ++i) {
    if (smallest[i] == kNone) continue;
    const Seconds t = win.origin + static_cast<Seconds>(i) * step;
    const auto k = static_cast<std::size_t>((t - win.origin) / win.length);
    const int idle = std::max(0, spec.nodes - log.used.at(t));
    if (smallest[i] <= idle) out.mean[k] += idle;
    ++out.instants[k];
  }
  for (std::size_t k = 0; k < win.count; ++k)
    if (out.instants[k] > 0) out.mean[k] /= out.instants[k];
  return out;
}

// The hidden room of each congested window: those of `room_seen` (room_evidence), each with the
// nodes the log's jobs did not hold for settings.capacity_share of it as held by hidden work.
void infer_capacity(const LogView& log, const ClusterSpec& spec,
                    const CalibrationSettings& settings, const std::vector<char>& room_seen,
                    Calibration& c) {
  const Windows win = capacity_windows(log, settings);
  const Seconds w = win.length, origin = win.origin;
  const std::size_t windows = win.count;
  c.window = w;
  c.capacity_share = settings.capacity_share;
  c.windows = static_cast<int>(windows);
  double unavailable_sum = 0;
  for (std::size_t k = 0; k < windows; ++k) {
    const Seconds from = origin + static_cast<Seconds>(k) * w;
    int unavailable = 0;
    if (room_seen[k]) {
      ++c.congested_windows;
      unavailable =
          std::clamp(spec.nodes - log.used.held_for(from, from + w, settings.capacity_share), 0,
                     spec.nodes - 1);
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
}

// The most of `members` the log ran at once (a member that ran no time running for a second).
int most_running_at_once(const std::vector<const Job*>& members) {
  std::vector<std::pair<Seconds, int>> events;
  for (const Job* j : members) {
    events.emplace_back(j->start, 1);
    events.emplace_back(std::max(j->end, j->start + 1), -1);
  }
  return Steps::from_events(std::move(events)).most();
}

// Throttled arrays (Calibration.h): each member that waited, after the first K the log started,
// with the member whose end freed its slot: of the earlier-started members that had ended by its
// start and freed no other's slot, the one that ended last (with equal runs, the member started
// K before it). Never one still running when it started: the log would contradict the replay.
// Added to `out` in place of any other candidate of the member's.
void add_throttled_array_members(const LogView& log, const CalibrationSettings& settings,
                                 DependencyCandidates& out) {
  const Seconds step = std::max<Seconds>(1, settings.sample_every);
  using Request = std::tuple<std::string, Seconds, int, int, Seconds>;
  std::map<Request, std::vector<const Job*>> together;
  for (const Job* j : log.jobs)
    if (!j->user.empty())
      together[{j->user, j->submit, j->nodes, j->gpus_per_node, j->time_limit}].push_back(j);
  for (auto& [request, members] : together) {
    if (members.size() < std::max<std::size_t>(2, settings.array_min_members)) continue;
    const auto throttle = static_cast<std::size_t>(most_running_at_once(members));
    if (throttle >= members.size()) continue;
    // In the order the log started them: every dependency then points to an earlier start, as
    // the other candidates' do, and none can close a cycle.
    std::sort(members.begin(), members.end(), [](const Job* a, const Job* b) {
      return a->start != b->start ? a->start < b->start : a->id < b->id;
    });
    std::vector<const Job*> by_end = members;
    std::sort(by_end.begin(), by_end.end(), [](const Job* a, const Job* b) {
      return a->end != b->end ? a->end < b->end : a->id < b->id;
    });
    const auto later_end = [](const Job* a, const Job* b) { return a->end < b->end; };
    std::vector<const Job*> freed;  // a max-heap by end: ended, and no slot taken over yet
    std::size_t ended = 0;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const Job* b = members[i];
      while (ended < by_end.size() && by_end[ended]->end <= b->start) {
        if (by_end[ended]->start < b->start) {
          freed.push_back(by_end[ended]);
          std::push_heap(freed.begin(), freed.end(), later_end);
        }
        ++ended;
      }
      if (i < throttle || freed.empty() || b->start - b->submit < step) continue;
      std::pop_heap(freed.begin(), freed.end(), later_end);
      out[b] = WaitedFor{freed.back(), true};
      freed.pop_back();
    }
  }
}

// Jobs that started as the same user's earlier job ended, after waiting, while the limits did
// not hold them: each with the job it may have waited for; and the members of throttled arrays,
// each with the member it waited for (in place of any other).
DependencyCandidates dependency_candidates(const LogView& log, const CalibrationSettings& settings,
                                           const Calibration& c) {
  const Seconds step = std::max<Seconds>(1, settings.sample_every);
  DependencyCandidates out;
  for (const Job* b : log.jobs) {
    if (b->user.empty() || b->start - b->submit < step) continue;
    if (held_by_rules(log, *b, b->start - 1, c)) continue;
    const auto& list = log.ends.at(b->user);
    auto it = std::upper_bound(list.begin(), list.end(), b->start,
                               [](Seconds t, const Job* j) { return t < j->end; });
    while (it != list.begin()) {
      const Job* a = *--it;
      if (a->end < b->start - settings.dependency_slack) break;
      // Started before b (so no two jobs ever wait for each other), and still running well
      // after b was submitted.
      if (a != b && a->start < b->start && a->submit <= b->submit && a->end >= b->submit + step) {
        out.emplace(b, WaitedFor{a, false});
        break;
      }
    }
  }
  if (settings.arrays) add_throttled_array_members(log, settings, out);
  return out;
}

// Jobs submitted within settings.feedback_within of the end of their user's latest-ended job
// (which started before they were submitted), and not already replayed as dependent on a job.
void infer_followers(const LogView& log, const CalibrationSettings& settings, Calibration& c) {
  c.followers.clear();
  c.feedback = settings.feedback;
  if (!settings.feedback) return;
  std::unordered_map<JobId, char> dependent;
  for (const auto& [job, after] : c.dependencies) dependent.emplace(job, 1);
  for (const Job* b : log.jobs) {
    if (b->user.empty() || dependent.count(b->id)) continue;
    const auto& list = log.ends.at(b->user);
    auto it = std::upper_bound(list.begin(), list.end(), b->submit,
                               [](Seconds t, const Job* j) { return t < j->end; });
    if (it == list.begin()) continue;
    const Job* a = *std::prev(it);
    if (a != b && a->start < b->submit && b->submit - a->end <= settings.feedback_within)
      c.followers.push_back({b->id, a->id, b->submit - a->end});
  }
}

int capacity_at(const Calibration& c, const ClusterSpec& spec, Seconds t) {
  const auto it = std::upper_bound(c.unavailable.begin(), c.unavailable.end(), t,
                                   [](Seconds v, const CapacityStep& s) { return v < s.from; });
  return spec.nodes - (it == c.unavailable.begin() ? 0 : std::prev(it)->unavailable_nodes);
}

// A candidate is a dependency when at some moment of its wait the cluster had room for it and its
// limits did not hold it: nothing but the job it waited for explains the wait.
void confirm_dependencies(const LogView& log, const ClusterSpec& spec,
                          const CalibrationSettings& settings,
                          const DependencyCandidates& candidates, Calibration& c) {
  const Seconds step = std::max<Seconds>(1, settings.sample_every);
  for (const Job* b : log.jobs) {
    const auto it = candidates.find(b);
    if (it == candidates.end()) continue;
    const Job* a = it->second.job;
    bool room = false;
    for (Seconds t = b->submit + step; t < a->end && !room; t += step)
      room = !held_by_rules(log, *b, t, c) && log.used.at(t) + b->nodes <= capacity_at(c, spec, t);
    if (!room) continue;
    // A link outside an array is kept only where the log's links stand out from chance
    // (test_links_against_chance); an array's throttle is its own evidence.
    if (!it->second.array_member && !c.links_told_apart) continue;
    c.dependencies.emplace_back(b->id, a->id);
    if (it->second.array_member) ++c.array_members;
  }
}

}  // namespace

namespace {

// The log as the machine calibrated with `c` (less its priority) replays it: the jobs it can run,
// with their dependencies. Nothing when no job has a real start to compare with.
struct CalibratedReplay {
  std::vector<Job> jobs;
  ClusterSpec machine;
  std::shared_ptr<const std::vector<SimJobSpec>> sim_jobs;
  bool users = false;  // whether the log names them (fairshare needs them)
};

std::optional<CalibratedReplay> calibrated_replay(const std::vector<Job>& all,
                                                  const ClusterSpec& spec, const Calibration& c) {
  CalibratedReplay r;
  r.jobs.reserve(all.size());
  for (const Job& j : all)
    if (j.nodes > 0 && j.nodes <= spec.nodes &&
        (spec.allocation != AllocationMode::kGpuGranular ||
         j.gpus_per_node <= spec.gpus_per_node)) {
      r.jobs.push_back(j);
      r.users = r.users || !j.user.empty();
    }
  r.machine = spec;
  Calibration parts = c;
  parts.priority.reset();
  apply_calibration(parts, r.machine, r.jobs);
  if (std::none_of(r.jobs.begin(), r.jobs.end(), [](const Job& j) { return j.started(); }))
    return std::nullopt;
  r.sim_jobs = std::make_shared<const std::vector<SimJobSpec>>(to_sim_jobs(r.jobs));
  return r;
}

// A whole replay of the log: its figures against the log's waits, and each job's start.
struct ReplayOutcome {
  WaitFidelity figures;
  std::shared_ptr<const std::vector<Seconds>> waits;
};

// The log replayed on `r`'s machine with the weights `p`.
ReplayOutcome replay_outcome(const CalibratedReplay& r, const PriorityParameters& p) {
  ClusterSpec m = r.machine;
  m.priority = p;
  Simulator sim(m, r.sim_jobs);
  sim.set_recording(false);
  sim.run_to_completion();
  auto waits = std::make_shared<const std::vector<Seconds>>(sim.waits(r.jobs.size()));
  std::size_t without_start = 0;
  return ReplayOutcome{measure_overall_fidelity(pair_waits(r.jobs, *waits, 0, 0, without_start)),
                       std::move(waits)};
}

// The same on a thread of its own, so that several replays run side by side.
std::future<ReplayOutcome> replay_outcome_async(const CalibratedReplay& r,
                                                const PriorityParameters& p) {
  return std::async(std::launch::async, [&r, p] { return replay_outcome(r, p); });
}

// Replays each weighting and returns the index of the one whose waits miss the targets least,
// with its outcome.
std::pair<std::size_t, ReplayOutcome> closest_weighting(
    const CalibratedReplay& r, const std::vector<PriorityParameters>& weightings) {
  std::vector<std::future<ReplayOutcome>> runs;
  for (const PriorityParameters& p : weightings) runs.push_back(replay_outcome_async(r, p));
  std::pair<std::size_t, ReplayOutcome> best{0, {}};
  for (std::size_t i = 0; i < weightings.size(); ++i) {
    ReplayOutcome o = runs[i].get();
    if (i == 0 || closer_to_targets(o.figures, best.second.figures)) best = {i, std::move(o)};
  }
  return best;
}

// Whether a trial replay lies less far outside the fidelity targets than the kept one: one that
// fits the log no worse leaves the kept one in place.
bool lies_less_far_outside(const WaitFidelity& trial, const WaitFidelity& kept) {
  return trial.target_miss() < kept.target_miss() - 1e-9;
}

void record_replay(const ReplayOutcome& o, PriorityFit& fit) {
  fit.replay = o.figures;
  fit.replay_waits = o.waits;
}

// The log as the machine calibrated with `c` (its weights, where it has them) replays it, written
// as a log: each job with a real
// start in the log has the replay's start and end instead; the others stay unstarted, as the log
// leaves them (they still run in the replay, as unseen work runs on the real machine). What a
// component's evidence is measured on again, to tell it from what a replay without that
// component shows by chance.
std::vector<Job> replayed_as_log(const std::vector<Job>& all, const ClusterSpec& spec,
                                 const Calibration& c) {
  auto r = calibrated_replay(all, spec, c);
  if (!r) return {};
  if (c.priority) r->machine.priority = c.priority->weights;
  Simulator sim(r->machine, r->sim_jobs);
  sim.set_recording(false);
  sim.run_to_completion();
  std::vector<Job> out = r->jobs;
  for (std::size_t i = 0; i < out.size(); ++i) {
    Job& j = out[i];
    const auto at = static_cast<SimJobIndex>(i);
    const Seconds start = sim.start_time(at), end = sim.end_time(at);
    const bool seen = j.started() && start != kUnknownTime && end != kUnknownTime;
    j.start = seen ? start : kUnknownTime;
    j.end = seen ? end : kUnknownTime;
    j.after_any = 0;
    j.think = kUnknownTime;
  }
  return out;
}

// The ids of the jobs that may have waited for their user's own job.
std::unordered_set<JobId> ids_of(const DependencyCandidates& candidates) {
  std::unordered_set<JobId> ids;
  for (const auto& [job, after] : candidates) ids.insert(job->id);
  return ids;
}

// Which capacity windows show hidden room. Pooled over the whole log, the room that stood idle
// where waiting jobs fitted it (idle_beside_waits) must exceed, by more than kRoomMargin of the
// machine, what the log replayed on the machine with nothing hidden (the rules `c` holds so far,
// the flags' priority) shows: a scheduler leaves nodes idle beside waiting jobs on its own (EASY
// backfill drains them for the head of the queue), and only room beyond that is evidence. Where
// it does, every window in which such a job waited is congested (day by day the replay's
// congestion moves too far from the log's to set a bar: docs/results/fidelity.md); else none is.
std::vector<char> room_evidence(const std::vector<Job>& all, const LogView& log,
                                const ClusterSpec& spec, const CalibrationSettings& settings,
                                const DependencyCandidates& candidates, Calibration& c) {
  const Windows win = capacity_windows(log, settings);
  const Seconds step = std::max<Seconds>(1, settings.sample_every);
  const std::unordered_set<JobId> skip = ids_of(candidates);
  const IdleBesideWaits seen = idle_beside_waits(log, spec, c, skip, win, step);
  const std::vector<Job> null_jobs = replayed_as_log(all, spec, c);
  const LogView null_log(null_jobs);
  IdleBesideWaits chance;
  if (!null_log.jobs.empty()) chance = idle_beside_waits(null_log, spec, c, skip, win, step);
  c.idle_by_chance = chance.pooled();
  std::vector<char> out(win.count, 0);
  if (seen.pooled() <= c.idle_by_chance + kRoomMargin * spec.nodes) return out;
  for (std::size_t k = 0; k < win.count; ++k) out[k] = seen.instants[k] > 0;
  return out;
}

// Whether the log's dependencies outside arrays stand out from chance: one user's job starting
// as another of theirs ends, after a wait with room free, happens without any dependency too (a
// busy user's jobs end and start often; a backfill reservation leaves room idle). The log is
// replayed with what `c` holds but no dependency, the links found on that replay counted as on
// the log, and the log's kept only where they outnumber the replay's by more than
// kLinkSigmas standard deviations of the difference of two such counts (sqrt of their sum). Else
// c's links outside arrays are dropped: the log cannot tell them from none.
void test_links_against_chance(const std::vector<Job>& all, const LogView& log,
                               const ClusterSpec& spec, const CalibrationSettings& settings,
                               const DependencyCandidates& candidates, Calibration& c) {
  c.links_seen = static_cast<int>(c.dependencies.size()) - c.array_members;
  c.links_by_chance = 0;
  c.links_told_apart = true;
  if (c.links_seen == 0) return;
  Calibration none = c;
  none.dependencies.clear();
  none.array_members = 0;
  none.followers.clear();
  none.priority.reset();
  const std::vector<Job> null_jobs = replayed_as_log(all, spec, none);
  const LogView null_log(null_jobs);
  if (!null_log.jobs.empty()) {
    CalibrationSettings plain = settings;
    plain.arrays = false;  // an array's links are not tested
    Calibration found = none;
    confirm_dependencies(null_log, spec, plain, dependency_candidates(null_log, plain, none),
                         found);
    c.links_by_chance = static_cast<int>(found.dependencies.size());
  }
  const double margin =
      kLinkSigmas * std::sqrt(static_cast<double>(c.links_seen + c.links_by_chance));
  if (c.links_seen - c.links_by_chance > margin) return;
  c.links_told_apart = false;
  c.dependencies.clear();
  c.array_members = 0;
  confirm_dependencies(log, spec, settings, candidates, c);  // the arrays' links alone
}

// `c` inferred again with each of `shares` as a congested window's room (the capacity, then the
// dependencies that capacity confirms and the followers, where `c` has them, the other jobs
// leave), each on its own thread, and replayed with c's weights; the one closest to the targets
// is kept where it lies less far outside them than c's own replay (one that fits the log no
// worse leaves c as it is). Counts the shares into c.share_candidates.
void keep_closer_share(const std::vector<Job>& all, const LogView& log, const ClusterSpec& spec,
                       const CalibrationSettings& settings, const DependencyCandidates& dependent,
                       const std::vector<char>& room_seen, const std::vector<double>& shares,
                       Calibration& c) {
  struct Other {
    Calibration calibration;
    std::optional<ReplayOutcome> outcome;  // none: no job of the log to replay
  };
  const Calibration base = c;  // what the threads read while `c` takes its own replay
  std::vector<std::future<Other>> runs;
  for (const double share : shares)
    runs.push_back(std::async(std::launch::async, [&, share] {
      CalibrationSettings s = settings;
      s.capacity_share = share;
      s.feedback = base.feedback;
      Other o{base, std::nullopt};
      o.calibration.unavailable.clear();
      o.calibration.congested_windows = 0;
      o.calibration.dependencies.clear();
      o.calibration.array_members = 0;
      infer_capacity(log, spec, s, room_seen, o.calibration);
      if (s.dependencies) confirm_dependencies(log, spec, s, dependent, o.calibration);
      infer_followers(log, s, o.calibration);
      if (const auto r = calibrated_replay(all, spec, o.calibration))
        o.outcome = replay_outcome(*r, base.priority->weights);
      return o;
    }));
  // c's own replay, where the weights were fitted without one (a priority column that told
  // every weight).
  if (!c.priority->replay_waits)
    if (const auto r = calibrated_replay(all, spec, c))
      record_replay(replay_outcome(*r, c.priority->weights), *c.priority);
  const WaitFidelity kept = c.priority->replay;
  std::optional<Other> best;
  for (auto& run : runs) {
    Other o = run.get();
    if (o.outcome && (!best || closer_to_targets(o.outcome->figures, best->outcome->figures)))
      best = std::move(o);
  }
  const int candidates = std::max(c.share_candidates, 1) + static_cast<int>(runs.size());
  c.share_candidates = candidates;
  if (!best || !lies_less_far_outside(best->outcome->figures, kept)) return;
  c = std::move(best->calibration);
  c.share_candidates = candidates;
  record_replay(*best->outcome, *c.priority);
}

// The room of a congested window, chosen by replay: the calibration `c` (its priority chosen
// with the room of settings.capacity_share) is inferred again with each other share of
// kCapacitySharesReplayed and replayed with the same weights; another share is kept only where
// its waits lie less far outside the targets (a share that fits the log no worse leaves the
// default).
void choose_capacity_share_by_replay(const std::vector<Job>& all, const LogView& log,
                                     const ClusterSpec& spec, const CalibrationSettings& settings,
                                     const DependencyCandidates& dependent,
                                     const std::vector<char>& room_seen, Calibration& c) {
  if (!c.priority || c.congested_windows == 0) return;
  std::vector<double> shares;
  for (const double share : kCapacitySharesReplayed)
    if (share != settings.capacity_share) shares.push_back(share);
  keep_closer_share(all, log, spec, settings, dependent, room_seen, shares, c);
}

// The room refined by replay: where the replay kept at the end (its room, and feedback, chosen)
// still misses a fidelity target, the shares kCapacityShareRefinement either side of the kept
// one are replayed the same way, the rest as chosen. A replay inside every target is left alone.
void refine_capacity_share_by_replay(const std::vector<Job>& all, const LogView& log,
                                     const ClusterSpec& spec, const CalibrationSettings& settings,
                                     const DependencyCandidates& dependent,
                                     const std::vector<char>& room_seen, Calibration& c) {
  if (!c.priority || !c.priority->replay_waits || c.congested_windows == 0) return;
  if (c.priority->replay.target_miss() <= 0) return;
  std::vector<double> shares;
  for (const double share :
       {c.capacity_share - kCapacityShareRefinement, c.capacity_share + kCapacityShareRefinement})
    if (share > 1e-9 && share < 1) shares.push_back(share);
  keep_closer_share(all, log, spec, settings, dependent, room_seen, shares, c);
}

// Feedback, chosen by replay: where the kept replay of `c` misses a fidelity target, the log is
// replayed again with the followers feedback infers, the rest as chosen, and that is kept only
// where it lies less far outside the targets. A replay inside every target is left alone.
void choose_feedback_by_replay(const std::vector<Job>& all, const LogView& log,
                               const ClusterSpec& spec, const CalibrationSettings& settings,
                               Calibration& c) {
  using Choice = Calibration::FeedbackChoice;
  if (!c.priority || !c.priority->replay_waits) return;
  const WaitFidelity kept = c.priority->replay;
  if (kept.target_miss() <= 0) {
    c.feedback_choice = Choice::kTargetsMet;
    return;
  }
  CalibrationSettings with = settings;
  with.feedback = true;
  Calibration trial = c;
  infer_followers(log, with, trial);
  c.feedback_choice = Choice::kNoFollowers;
  if (trial.followers.empty()) return;
  // A job submitted minutes after its user's earlier one ended happens by chance too: the kept
  // replay (without feedback) written as a log shows how often; the log's followers must
  // outnumber those by kLinkSigmas standard deviations, as dependencies must.
  const std::vector<Job> null_jobs = replayed_as_log(all, spec, c);
  Calibration by_chance = c;
  infer_followers(LogView(null_jobs), with, by_chance);
  const auto seen = static_cast<double>(trial.followers.size()),
             chance = static_cast<double>(by_chance.followers.size());
  c.followers_by_chance = static_cast<int>(chance);
  c.feedback_choice = Choice::kByChance;
  if (seen - chance <= kLinkSigmas * std::sqrt(seen + chance)) return;
  const auto r = calibrated_replay(all, spec, trial);
  if (!r) return;
  ReplayOutcome o = replay_outcome(*r, trial.priority->weights);
  c.feedback_choice = Choice::kNoCloser;
  if (!lies_less_far_outside(o.figures, kept)) return;
  c = std::move(trial);
  c.feedback_choice = Choice::kChosen;
  record_replay(o, *c.priority);
}

}  // namespace

std::optional<PriorityFit> choose_priority_by_replay(const std::vector<Job>& all,
                                                     const ClusterSpec& spec,
                                                     const Calibration& c) {
  const auto replay = calibrated_replay(all, spec, c);
  if (!replay) return std::nullopt;
  // First-come-first-served (the age factor alone orders jobs as they came) first: the weighting
  // every other has to beat.
  std::vector<PriorityParameters> candidates;
  for (const double fairshare :
       replay->users ? std::vector<double>{0, 1000} : std::vector<double>{0})
    for (const int size : {0, 1, -1}) {         // ignore size, favour large jobs, favour small jobs
      if (fairshare > 0 && size < 0) continue;  // two factors against large jobs: not a site's
      PriorityParameters p = spec.priority;
      p.weight_fairshare = fairshare;
      p.weight_job_size = size == 0 ? 0 : 1000;
      p.favor_small = size < 0;
      candidates.push_back(p);
    }
  std::vector<std::future<ReplayOutcome>> runs;
  for (const PriorityParameters& p : candidates) runs.push_back(replay_outcome_async(*replay, p));
  std::vector<ReplayOutcome> outcomes;
  for (auto& run : runs) outcomes.push_back(run.get());
  std::size_t chosen = 0;
  for (std::size_t i = 1; i < outcomes.size(); ++i)
    if (closer_to_targets(outcomes[i].figures, outcomes[chosen].figures)) chosen = i;
  // A weighting orders the queue: it is kept only where its replay ranks the log's waits
  // kRankMargin better than first-come-first-served's, else the log cannot tell them apart.
  const double fcfs_rank = outcomes[0].figures.rank_correlation;
  const bool told_apart =
      chosen != 0 && outcomes[chosen].figures.rank_correlation >= fcfs_rank + kRankMargin;
  if (!told_apart) chosen = 0;
  PriorityFit fit;
  fit.weights = candidates[chosen];
  fit.candidates = static_cast<int>(candidates.size());
  fit.jobs = outcomes[chosen].figures.jobs;
  fit.like_fcfs = !told_apart;
  record_replay(outcomes[chosen], fit);
  return fit;
}

void choose_age_by_replay(const std::vector<Job>& all, const ClusterSpec& spec, Calibration& c) {
  if (!c.priority || c.priority->weights.weight_age > 0) return;
  const auto replay = calibrated_replay(all, spec, c);
  if (!replay) return;
  std::vector<PriorityParameters> candidates;
  for (const double age : kAgeWeightsReplayed) {
    PriorityParameters p = c.priority->weights;
    p.weight_age = age;
    candidates.push_back(p);
  }
  const auto [chosen, outcome] = closest_weighting(*replay, candidates);
  c.priority->weights = candidates[chosen];
  c.priority->age_candidates = static_cast<int>(candidates.size());
  record_replay(outcome, *c.priority);
}

Calibration infer_calibration(const std::vector<Job>& all, const ClusterSpec& spec,
                              const CalibrationSettings& settings) {
  Calibration c;
  const LogView log(all);
  if (log.jobs.empty()) return c;
  if (settings.boundaries) infer_boundaries(log, settings, c);
  infer_limits(log, settings, c);
  if (settings.down_windows && spec.allocation == AllocationMode::kWholeNode)
    infer_down_windows(log, spec, settings, c);
  const auto candidates = dependency_candidates(log, settings, c);
  const bool whole_node = spec.allocation == AllocationMode::kWholeNode;
  const std::vector<char> room_seen =
      whole_node ? room_evidence(all, log, spec, settings, candidates, c) : std::vector<char>{};
  if (whole_node) infer_capacity(log, spec, settings, room_seen, c);
  if (settings.dependencies) {
    confirm_dependencies(log, spec, settings, candidates, c);
    test_links_against_chance(all, log, spec, settings, candidates, c);
  }
  infer_followers(log, settings, c);
  if (settings.priority) {
    c.priority = fit_priority(all, spec);
    if (c.priority)
      choose_age_by_replay(all, spec, c);
    else
      c.priority = choose_priority_by_replay(all, spec, c);
    const bool choose_room = settings.choose_capacity_share && whole_node;
    if (choose_room)
      choose_capacity_share_by_replay(all, log, spec, settings, candidates, room_seen, c);
    if (settings.choose_feedback && !settings.feedback)
      choose_feedback_by_replay(all, log, spec, settings, c);
    if (choose_room)
      refine_capacity_share_by_replay(all, log, spec, settings, candidates, room_seen, c);
  }
  return c;
}

void infer_dependencies(const std::vector<Job>& all, const ClusterSpec& spec,
                        const CalibrationSettings& settings, Calibration& c) {
  c.dependencies.clear();
  c.array_members = 0;
  c.followers.clear();
  if (c.priority) c.priority->replay_waits.reset();  // a replay of other dependencies
  const LogView log(all);
  if (log.jobs.empty()) return;
  if (settings.dependencies) {
    const auto candidates = dependency_candidates(log, settings, c);
    c.links_told_apart = true;
    confirm_dependencies(log, spec, settings, candidates, c);
    test_links_against_chance(all, log, spec, settings, candidates, c);
  }
  infer_followers(log, settings, c);
}

void apply_calibration(const Calibration& calibration, ClusterSpec& spec, std::vector<Job>& jobs) {
  spec.user_limits = calibration.user_limits;
  if (calibration.priority) spec.priority = calibration.priority->weights;
  if (calibration.scheduler) spec.scheduler = *calibration.scheduler;
  spec.unavailable =
      calibration.unavailable.empty()
          ? nullptr
          : std::make_shared<const std::vector<CapacityStep>>(calibration.unavailable);
  spec.boundaries =
      calibration.boundaries.empty()
          ? nullptr
          : std::make_shared<const std::vector<WeeklyBoundaries>>(calibration.boundaries);
  spec.down = calibration.down.empty()
                  ? nullptr
                  : std::make_shared<const std::vector<DownWindow>>(calibration.down);
  if (calibration.dependencies.empty() && calibration.followers.empty()) return;
  const std::unordered_map<JobId, JobId> after(calibration.dependencies.begin(),
                                               calibration.dependencies.end());
  std::unordered_map<JobId, const Calibration::Follower*> follows;
  for (const Calibration::Follower& f : calibration.followers) follows.emplace(f.job, &f);
  for (Job& j : jobs)
    if (const auto it = after.find(j.id); it != after.end()) {
      j.after_any = it->second;
    } else if (const auto f = follows.find(j.id); f != follows.end()) {
      j.after_any = f->second->after;
      j.think = f->second->think;
    }
}

std::string Calibration::describe_feedback_choice() const {
  switch (feedback_choice) {
    case FeedbackChoice::kChosen:
      return "chosen by replay: without it the replay missed a fidelity target, and with it lies "
             "less far outside them";
    case FeedbackChoice::kNoCloser:
      return "off: tried by replay, it brought the replay no closer to the fidelity targets";
    case FeedbackChoice::kNoFollowers:
      return "off: no job of the log was submitted minutes after its user's earlier one ended";
    case FeedbackChoice::kTargetsMet: return "off: the replay without it met every fidelity target";
    case FeedbackChoice::kByChance:
      return fmt::format(
          "off: the replay without it shows {} jobs submitted as soon after their user's earlier "
          "job's end by chance: the log cannot tell feedback apart from none",
          followers_by_chance);
    case FeedbackChoice::kNotTried: break;
  }
  return "off: not tried (no replay of the log was chosen to judge it by)";
}

std::string Calibration::describe_boundaries() const {
  return mirage::describe_boundaries(boundaries);
}

std::string Calibration::describe_room() const {
  if (congested_windows == 0) return "";
  const std::string held = capacity_share > 0
                               ? fmt::format("held for {:.0f}% of it", 100 * capacity_share)
                               : std::string("held at their most");
  return fmt::format("a congested {}'s room what the log's jobs {}{}",
                     window == kDay ? std::string("day") : "window", held,
                     share_candidates > 0
                         ? fmt::format(" (of {} shares replayed, the one whose replay lies least "
                                       "outside the targets)",
                                       share_candidates)
                         : std::string());
}

std::string Calibration::describe_room_evidence() const {
  if (windows == 0) return "";
  if (congested_windows == 0)
    return fmt::format(
        "waiting jobs stood beside no more idle room they fitted than in the log replayed with "
        "nothing hidden ({:.1f} nodes on average) and {:.0f}% of the machine: the log cannot tell "
        "hidden room apart from none",
        idle_by_chance, 100 * kRoomMargin);
  return fmt::format(
      "waiting jobs stood beside more idle room they fitted than in the log replayed with nothing "
      "hidden ({:.1f} nodes on average) and {:.0f}% of the machine",
      idle_by_chance, 100 * kRoomMargin);
}

std::string Calibration::describe_links() const {
  if (links_seen == 0) return "";
  const std::string seen = fmt::format(
      "{} of the log's jobs outside arrays started as their user's earlier job ended, after a "
      "wait with room free",
      links_seen);
  if (!links_told_apart)
    return fmt::format(
        "{}; its replay without dependencies shows {} by chance: the log cannot tell these "
        "dependencies apart from none",
        seen, links_by_chance);
  return fmt::format("{}, against {} by chance in its replay without dependencies", seen,
                     links_by_chance);
}

std::string Calibration::describe_congestion() const {
  return fmt::format(
      "{} of {} {} congested", congested_windows, windows,
      window == kDay ? std::string("days") : "windows of " + format_short_duration(window));
}

}  // namespace mirage

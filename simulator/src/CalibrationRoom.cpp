// Hidden room: which windows show it, against the log replayed with nothing hidden, and how
// much, chosen by replay (Calibration.h).

#include <algorithm>
#include <future>
#include <limits>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "CalibrationParts.h"
#include "CalibrationReplay.h"

namespace mirage::calibration {

namespace {

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

// The ids of the jobs that may have waited for their user's own job.
std::unordered_set<JobId> ids_of(const DependencyCandidates& candidates) {
  std::unordered_set<JobId> ids;
  for (const auto& [job, after] : candidates) ids.insert(job->id);
  return ids;
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
  const int candidates = std::max(c.share_candidates, 1) + static_cast<int>(shares.size());
  // A kept replay already inside every target leaves no share a replay could bring closer: their
  // replays would change nothing but the count.
  if (c.priority->replay_waits && !can_lie_less_far_outside(c.priority->replay)) {
    c.share_candidates = candidates;
    return;
  }
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
  c.share_candidates = candidates;
  if (!best || !lies_less_far_outside(best->outcome->figures, kept)) return;
  c = std::move(best->calibration);
  c.share_candidates = candidates;
  record_replay(*best->outcome, *c.priority);
}

// The windows in which a job waited that nothing the log shows held back (its user's limits, a
// boundary, a down window) and that may not have waited for its user's own job (`skip`), looked
// at every `step` of each job's wait from its submission.
std::vector<char> windows_with_waits(const LogView& log, const Calibration& c,
                                     const std::unordered_set<JobId>& skip, const Windows& win,
                                     Seconds step) {
  std::vector<char> waited(win.count, 0);
  for (const Job* j : log.jobs) {
    if (skip.count(j->id)) continue;
    for (Seconds t = j->submit + step; t < j->start;) {
      const auto k = static_cast<std::size_t>((t - win.origin) / win.length);
      if (k >= win.count) break;
      if (waited[k]) {  // nothing more to learn in this window: on to the next, on the job's grid
        t = win.origin + static_cast<Seconds>(k + 1) * win.length;
        t += (step - (t - j->submit) % step) % step;
        continue;
      }
      if (!held_by_rules(log, *j, t, c)) waited[k] = 1;
      t += step;
    }
  }
  return waited;
}

}  // namespace

// The log replayed on the machine with nothing hidden (the rules `c` holds so far, the flags'
// priority), written as a log, on a thread of its own that reads a copy of `c`.
std::future<std::vector<Job>> replay_nothing_hidden(const std::vector<Job>& all,
                                                    const ClusterSpec& spec,
                                                    const CalibrationSettings& settings,
                                                    const Calibration& c) {
  if (!settings.test_room) return {};
  return std::async(std::launch::async, [&all, &spec, c] { return replayed_as_log(all, spec, c); });
}

// Which capacity windows show hidden room. Pooled over the whole log, the room that stood idle
// where waiting jobs fitted it (idle_beside_waits) must exceed, by more than kRoomMargin of the
// machine, what the log replayed on the machine with nothing hidden (`nothing_hidden`) shows: a
// scheduler leaves nodes idle beside waiting jobs on its own (EASY backfill drains them for the
// head of the queue), and only room beyond that is evidence. Where it does, every window in which
// such a job waited is congested (day by day the replay's congestion moves too far from the log's
// to set a bar: docs/results/fidelity.md); else none is.
std::vector<char> room_evidence(const LogView& log, const ClusterSpec& spec,
                                const CalibrationSettings& settings,
                                const DependencyCandidates& candidates,
                                std::future<std::vector<Job>> nothing_hidden, Calibration& c) {
  const Windows win = capacity_windows(log, settings);
  const Seconds step = std::max<Seconds>(1, settings.sample_every);
  const std::unordered_set<JobId> skip = ids_of(candidates);
  const IdleBesideWaits seen = idle_beside_waits(log, spec, c, skip, win, step);
  std::vector<char> out = windows_with_waits(log, c, skip, win, step);
  if (!settings.test_room) return out;
  const std::vector<Job> null_jobs = nothing_hidden.get();
  const LogView null_log(null_jobs);
  IdleBesideWaits chance;
  if (!null_log.jobs.empty()) chance = idle_beside_waits(null_log, spec, c, skip, win, step);
  c.idle_by_chance = chance.pooled();
  if (seen.pooled() <= c.idle_by_chance + kRoomMargin * spec.nodes)
    std::fill(out.begin(), out.end(), 0);
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

}  // namespace mirage::calibration

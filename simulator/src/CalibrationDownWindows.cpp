// Down windows a log shows (Calibration.h).

#include <algorithm>
#include <vector>

#include "CalibrationParts.h"

namespace mirage::calibration {

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

}  // namespace mirage::calibration

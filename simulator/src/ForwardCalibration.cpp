#include "mirage/simulator/ForwardCalibration.h"

#include <algorithm>

namespace mirage {
namespace {

// Unavailable nodes at `t` under `steps` (none before the first).
int unavailable_at(const std::vector<CapacityStep>& steps, Seconds t) {
  int n = 0;
  for (const CapacityStep& s : steps) {
    if (s.from > t) break;
    n = s.unavailable_nodes;
  }
  return n;
}

}  // namespace

void carry_past_fit(Calibration& c, Seconds until, Seconds horizon) {
  std::vector<CapacityStep> fitted = c.unavailable;
  std::erase_if(fitted, [&](const CapacityStep& s) { return s.from >= until; });
  std::vector<CapacityStep> room = fitted;
  if (!fitted.empty()) {
    // The last fitted weeks, repeated: their steps, and the room standing as they begin.
    const Seconds begin = std::max(fitted.front().from, until - kRoomRepeated);
    const Seconds period = until - begin;
    std::vector<CapacityStep> pattern = {{begin, unavailable_at(fitted, begin)}};
    for (const CapacityStep& s : fitted)
      if (s.from > begin) pattern.push_back(s);
    for (Seconds shift = period; period > 0 && begin + shift < horizon; shift += period)
      for (const CapacityStep& s : pattern)
        if (s.from + shift < horizon) room.push_back({s.from + shift, s.unavailable_nodes});
  }
  c.unavailable.clear();
  for (const CapacityStep& s : room)
    if (c.unavailable.empty() || c.unavailable.back().unavailable_nodes != s.unavailable_nodes)
      c.unavailable.push_back(s);
  std::erase_if(c.down, [&](const DownWindow& d) { return d.from >= until; });
  for (DownWindow& d : c.down) d.to = std::min(d.to, until);
}

Calibration infer_calibration_before(const std::vector<Job>& jobs, Seconds until,
                                     const ClusterSpec& spec, const CalibrationSettings& settings) {
  std::vector<Job> before;
  Seconds horizon = until;
  for (const Job& j : jobs) {
    if (j.submit < until) before.push_back(j);
    horizon = std::max({horizon, j.submit + j.time_limit, j.end});
  }
  Calibration c = infer_calibration(before, spec, settings);
  carry_past_fit(c, until, horizon);
  apply_fitted_dependencies(jobs, spec, settings, c);
  return c;
}

}  // namespace mirage

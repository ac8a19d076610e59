#include "mirage/agents/LoggedWaits.h"

#include <fmt/format.h>

#include <algorithm>

#include "mirage/simulator/Fidelity.h"

namespace mirage {

LoggedWaits::LoggedWaits(const Trace& trace, LoggedWaitsSpec spec) : spec_(spec) {
  const std::string shape = size_class(spec_.nodes);
  for (const Job& j : trace.jobs) {
    if (!j.started()) continue;
    log_has_starts_ = true;
    if (j.after_any != 0 || 2 * j.time_limit < spec_.time_limit || size_class(j.nodes) != shape)
      continue;
    jobs_.emplace_back(j.submit, std::max<Seconds>(0, j.wait()));
  }
  std::sort(jobs_.begin(), jobs_.end());
}

std::optional<Seconds> LoggedWaits::wait_at(Seconds t) const {
  if (spec_.jobs == 0) return std::nullopt;
  // Grow [lo, hi) outward from t, taking the nearer neighbour each step.
  auto hi = std::lower_bound(jobs_.begin(), jobs_.end(), std::pair<Seconds, Seconds>{t, -1});
  auto lo = hi;
  std::vector<Seconds> waits;
  waits.reserve(spec_.jobs);
  while (waits.size() < spec_.jobs) {
    const bool left = lo != jobs_.begin() && t - std::prev(lo)->first <= spec_.window;
    const bool right = hi != jobs_.end() && hi->first - t <= spec_.window;
    if (!left && !right) return std::nullopt;
    if (left && (!right || t - std::prev(lo)->first <= hi->first - t)) {
      --lo;
      waits.push_back(lo->second);
    } else {
      waits.push_back(hi->second);
      ++hi;
    }
  }
  const auto mid = waits.begin() + static_cast<std::ptrdiff_t>(waits.size() / 2);
  std::nth_element(waits.begin(), mid, waits.end());
  return *mid;
}

std::string LoggedWaits::describe() const {
  return fmt::format(
      "the median wait of the {} real jobs of {} asking {} or more submitted nearest it within "
      "{} either side",
      spec_.jobs, size_class(spec_.nodes), format_short_duration(spec_.time_limit / 2),
      format_short_duration(spec_.window));
}

}  // namespace mirage

#include "mirage/agents/LoggedWaits.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <tuple>
#include <unordered_map>

#include "mirage/simulator/Calibration.h"
#include "mirage/simulator/Fidelity.h"

namespace mirage {

Seconds pooled_floor(std::vector<Seconds> class_limits, Seconds time_limit, double needed) {
  const Seconds half = (time_limit + 1) / 2;  // 2 * limit >= time_limit
  if (class_limits.empty()) return half;
  std::sort(class_limits.begin(), class_limits.end(), std::greater<>());
  const auto reaching = [&](Seconds floor) {  // how many ask at least `floor`
    return static_cast<double>(
        std::upper_bound(class_limits.begin(), class_limits.end(), floor, std::greater<>()) -
        class_limits.begin());
  };
  if (reaching(half) >= needed) return half;
  // The top quartile's least limit: the limit a quarter of the class's jobs ask or more.
  const Seconds quartile = class_limits[(class_limits.size() - 1) / 4];
  if (quartile >= half) return half;
  // The longest limits first: the first (longest) floor that enough jobs reach.
  for (auto it = std::upper_bound(class_limits.begin(), class_limits.end(), half, std::greater<>());
       it != class_limits.end() && *it >= quartile; ++it)
    if (reaching(*it) >= needed) return *it;
  return quartile;
}

Trace yardstick_log(Trace as_read, const ClusterSpec& machine) {
  CalibrationSettings as_shown;
  as_shown.test_links = false;  // every link the log shows, not only where they beat chance
  Calibration links;            // nothing fitted: the whole machine, no limit, boundary or down
  infer_dependencies(as_read.jobs, machine, as_shown, links);
  const std::unordered_map<JobId, JobId> after(links.dependencies.begin(),
                                               links.dependencies.end());
  for (Job& j : as_read.jobs)
    if (const auto it = after.find(j.id); it != after.end()) j.after_any = it->second;
  return as_read;
}

LoggedWaits::LoggedWaits(const Trace& trace, LoggedWaitsSpec spec) : spec_(spec) {
  const std::string shape = size_class(spec_.nodes);
  std::vector<std::tuple<Seconds, Seconds, Seconds>> of_class;  // (submit, wait, limit)
  Seconds first = 0, last = 0;
  for (const Job& j : trace.jobs) {
    if (!j.started()) continue;
    if (!log_has_starts_) first = j.submit;
    log_has_starts_ = true;
    first = std::min(first, j.submit);
    last = std::max(last, j.submit);
    if (j.after_any != 0 || size_class(j.nodes) != shape) continue;
    of_class.emplace_back(j.submit, std::max<Seconds>(0, j.wait()), j.time_limit);
  }
  // A shape is too sparse when the log, spread evenly, would not give each wait its jobs within
  // the window: then the class's longest limits are pooled.
  const double windows =
      spec_.window > 0 ? static_cast<double>(last - first) / (2.0 * spec_.window) : 0;
  std::vector<Seconds> limits;
  limits.reserve(of_class.size());
  for (const auto& [submit, wait, limit] : of_class) {
    limits.push_back(limit);
    if (2 * limit >= spec_.time_limit) ++exact_jobs_;
  }
  floor_ =
      pooled_floor(std::move(limits), spec_.time_limit, static_cast<double>(spec_.jobs) * windows);
  for (const auto& [submit, wait, limit] : of_class)
    if (limit >= floor_) jobs_.emplace_back(submit, wait);
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
      spec_.jobs, size_class(spec_.nodes), format_short_duration(floor_),
      format_short_duration(spec_.window));
}

std::string LoggedWaits::pooling() const {
  if (!pooled()) return {};
  return fmt::format(
      "pooled: limits >= {}, {} jobs behind each wait ({} real jobs of {} ask {}, half the "
      "segment's limit: too few for a wait every {} either side; the class's longest limits, "
      "down to its top quartile, stand in)",
      format_short_duration(floor_), spec_.jobs,
      exact_jobs_ == 0 ? "no" : std::to_string(exact_jobs_), size_class(spec_.nodes),
      format_short_duration((spec_.time_limit + 1) / 2), format_short_duration(spec_.window));
}

}  // namespace mirage

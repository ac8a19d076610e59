// Weekly boundaries a log shows (Calibration.h).

#include <algorithm>
#include <utility>
#include <vector>

#include "CalibrationParts.h"

namespace mirage::calibration {

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

}  // namespace mirage::calibration

#include "mirage/agents/WaitCheck.h"

#include <algorithm>
#include <cstdlib>

namespace mirage {
namespace {

constexpr double kHours = 3600.0;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  return (*mid + *std::max_element(v.begin(), mid)) / 2;
}

// The figures every predictor has: pinball at 50% and the median absolute error of `middle`.
WaitScore score_middle(const std::vector<Seconds>& real, const std::vector<Seconds>& middle) {
  WaitScore s;
  s.jobs = std::min(real.size(), middle.size());
  if (s.jobs == 0) return s;
  std::vector<double> errors(s.jobs);
  double p50 = 0;
  for (std::size_t i = 0; i < s.jobs; ++i) {
    errors[i] = std::abs(static_cast<double>(real[i] - middle[i]));
    p50 += pinball_loss(0.5, real[i], middle[i]);
  }
  s.pinball_50_h = p50 / static_cast<double>(s.jobs) / kHours;
  s.median_abs_error_h = median(std::move(errors)) / kHours;
  return s;
}

}  // namespace

double pinball_loss(double tau, Seconds real, Seconds stated) {
  const double diff = static_cast<double>(real - stated);
  return std::max(tau * diff, (tau - 1) * diff);
}

WaitScore score_quantiles(const std::vector<Seconds>& real,
                          const std::vector<WaitQuantiles>& stated) {
  std::vector<Seconds> medians;
  for (const WaitQuantiles& q : stated) medians.push_back(q[3]);
  WaitScore s = score_middle(real, medians);
  if (s.jobs == 0) return s;
  double pinball = 0;
  std::size_t in50 = 0, in90 = 0;
  for (std::size_t i = 0; i < s.jobs; ++i) {
    const WaitQuantiles& q = stated[i];
    for (std::size_t k = 0; k < q.size(); ++k)
      pinball += pinball_loss(kWaitLevels[k], real[i], q[k]);
    in50 += real[i] >= q[2] && real[i] <= q[4];
    in90 += real[i] >= q[0] && real[i] <= q[6];
  }
  const auto n = static_cast<double>(s.jobs);
  s.pinball_h = pinball / (n * static_cast<double>(kWaitLevels.size())) / kHours;
  s.in_50 = static_cast<double>(in50) / n;
  s.in_90 = static_cast<double>(in90) / n;
  return s;
}

WaitScore score_points(const std::vector<Seconds>& real, const std::vector<Seconds>& point) {
  return score_middle(real, point);
}

}  // namespace mirage

#include "mirage/agents/WaitCheck.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <utility>

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

// The atom a wait lands on, as levels [first, last]: the stated levels equal to the wait are the
// atom's inside, but its ends are known only to a gap between two stated levels (F(wait-) lies
// between the level below the first equal one and that one, F(wait) between the last equal one
// and the level above), so each end is read at its gap's middle: it errs by at most half a gap
// either way, where reading the equal levels alone judges a predictor right about a 34% atom at
// zero (q05 = q10 = q25 = 0) as holding 41% in its 50% interval, and reading the gaps' far ends
// as holding 58% (it holds 50%; this reading, 52%). No wait is below zero, so an atom at zero
// starts at level 0. One equal level states no atom unless the wait is zero: a CDF without a jump
// fits it.
std::optional<std::pair<double, double>> stated_atom(const WaitQuantiles& stated, Seconds real) {
  const auto* first = std::find(stated.begin(), stated.end(), real);
  if (first == stated.end()) return std::nullopt;
  const auto i = static_cast<std::size_t>(first - stated.begin());
  std::size_t j = i;
  while (j + 1 < stated.size() && stated[j + 1] == real) ++j;
  if (i == j && real != 0) return std::nullopt;
  const double below = i == 0 ? 0.0 : kWaitLevels[i - 1];
  const double above = j + 1 == kWaitLevels.size() ? 1.0 : kWaitLevels[j + 1];
  const double start = real == 0 ? 0.0 : (below + kWaitLevels[i]) / 2;
  return std::pair{start, (kWaitLevels[j] + above) / 2};
}

}  // namespace

double pit_share_inside(const WaitQuantiles& stated, Seconds real, std::size_t low,
                        std::size_t high) {
  const auto atom = stated_atom(stated, real);
  if (!atom) return real >= stated[low] && real <= stated[high] ? 1.0 : 0.0;
  const auto [start, end] = *atom;
  const double inside = std::min(end, kWaitLevels[high]) - std::max(start, kWaitLevels[low]);
  return std::max(0.0, inside) / (end - start);
}

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
  double pinball = 0, in50_pit = 0, in90_pit = 0;
  std::size_t in50 = 0, in90 = 0;
  for (std::size_t i = 0; i < s.jobs; ++i) {
    const WaitQuantiles& q = stated[i];
    for (std::size_t k = 0; k < q.size(); ++k)
      pinball += pinball_loss(kWaitLevels[k], real[i], q[k]);
    in50 += real[i] >= q[2] && real[i] <= q[4];
    in90 += real[i] >= q[0] && real[i] <= q[6];
    in50_pit += pit_share_inside(q, real[i], 2, 4);
    in90_pit += pit_share_inside(q, real[i], 0, 6);
  }
  const auto n = static_cast<double>(s.jobs);
  s.pinball_h = pinball / (n * static_cast<double>(kWaitLevels.size())) / kHours;
  s.in_50 = static_cast<double>(in50) / n;
  s.in_90 = static_cast<double>(in90) / n;
  s.in_50_pit = in50_pit / n;
  s.in_90_pit = in90_pit / n;
  return s;
}

WaitScore score_points(const std::vector<Seconds>& real, const std::vector<Seconds>& point) {
  return score_middle(real, point);
}

}  // namespace mirage

#include "mirage/agents/ConformalLevels.h"

#include <algorithm>
#include <cmath>

namespace mirage {
namespace {

// Waits are compared on log(wait + 10 min): a correction scales long waits, and waits of a few
// minutes are all alike, so a predictor that says 0 where jobs wait 15 minutes is not taken to be
// off by a factor of a thousand (which would then multiply its hours).
constexpr double kOffset = 10 * kMinute;

double log_wait(Seconds s) {
  return std::log(static_cast<double>(std::max<Seconds>(0, s)) + kOffset);
}

Seconds from_log(double v) {
  return static_cast<Seconds>(std::llround(std::max(0.0, std::exp(v) - kOffset)));
}

}  // namespace

LevelShifts conformal_shifts(const std::vector<WaitOutcome>& outcomes) {
  return conformal_shifts(outcomes, kWaitLevels);
}

LevelShifts conformal_shifts(const std::vector<WaitOutcome>& outcomes,
                             const std::array<double, kWaitLevels.size()>& at) {
  LevelShifts shift{};
  const std::size_t n = outcomes.size();
  if (n == 0) return shift;
  std::vector<double> residuals(n);
  for (std::size_t k = 0; k < kWaitLevels.size(); ++k) {
    for (std::size_t i = 0; i < n; ++i)
      residuals[i] = log_wait(outcomes[i].wait) - log_wait(outcomes[i].predicted[k]);
    std::sort(residuals.begin(), residuals.end());
    // The conformal rank: above the median, the ceil((n + 1) q)-th smallest residual keeps at
    // least q of future waits at or below the level (the floor below the median, symmetrically).
    const double q = std::clamp(at[k], 0.0, 1.0);
    const double rank = (static_cast<double>(n) + 1) * q;
    const double r = q > 0.5 ? std::ceil(rank) : q < 0.5 ? std::floor(rank) : std::round(rank);
    const auto at = static_cast<std::size_t>(std::clamp(r, 1.0, static_cast<double>(n))) - 1;
    shift[k] = residuals[at];
  }
  return shift;
}

LevelShifts weighted_conformal_shifts(const std::vector<WaitOutcome>& outcomes,
                                      const std::vector<double>& weights) {
  LevelShifts shift{};
  const std::size_t n = outcomes.size();
  if (n == 0) return shift;
  double total = 0;
  for (std::size_t i = 0; i < n; ++i) total += weights[i];
  std::vector<std::pair<double, double>> residuals(n);  // residual, weight
  for (std::size_t k = 0; k < kWaitLevels.size(); ++k) {
    for (std::size_t i = 0; i < n; ++i)
      residuals[i] = {log_wait(outcomes[i].wait) - log_wait(outcomes[i].predicted[k]), weights[i]};
    std::sort(residuals.begin(), residuals.end());
    const double q = kWaitLevels[k];
    const double rank = (total + 1) * q;
    std::size_t at = 0;
    double below = 0;  // the weight of the residuals before `at`
    if (q >= 0.5) {    // the first whose weight with those below reaches the rank
      for (at = 0; at + 1 < n && below + residuals[at].second < rank; ++at)
        below += residuals[at].second;
    } else {  // the last with the job to come's weight and those below within the rank
      for (; at + 1 < n && below + residuals[at].second + 1 <= rank; ++at)
        below += residuals[at].second;
    }
    shift[k] = residuals[at].first;
  }
  return shift;
}

WaitQuantiles shift_levels(const WaitQuantiles& stated, const LevelShifts& shifts) {
  WaitQuantiles out{};
  for (std::size_t k = 0; k < kWaitLevels.size(); ++k) {
    out[k] = shifts[k] == 0 ? stated[k] : from_log(log_wait(stated[k]) + shifts[k]);
    if (k > 0) out[k] = std::max(out[k], out[k - 1]);
  }
  return out;
}

}  // namespace mirage

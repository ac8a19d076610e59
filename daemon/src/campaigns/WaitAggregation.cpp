#include "mirage/daemon/campaigns/WaitAggregation.h"

#include <algorithm>
#include <cmath>

namespace mirage::daemon {
namespace {

// The scale the conformal residuals are read on (ConformalLevels.cpp): minutes-long waits alike.
double log_wait(Seconds s) {
  return std::log(static_cast<double>(std::max<Seconds>(0, s)) + 10.0 * kMinute);
}

double pinball(double tau, double real, double stated) {
  const double d = real - stated;
  return d >= 0 ? tau * d : (tau - 1) * d;
}

}  // namespace

std::array<double, kWaitLevels.size()> WaitAggregation::model_shares() const {
  std::array<double, kWaitLevels.size()> w{};
  // exp(-rate L_model) / (exp(-rate L_model) + exp(-rate L_binned)), without overflow.
  for (std::size_t k = 0; k < w.size(); ++k)
    w[k] = 1 / (1 + std::exp(std::clamp(rate_ * (model_loss_[k] - binned_loss_[k]), -700.0,
                                        700.0)));
  return w;
}

WaitQuantiles WaitAggregation::combine(const WaitQuantiles& model,
                                       const WaitQuantiles& binned) const {
  const auto w = model_shares();
  WaitQuantiles out{};
  for (std::size_t k = 0; k < out.size(); ++k)
    out[k] = static_cast<Seconds>(std::llround(w[k] * static_cast<double>(model[k]) +
                                               (1 - w[k]) * static_cast<double>(binned[k])));
  // Shares differ by level, so a rounding or a crossing of the two experts can break the order.
  for (std::size_t k = 1; k < out.size(); ++k) out[k] = std::max(out[k], out[k - 1]);
  return out;
}

void WaitAggregation::add(const WaitQuantiles& model, const WaitQuantiles& binned, Seconds wait) {
  const double real = log_wait(wait);
  for (std::size_t k = 0; k < kWaitLevels.size(); ++k) {
    model_loss_[k] = discount_ * model_loss_[k] + pinball(kWaitLevels[k], real, log_wait(model[k]));
    binned_loss_[k] =
        discount_ * binned_loss_[k] + pinball(kWaitLevels[k], real, log_wait(binned[k]));
  }
}

std::vector<WaitQuantiles> recalibrated_aggregated(
    const std::vector<StreamJob>& jobs, const std::vector<std::optional<WaitQuantiles>>& binned,
    double rate, double discount) {
  std::array<WaitAggregation, kSizeClasses> aggregation;
  aggregation.fill(WaitAggregation(rate, discount));
  ClassWaitCalibration calibration;
  std::vector<WaitQuantiles> aggregate(jobs.size());  // stated at each job's submission
  // recalibrated_stream hands each job as jobs[k]: its index is its place in `jobs`.
  const auto index = [&](const StreamJob& j) { return static_cast<std::size_t>(&j - jobs.data()); };
  return recalibrated_stream(
      jobs,
      [&](const StreamJob& o) {
        const std::size_t k = index(o);
        const Seconds wait = o.start - o.submit;
        if (binned[k]) aggregation[size_class_index(o.nodes)].add(o.stated, *binned[k], wait);
        calibration.add(o.nodes, aggregate[k], wait);
      },
      [&](const StreamJob& j) {
        const std::size_t k = index(j);
        aggregate[k] =
            binned[k] ? aggregation[size_class_index(j.nodes)].combine(j.stated, *binned[k])
                      : j.stated;
        return calibration.adjust(j.nodes, aggregate[k]);
      });
}

}  // namespace mirage::daemon

#pragma once
// The two predictors a wait model file holds, aggregated online: the file's own quantiles and the
// binned distribution of the job's size class it carries. Per size class and per level, the
// stated quantile is w * model + (1 - w) * binned, w set by the exponentially weighted average
// forecaster (Cesa-Bianchi & Lugosi, "Prediction, Learning, and Games", ch. 2) on each expert's
// discounted cumulative pinball loss over the waits learned so far, so the predictor that has
// been nearer the cluster's recent waits at a level takes that level over. The loss is read on
// log(wait + 10 min), where the conformal residuals are read (ConformalLevels.h), so one rate
// serves a log of minutes and one of days. The daemon's weighted conformal recalibration
// (WaitCalibration.h) then corrects the aggregate, which sets the coverage.
#include <array>
#include <optional>
#include <vector>

#include "mirage/agents/WaitPredictor.h"
#include "mirage/agents/WaitTail.h"
#include "mirage/daemon/campaigns/WaitCalibration.h"

namespace mirage::daemon {

// One size class's aggregation.
class WaitAggregation {
 public:
  static constexpr double kRate = 1;
  static constexpr double kDiscount = 0.995;
  explicit WaitAggregation(double rate = kRate, double discount = kDiscount)
      : rate_(rate), discount_(discount) {}
  // Each level's share of the model (the binned distribution's the rest); 1/2 before any wait.
  std::array<double, kWaitLevels.size()> model_shares() const;
  // The aggregate of the two experts' quantiles; never decreasing when both are.
  WaitQuantiles combine(const WaitQuantiles& model, const WaitQuantiles& binned) const;
  // The wait a job got and what each expert stated at its submission.
  void add(const WaitQuantiles& model, const WaitQuantiles& binned, Seconds wait);

 private:
  double rate_, discount_;
  // Per level, each expert's discounted cumulative pinball loss on log(wait + 10 min).
  std::array<double, kWaitLevels.size()> model_loss_{}, binned_loss_{};
};

// A stream of jobs (StreamJob's `stated`: the model's quantiles at its submission; `binned`: its
// class's binned distribution's, none where the file has none for the class) aggregated live per
// size class, each wait learned at its job's start, then recalibrated by the daemon's weighted
// rule on the aggregates stated at the submissions: what `trace waits --check` states as
// "recalibrated aggregated".
std::vector<WaitQuantiles> recalibrated_aggregated(
    const std::vector<StreamJob>& jobs, const std::vector<std::optional<WaitQuantiles>>& binned,
    double rate = WaitAggregation::kRate, double discount = WaitAggregation::kDiscount);

}  // namespace mirage::daemon

#pragma once
// Stated wait quantiles corrected by the outcomes of jobs they were stated for, per level,
// split-conformal on the log of the wait plus 10 minutes: the residual of each outcome is
// log(real wait + 10 min) - log(the level's quantile + 10 min), and the level's correction is the
// conformal rank of those residuals (ceil((n + 1) q) of n for levels above the median, floor for
// those below), added back in log space, so a predictor that says a third of the (long) waits is
// scaled up three times. One mechanism for both places that recalibrate: the daemon on the
// user's own recent successors (daemon/campaigns/WaitCalibration.h), and the wait model's
// training on its held-out tail, per size class (WaitModel.h), so that offline and live agree.
#include <array>
#include <vector>

#include "mirage/agents/WaitPredictor.h"

namespace mirage {

// One job: the quantiles stated at its submission, and the wait it got.
struct WaitOutcome {
  WaitQuantiles predicted{};
  Seconds wait = 0;
};

// Per level, in log(wait + 10 min); all zero: no correction.
using LevelShifts = std::array<double, kWaitLevels.size()>;

// The conformal corrections that `outcomes` call for (zero when there are none).
LevelShifts conformal_shifts(const std::vector<WaitOutcome>& outcomes);
// The same, each level's correction read at `at[k]` (clamped to [0, 1]) of the residuals
// instead of at kWaitLevels[k]: what adaptive conformal inference reads at its working levels.
LevelShifts conformal_shifts(const std::vector<WaitOutcome>& outcomes,
                             const std::array<double, kWaitLevels.size()>& at);
// The same with outcome i weighted `weights[i]` (nonexchangeable conformal prediction, Barber,
// Candes, Ramdas & Tibshirani 2023): each level's correction is the weighted quantile of the
// residuals beside a weight of 1 for the job to come, placed beyond the highest residual for
// levels from the median up, below the lowest for those under it; with every weight 1, the ranks
// of conformal_shifts(outcomes).
LevelShifts weighted_conformal_shifts(const std::vector<WaitOutcome>& outcomes,
                                      const std::vector<double>& weights);

// `stated` corrected by `shifts`; levels corrected apart are put back in order (never
// decreasing).
WaitQuantiles shift_levels(const WaitQuantiles& stated, const LevelShifts& shifts);

}  // namespace mirage

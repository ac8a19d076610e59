#pragma once
// How well stated waits held on real jobs (`mirage trace waits --check`): the pinball loss over
// kWaitLevels, the share of real waits inside the central 50% and 90% intervals (counted closed,
// and by the randomized PIT, which shares a wait tied with a stated atom), and the median
// absolute error of the median. A point predictor (the forecast's planned wait, a replay's
// simulated wait) has a median and no intervals: its pinball at 50% and its error only.
#include <cstddef>
#include <optional>
#include <vector>

#include "mirage/agents/WaitPredictor.h"

namespace mirage {

struct WaitScore {
  std::size_t jobs = 0;
  std::optional<double> pinball_h;     // mean over the levels and the jobs; quantiles only
  double pinball_50_h = 0;             // at the median: half the mean absolute error
  std::optional<double> in_50, in_90;  // shares, 0..1; quantiles only
  // The same shares by the expected randomized PIT (pit_share_inside): a wait on a stated atom
  // counts the share of the atom's levels inside the interval, not all or nothing.
  std::optional<double> in_50_pit, in_90_pit;
  double median_abs_error_h = 0;  // of the median (or the point)
};

// `real[i]` against `stated[i]`; empty inputs score zero jobs.
WaitScore score_quantiles(const std::vector<Seconds>& real,
                          const std::vector<WaitQuantiles>& stated);
WaitScore score_points(const std::vector<Seconds>& real, const std::vector<Seconds>& point);

// The randomized PIT (Czado, Gneiting & Held 2009) in its expected form: the probability that
// `real`'s PIT, drawn uniformly over the levels the stated CDF gives it, lies between
// kWaitLevels[low] and kWaitLevels[high]. A wait on no stated atom has one level and counts as
// the closed interval stated[low] <= real <= stated[high] counts it; how an atom's levels are
// read from the seven is in the source.
double pit_share_inside(const WaitQuantiles& stated, Seconds real, std::size_t low,
                        std::size_t high);

// The pinball loss of stating `stated` at level `tau` for a real `real`, in seconds.
double pinball_loss(double tau, Seconds real, Seconds stated);

}  // namespace mirage

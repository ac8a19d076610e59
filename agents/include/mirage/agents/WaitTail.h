#pragma once
// What the wait model's held-out tail (the latest jobs of its fit window, which the network was
// not fitted on) sets on top of the network, per size class (1 node, 2-7, 8+): a quantile average
// with the binned distribution of the class fitted on the months before the tail, its weight
// chosen on the tail, then the levels recalibrated split-conformally on the tail
// (ConformalLevels.h, as the daemon recalibrates on the user's own successors), so that each
// interval holds its share of the tail's waits.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "mirage/agents/ConformalLevels.h"
#include "mirage/agents/WaitDistribution.h"
#include "mirage/core/ClusterSpec.h"
#include "mirage/traces/Trace.h"

namespace mirage {

// The size classes every wait check reports by; `kSizeClassNodes` holds a node count of each.
inline constexpr std::size_t kSizeClasses = 3;
inline constexpr std::array<int, kSizeClasses> kSizeClassNodes{1, 2, 8};
std::size_t size_class_index(int nodes);

// The binned distribution of each size class, fitted on [from, to) at every limit, the jobs
// submitted in [skip_from, skip_to) left out (a cross-fitted fold's own); a class with too few
// jobs has none, and a line in `notes` says why.
struct ClassDistributions {
  std::array<std::optional<WaitDistribution>, kSizeClasses> classes;
  std::string notes;
};
ClassDistributions fit_class_distributions(const Trace& trace, const ClusterSpec& cluster,
                                           Seconds from, Seconds to, Seconds skip_from = 0,
                                           Seconds skip_to = 0);

// The levels `d` states for a job whose planned wait (to the limits) is `planned`.
WaitQuantiles binned_levels(const WaitDistribution& d, Seconds planned);

struct WaitClassTail {
  std::size_t tail_jobs = 0;  // of the class; under kMinTailJobs, set on the whole tail
  double model_weight = 1;    // the network's share in the average, the binned one's the rest
  std::optional<WaitDistribution> binned;
  LevelShifts shifts{};
};
inline constexpr std::size_t kMinTailJobs = 30;

struct WaitTail {
  std::array<WaitClassTail, kSizeClasses> classes;
  // Whether the class's quantiles read the binned distribution (which needs the planned wait).
  bool blends(std::size_t cls) const;
  // The network's quantiles for a job of class `cls` whose planned wait (to the limits) is
  // `planned`, blended and corrected; never decreasing.
  WaitQuantiles apply(std::size_t cls, const WaitQuantiles& network, Seconds planned) const;
};

// One job of the tail: the network's quantiles, its size, its planned and its real wait; and,
// where it was set (a cross-fitted row), the levels of its class's binned distribution fitted
// without its own fold, which the blend is chosen with instead of the class's one in `binned`.
struct TailRow {
  WaitQuantiles network{};
  int nodes = 1;
  Seconds planned = 0;
  Seconds wait = 0;
  std::optional<WaitQuantiles> binned = std::nullopt;
};
// Per class, the weight (0, 0.1, ..., 1) whose blend, recalibrated on `rows`, gives the least
// pinball loss on them, and that recalibration; `with_blend` / `with_shifts` false keep the
// network's share at 1 / no shifts.
WaitTail fit_wait_tail(const std::vector<TailRow>& rows,
                       const std::array<std::optional<WaitDistribution>, kSizeClasses>& binned,
                       bool with_blend = true, bool with_shifts = true);

}  // namespace mirage

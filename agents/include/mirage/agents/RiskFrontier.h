#pragma once
// A risk frontier saved for the daemon: the operating points `mirage eval --sweep-risk` found on a
// cluster's own trace, each a policy at one setting of its knob with the interruption and overlap
// per boundary it reached. `mirage campaign add --max-overlap 30m` takes from it the point with
// the least interruption whose overlap fits the user's budget. A small TOML a person can read.
#include <optional>
#include <string>
#include <vector>

#include "mirage/core/Time.h"

namespace mirage {

struct FrontierOperatingPoint {
  std::string policy;  // "forecast@-2h", a model file "@0.5", "reactive"
  double mean_interruption_h = 0;
  double mean_overlap_h = 0;
};

struct RiskFrontier {
  std::string trace;  // where it was measured
  int chain_nodes = 0;
  Seconds time_limit = 0;
  std::string overlap;  // "concurrent" or "handoff"
  std::vector<FrontierOperatingPoint> points;
};

// Writes `f` (atomically); throws std::runtime_error when the file cannot be written.
void write_risk_frontier(const std::string& path, const RiskFrontier& f);

// Throws InputError naming the file, line and key of what is missing or wrong.
RiskFrontier read_risk_frontier(const std::string& path);

// The point with the least interruption (then the least overlap) whose overlap is within
// `max_overlap`; none when no point fits.
std::optional<FrontierOperatingPoint> point_within(const RiskFrontier& f, Seconds max_overlap);

// The point with the least overlap: where none fits a budget, the one that comes closest. `f`
// has points (read_risk_frontier refuses a frontier without).
const FrontierOperatingPoint& least_overlap_point(const RiskFrontier& f);

}  // namespace mirage

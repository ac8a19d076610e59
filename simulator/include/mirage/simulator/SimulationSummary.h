#pragma once
// Figures of a finished replay: what `mirage simulate` prints.
#include <cstddef>
#include <string>
#include <vector>

#include "mirage/simulator/Simulator.h"

namespace mirage {

struct SimulationSummary {
  std::size_t jobs = 0;  // trace jobs that ran to their end
  Seconds first_submit = 0;
  Seconds last_end = 0;
  Seconds span = 0;            // simulated span: last end - first submit
  double wall_seconds = 0;     // host time the replay took
  double jobs_per_second = 0;  // jobs / wall_seconds
  double utilization = 0;      // node-seconds used / (nodes * span)
  double mean_wait_s = 0;
  double median_wait_s = 0;
  double p90_wait_s = 0;
  double mean_bounded_slowdown = 0;  // mean of max(1, (wait + run) / max(run, 10 s))
  std::size_t backfill_starts = 0;
};

// Summarises the recorded outcomes of the trace jobs of `sim`.
SimulationSummary summarize(const Simulator& sim, double wall_seconds);

// The value at rank round(q * (n - 1)) of `values`, which it reorders; 0 when empty. The one rule
// for the quantiles mirage prints (the replay summary, the fidelity report).
double quantile(std::vector<double>& values, double q);

// Bounded slowdown's threshold, as commonly used with the Parallel Workloads Archive.
inline constexpr Seconds kSlowdownBound = 10;

}  // namespace mirage

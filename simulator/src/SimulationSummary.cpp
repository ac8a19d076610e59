#include "mirage/simulator/SimulationSummary.h"

#include <algorithm>
#include <limits>

namespace mirage {
double quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

SimulationSummary summarize(const Simulator& sim, double wall_seconds) {
  SimulationSummary s;
  s.wall_seconds = wall_seconds;
  std::vector<double> waits;
  double node_seconds = 0, slowdown_sum = 0, wait_sum = 0;
  Seconds first = std::numeric_limits<Seconds>::max(), last = std::numeric_limits<Seconds>::min();
  for (const JobOutcome& o : sim.outcomes()) {
    if (o.job >= sim.trace_size() || o.start == kUnknownTime) continue;  // campaign jobs, cancelled
    const SimJobSpec& j = sim.job(o.job);
    const double wait = static_cast<double>(o.start - j.submit);
    const double run = static_cast<double>(o.end - o.start);
    waits.push_back(wait);
    wait_sum += wait;
    const double units =
        sim.spec().allocation == AllocationMode::kGpuGranular
            ? static_cast<double>(j.nodes) *
                  (j.gpus_per_node > 0 ? j.gpus_per_node : sim.spec().gpus_per_node)
            : static_cast<double>(j.nodes);
    node_seconds += units * run;
    slowdown_sum +=
        std::max(1.0, (wait + run) / std::max(run, static_cast<double>(kSlowdownBound)));
    first = std::min(first, j.submit);
    last = std::max(last, o.end);
  }
  s.jobs = waits.size();
  s.backfill_starts = sim.counters().backfill_starts;
  if (s.jobs == 0) return s;
  s.first_submit = first;
  s.last_end = last;
  s.span = last - first;
  s.jobs_per_second = wall_seconds > 0 ? static_cast<double>(s.jobs) / wall_seconds : 0;
  const double capacity = static_cast<double>(sim.spec().capacity_units());
  s.utilization = s.span > 0 ? node_seconds / (capacity * static_cast<double>(s.span)) : 0;
  s.mean_wait_s = wait_sum / static_cast<double>(s.jobs);
  s.median_wait_s = quantile(waits, 0.5);
  s.p90_wait_s = quantile(waits, 0.9);
  s.mean_bounded_slowdown = slowdown_sum / static_cast<double>(s.jobs);
  return s;
}

}  // namespace mirage

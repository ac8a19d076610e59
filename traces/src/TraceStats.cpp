#include "mirage/traces/TraceStats.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace mirage {
namespace {

// Quantile with linear interpolation between closest ranks (numpy's default); `v` sorted.
double quantile(const std::vector<Seconds>& v, double q) {
  if (v.empty()) return 0;
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return static_cast<double>(v[lo]) * (1 - frac) + static_cast<double>(v[hi]) * frac;
}

}  // namespace

TraceStats compute_trace_stats(const Trace& trace, int machine_nodes_override) {
  TraceStats s;
  s.jobs = trace.jobs.size();
  if (trace.jobs.empty()) {
    s.machine_nodes = machine_nodes_override > 0 ? machine_nodes_override : trace.machine_nodes;
    return s;
  }
  s.first_submit = trace.jobs.front().submit;
  s.last_end = trace.jobs.front().submit;
  std::vector<Seconds> waits;
  waits.reserve(trace.jobs.size());
  double node_seconds = 0, runtime_sum = 0, limit_sum = 0;
  std::size_t runtimes = 0;
  for (const Job& job : trace.jobs) {
    s.first_submit = std::min(s.first_submit, job.submit);
    s.last_end = std::max(s.last_end, job.end != kUnknownTime ? job.end : job.submit);
    s.largest_job_nodes = std::max(s.largest_job_nodes, job.nodes);
    limit_sum += static_cast<double>(job.time_limit);
    if (job.started()) waits.push_back(job.wait());
    const Seconds runtime = job.runtime();
    if (runtime != kUnknownTime) {
      ++runtimes;
      runtime_sum += static_cast<double>(runtime);
      node_seconds += static_cast<double>(runtime) * job.nodes;
    }
  }
  s.span = s.last_end - s.first_submit;
  s.machine_nodes = machine_nodes_override > 0 ? machine_nodes_override
                    : trace.machine_nodes > 0  ? trace.machine_nodes
                                               : s.largest_job_nodes;
  if (s.machine_nodes > 0 && s.span > 0)
    s.load = node_seconds / (static_cast<double>(s.machine_nodes) * static_cast<double>(s.span));
  if (!waits.empty()) {
    std::sort(waits.begin(), waits.end());
    double sum = 0;
    for (Seconds w : waits) sum += static_cast<double>(w);
    s.mean_wait_s = sum / static_cast<double>(waits.size());
    s.median_wait_s = quantile(waits, 0.5);
    s.p90_wait_s = quantile(waits, 0.9);
    s.max_wait_s = static_cast<double>(waits.back());
  }
  if (runtimes > 0) s.mean_runtime_s = runtime_sum / static_cast<double>(runtimes);
  s.mean_time_limit_s = limit_sum / static_cast<double>(trace.jobs.size());
  return s;
}

}  // namespace mirage

#pragma once
// Summary statistics of a trace, for `mirage trace info`.
#include <cstddef>

#include "mirage/traces/Trace.h"

namespace mirage {

struct TraceStats {
  std::size_t jobs = 0;
  Seconds first_submit = 0;
  Seconds last_end = 0;   // latest recorded end (or submit when nothing ended)
  Seconds span = 0;       // last_end - first_submit
  int machine_nodes = 0;  // header value, else the largest job
  int largest_job_nodes = 0;
  double load = 0;  // node-seconds used / (machine_nodes * span)
  double mean_wait_s = 0;
  double median_wait_s = 0;
  double p90_wait_s = 0;
  double max_wait_s = 0;
  double mean_runtime_s = 0;
  double mean_time_limit_s = 0;
};

TraceStats compute_trace_stats(const Trace& trace, int machine_nodes_override = 0);

}  // namespace mirage

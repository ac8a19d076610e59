#pragma once
// `mirage trace waits TRACE --check FILE --from --to [--json] [--out JOBS.csv]`
// (TraceWaitsCheck.cpp).
#include <string>
#include <vector>

#include "ClusterOptions.h"

namespace mirage::cli {

struct WaitCheckOptions {
  std::string trace_file;
  std::string file;  // the wait model or binned distribution checked
  std::string from, to;
  std::string out;  // one row per judged job; empty: none
  bool json = false;
  bool no_replays = false;
  // Steps of adaptive recalibration stated beside the daemon's (a row each): how the step is
  // chosen on a fit window's last month.
  std::vector<double> adaptive_steps;
  // Minimums of a size class's own waits before its own adaptive state corrects it (a row each),
  // stated beside the pooled state alone: how the daemon's minimum is chosen.
  std::vector<std::size_t> class_minimums;
  // Decays of the weighted calibration's weights (a row each), beside its default's row.
  std::vector<double> weighted_decays;
  // The same minimums for the daemon's weighted rule (a row each, beside its pooled state alone).
  std::vector<std::size_t> weighted_class_minimums;
  // The daemon's rule fed only the most active user's jobs of each size class (30 or more): a
  // row, and a class of that user's jobs on which every row is scored.
  bool user_streams = false;
  TraceOptions trace_options;
  ClusterOptions cluster;
};

// Prints the figures (a table, or one JSON object). Throws InputError for a bad file, a window
// without jobs, or a log without start times.
void run_wait_check(const WaitCheckOptions& o);

}  // namespace mirage::cli

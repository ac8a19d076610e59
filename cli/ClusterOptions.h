#pragma once
// The machine and scheduler flags shared by `simulate`, `eval` (and later `train`), named after
// slurm.conf's parameters.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "mirage/core/ClusterSpec.h"
#include "mirage/traces/Trace.h"

namespace mirage::cli {

struct ClusterOptions {
  int nodes = 0;
  int gpus_per_node = 0;
  std::string allocation = "whole-node";
  std::string backfill = "slurm";
  Seconds sched_interval = 60;
  Seconds bf_interval = 30;
  Seconds bf_window_min = 1440;
  Seconds bf_resolution = 60;
  int bf_max_job_test = 500;
  int bf_max_job_user = 0;
  double weight_age = 1000;
  double weight_job_size = 1000;
  bool favor_small = false;
  Seconds max_age_min = 7 * 24 * 60;
  double weight_fairshare = 0;
  Seconds decay_half_life_min = 7 * 24 * 60;
  // What the log leaves out (simulator/Calibration.h): "none" replays the log's jobs alone on
  // the whole machine; "infer" infers it from the log; "auto" reads the file beside the trace
  // (simulator/CalibrationFile.h), else infers; anything else names a calibration file.
  std::string calibration = "auto";
  // The --priority-* options, to tell weights the user gave from defaults.
  std::vector<CLI::Option*> priority_flags;
  std::vector<CLI::Option*> scheduler_flags;  // --backfill, --sched-interval, --bf-*

  void add_to(CLI::App& cmd);
  // The spec for `trace`: the node count falls back to the trace header; a clear error if
  // neither says.
  ClusterSpec to_spec(const Trace& trace) const;
  // What the log leaves out, as --calibration says, into `spec` (limits, capacity) and into the
  // trace's jobs (dependencies); said in one line on stderr. Throws InputError for a bad file.
  void calibrate(Trace& trace, ClusterSpec& spec) const;
};

// Reading a trace with the shared --format / --lenient flags.
struct TraceOptions {
  std::string format = "auto";
  bool lenient = false;
  void add_to(CLI::App& cmd);
  TraceReadOptions to_read_options() const;
};

}  // namespace mirage::cli

#pragma once
// The machine flags shared by `simulate`, `eval`, `train` and `trace fidelity|calibrate`: its
// size, the site's slurm.conf for how it schedules, and the calibration for what the log leaves
// out.
#include <CLI/CLI.hpp>
#include <string>

#include "mirage/core/ClusterSpec.h"
#include "mirage/simulator/Calibration.h"
#include "mirage/traces/Trace.h"

namespace mirage::cli {

struct ClusterOptions {
  int nodes = 0;
  int gpus_per_node = 0;
  std::string allocation = "whole-node";
  // A site's slurm.conf (simulator/SlurmConf.h): the scheduler and priority settings by Slurm's
  // own key names; empty: the simulator's defaults, or those the calibration file gives.
  std::string slurm_conf;
  // slurm.conf's PriorityCalcPeriod, in minutes; -1: not given (every pass, or the slurm.conf's).
  int priority_calc_period = -1;
  // What the log leaves out (simulator/Calibration.h): "none" replays the log's jobs alone on
  // the whole machine; "infer" infers it from the log; "auto" reads the file beside the trace
  // (simulator/CalibrationFile.h), else infers; anything else names a calibration file.
  std::string calibration = "auto";
  // A forward replay: the calibration inferred from the jobs submitted before this date only,
  // carried past it (simulator/ForwardCalibration.h). Empty: fitted on the whole log.
  std::string fit_until;
  // Which inferred parts must stand out from their null before they are kept
  // (simulator/Calibration.h): "all", "none", or a list of room, links, rank, feedback.
  std::string null_tests = "all";

  // The machine's size is --cluster-nodes; where the command shapes no segment, --nodes is still
  // its old name for a release (in `eval`, `train`, `trace waits` it is the segment's).
  void add_to(CLI::App& cmd, bool command_has_segment = false);
  // The spec for `trace`: the node count falls back to the trace header; a clear error if
  // neither says.
  ClusterSpec to_spec(const Trace& trace) const;
  // What the log leaves out, as --calibration says, into `spec` (limits, capacity) and into the
  // trace's jobs (dependencies); said in one line on stderr. Throws InputError for a bad file.
  // Returns what was applied.
  Calibration calibrate(Trace& trace, ClusterSpec& spec) const;
  // --priority-calc-period, where given, into `spec`.
  void apply_priority_calc_period(ClusterSpec& spec) const;
  // The inference's settings the flags give (--null-tests).
  CalibrationSettings inference_settings() const;
  // Where the replay's calibration was fitted, in one line for the tables that stand on it: in
  // sample (on the whole log, the judged window included), forward (--fit-until), from a file, or
  // nowhere.
  std::string describe_fit(const std::string& trace_source) const;
};

// Reading a trace with the shared --format / --lenient flags.
struct TraceOptions {
  std::string format = "auto";
  bool lenient = false;
  void add_to(CLI::App& cmd);
  TraceReadOptions to_read_options() const;
};

}  // namespace mirage::cli

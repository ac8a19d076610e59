#pragma once
// A calibration saved beside its trace (TRACE.calibration.toml): a small TOML a person can read
// and edit, so that simulate, eval, train and the daemon's simulator backend replay the same
// cluster. It holds the parameters (user limits, capacity over time) and the dependency rule;
// the dependencies themselves are inferred again from the trace when it is read.
//
//   nodes = 88                      # the machine it was inferred for
//   [user_limits]
//   max_running_jobs = 8            # 0: none
//   max_running_nodes = 0
//   [capacity]                      # nodes held by work the log does not show, from each instant
//   unavailable = [["2022-11-01T00:00:00", 58], ["2022-11-02T00:00:00", 24]]
//   [dependencies]
//   infer = true
//   slack = "2m"
#include <string>

#include "mirage/simulator/Calibration.h"

namespace mirage {

// Where the calibration of the trace at `trace_path` is kept.
std::string calibration_path(const std::string& trace_path);

// Writes `c` (inferred for a machine of `nodes` from `trace_name`) to `path`, with the evidence as
// comments. Throws std::runtime_error naming the path.
void write_calibration(const Calibration& c, const CalibrationSettings& settings, int nodes,
                       const std::string& trace_name, const std::string& path);

// Reads a calibration file: the parameters into the result, the dependency rule into
// `settings`. Throws InputError naming the file, line and key for an unknown key or a bad value.
Calibration read_calibration(const std::string& path, CalibrationSettings& settings);

// The calibration `mode` asks for, for the machine `spec` replaying `trace`: "none" (nothing),
// "infer" (from the trace), "auto" (the file beside the trace when there is one, else infer), or
// the path of a calibration file. Its dependencies included; nothing applied yet. `said` gets
// one line saying where it came from and what it holds; `inference` is what infers it (a file's
// dependencies too, under its own rule). Throws InputError for a bad file.
Calibration resolve_calibration(const std::string& mode, const std::vector<Job>& jobs,
                                const std::string& trace_path, const ClusterSpec& spec,
                                std::string& said, const CalibrationSettings& inference = {});

}  // namespace mirage

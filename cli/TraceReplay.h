#pragma once
// A trace made ready for a replay, the same way for every command that replays one: read (or the
// embedded sample), the machine from the flags or the header, and jobs larger than the machine
// an error naming the first (with --lenient, dropped and counted).
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "ClusterOptions.h"
#include "mirage/core/ClusterSpec.h"
#include "mirage/traces/Trace.h"

namespace mirage::cli {

struct TraceReplay {
  Trace trace;  // only the jobs the machine can run
  ClusterSpec spec;
  std::size_t oversized = 0;  // dropped with --lenient
  // Where the calibration was inferred by replaying the log on this very machine: each job's
  // wait in that replay (jobs as above), so the log need not be replayed again.
  std::shared_ptr<const std::vector<Seconds>> calibrated_waits;
};

// The trace at `path`, or the embedded sample when `path` is empty. Throws InputError.
Trace read_trace_or_sample(const std::string& path, const TraceOptions& trace_options);

// `path` empty: the embedded sample. Throws InputError.
TraceReplay prepare_replay(const std::string& path, const TraceOptions& trace_options,
                           const ClusterOptions& cluster);
// The same for a trace already read (one read, replayed under two calibrations).
TraceReplay prepare_replay(Trace trace, const TraceOptions& trace_options,
                           const ClusterOptions& cluster);

// Each job's wait in the replay of `replay.trace.jobs` (kUnknownTime: never started): the one the
// calibration chose where it ran this very replay, else replayed now. `wall`: the replay's
// seconds (0 when none was run).
std::shared_ptr<const std::vector<Seconds>> replayed_waits(const TraceReplay& replay, double& wall);

}  // namespace mirage::cli

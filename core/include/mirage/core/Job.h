#pragma once
// A job as every part of mirage sees it: normalised from a trace, replayed by the simulator, or
// observed live by the daemon.
#include <cstdint>
#include <string>

#include "mirage/core/Time.h"

namespace mirage {

using JobId = std::int64_t;
inline constexpr Seconds kUnknownTime = -1;

struct Job {
  JobId id = 0;
  std::string user;
  std::string partition;
  Seconds submit = kUnknownTime;  // Unix seconds
  Seconds start = kUnknownTime;  // as recorded by the real scheduler; kUnknownTime if never started
  Seconds end = kUnknownTime;
  Seconds time_limit = 0;  // requested wall-clock limit (Slurm's TimeLimit), seconds
  int nodes = 1;
  int gpus_per_node = 0;  // 0: whole-node job, or a trace without GPU information
  JobId after_any = 0;    // the job it waited for (--dependency=afterany), 0: none

  bool started() const { return start != kUnknownTime; }
  // Time spent in the queue, as recorded.
  Seconds wait() const { return started() ? start - submit : kUnknownTime; }
  // True runtime as recorded (end - start).
  Seconds runtime() const { return started() && end != kUnknownTime ? end - start : kUnknownTime; }
};

}  // namespace mirage

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
  std::string queue;              // SWF's queue number; "" where the log gives none
  Seconds submit = kUnknownTime;  // Unix seconds
  Seconds start = kUnknownTime;  // as recorded by the real scheduler; kUnknownTime if never started
  Seconds end = kUnknownTime;
  Seconds time_limit = 0;  // requested wall-clock limit (Slurm's TimeLimit), seconds
  int nodes = 1;
  int gpus_per_node = 0;  // 0: whole-node job, or a trace without GPU information
  JobId after_any = 0;    // the job it waited for (--dependency=afterany), 0: none
  // With after_any: the job was not in the queue while that job ran, but submitted this long after
  // it ended (its user submitted it on seeing the end), and a replay submits it so.
  Seconds think = kUnknownTime;
  // The run time a log gives without a start (SWF's wait -1): replayed, never compared.
  Seconds run_time = kUnknownTime;
  // The scheduler's priority as the log records it (sacct's Priority), -1 when absent: the
  // evidence the priority weights are fitted to.
  std::int64_t priority = -1;

  bool started() const { return start != kUnknownTime; }
  // Time spent in the queue, as recorded.
  Seconds wait() const { return started() ? start - submit : kUnknownTime; }
  // True runtime as recorded (end - start, else the log's run time).
  Seconds runtime() const { return started() && end != kUnknownTime ? end - start : run_time; }
};

}  // namespace mirage

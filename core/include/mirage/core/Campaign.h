#pragma once
// A long training run split into segments, each one Slurm batch job.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mirage/core/Time.h"

namespace mirage {

enum class OverlapMode {
  kConcurrent,  // the predecessor runs to its own end even when the successor starts early
  kHandoff,     // the predecessor is signalled to checkpoint and stop once the successor starts
};
std::string_view to_string(OverlapMode mode);
std::optional<OverlapMode> parse_overlap_mode(std::string_view text);

enum class SegmentState { kPlanned, kPending, kRunning, kDone, kFailed };
std::string_view to_string(SegmentState state);

struct Segment {
  int index = 0;
  SegmentState state = SegmentState::kPlanned;
  std::int64_t slurm_job_id = 0;  // 0 until submitted
  Seconds submit_time = -1;
  Seconds start_time = -1;
  Seconds end_time = -1;
  int attempts = 0;
};

struct Campaign {
  std::int64_t id = 0;
  std::string name;
  std::string script;
  std::string partition;
  std::string policy = "reactive";  // a policy name or a model file
  int segment_count = 2;
  int nodes = 1;
  int gpus_per_node = 0;
  Seconds time_limit = 48 * kHour;
  OverlapMode overlap = OverlapMode::kConcurrent;
  Seconds handoff_grace = 5 * kMinute;  // how long the predecessor takes to stop after the signal
  std::vector<Segment> segments;
};

}  // namespace mirage

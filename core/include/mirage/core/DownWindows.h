#pragma once
// Spans in which the cluster started no job: its partition set DOWN (slurmctld keeps queueing
// jobs and lets running ones finish, but allocates nothing), as a site does for maintenance, an
// upgrade or a file system's outage. A log shows them as hours with no start while the machine
// stood nearly idle and a job that fitted waited (simulator/Calibration.h infers them).
// Simulator.h holds every job to them, hidden work too.
#include <optional>
#include <string>
#include <vector>

#include "mirage/core/Time.h"

namespace mirage {

struct DownWindow {
  Seconds from = 0;  // no job starts in [from, to)
  Seconds to = 0;
  bool operator==(const DownWindow&) const = default;
};

// The end of the window (sorted, not overlapping) that holds `t`; nullopt when none does.
std::optional<Seconds> down_until(const std::vector<DownWindow>& windows, Seconds t);

// "43 windows, 259 hours in all"; "none".
std::string describe_down_windows(const std::vector<DownWindow>& windows);

}  // namespace mirage

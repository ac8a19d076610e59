#pragma once
// A world made of real waits: a chain's successor submitted at instant t waits what the log's real
// jobs of its shape, submitted nearest t, waited. The replay is an instrument with known errors;
// this is the yardstick it is held against, and `mirage eval --successor-wait logged` scores the
// policies in it (they still observe the replayed queue to decide).
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mirage/core/ClusterSpec.h"
#include "mirage/core/Job.h"
#include "mirage/traces/Trace.h"

namespace mirage {

struct LoggedWaitsSpec {
  // The shape: a segment of `nodes` nodes asking `time_limit`. The real jobs that speak for it are
  // of its size class (1 node, 2-7, 8+) and ask at least half its limit (a short job backfills
  // where a segment cannot). Where the log has too few of those (pooled_floor), the class's
  // longest limits speak for it instead.
  int nodes = 1;
  Seconds time_limit = 2 * kDay;
  // The real jobs behind one wait: the `jobs` submitted nearest t, within `window` either side.
  Seconds window = 3 * kDay;
  std::size_t jobs = 5;
};

// The least limit a real job of the size class must ask to speak for a segment asking
// `time_limit`, given the limits the class's jobs asked (any order) and how many jobs that many
// days of log need to give each wait its `jobs` on average (`needed`). Half the segment's limit
// when enough jobs ask that much; else the longest limit that enough jobs reach, but never below
// the class's top quartile of limits (the longest quarter): past it the jobs are no longer long
// ones, and too few near an instant still drops the sample.
Seconds pooled_floor(std::vector<Seconds> class_limits, Seconds time_limit, double needed);

// The log the logged world reads its real waits from: `as_read`, each job whose wait its own
// fields show to have been its user's earlier job's run marked dependent on that job (after_any),
// so that LoggedWaits leaves it out. The job started within 2 minutes of that job's end, that job
// ran from its submission on, and at some moment of its wait before that end the log's own jobs
// left room for it on `machine`'s nodes (or it is a throttled array's member): the calibration's
// links as the log shows them (Calibration.h), with nothing fitted, neither hidden room nor
// limits nor the test against chance. A job's mark reads nothing after its start, so it is the
// same whatever months a calibration is fitted on and whatever follows the judged month.
Trace yardstick_log(Trace as_read, const ClusterSpec& machine);

class LoggedWaits {
 public:
  // Jobs without a real start, and those held by a dependency (their wait is the other job's
  // run, not the queue's), are left out.
  LoggedWaits(const Trace& trace, LoggedWaitsSpec spec);

  // The median wait of the spec.jobs real jobs of the shape submitted nearest `t` (ties to the
  // earlier submission) within spec.window of it; for an even count, the upper middle one. None
  // when fewer are there: the world has no figure at t.
  std::optional<Seconds> wait_at(Seconds t) const;

  const LoggedWaitsSpec& spec() const { return spec_; }
  // The real jobs of the shape in the whole log, and whether the log gives any start at all.
  std::size_t shape_jobs() const { return jobs_.size(); }
  bool log_has_starts() const { return log_has_starts_; }
  // The least limit the jobs speaking for the segment ask: half its own, or less where pooled.
  Seconds limit_floor() const { return floor_; }
  bool pooled() const { return floor_ < (spec_.time_limit + 1) / 2; }
  // "the median wait of the 5 real jobs of 2-7 asking 1d or more submitted nearest it within 3d
  // either side", for the tables.
  std::string describe() const;
  // Where pooled, one line for the tables: "pooled: limits >= 18h, 5 jobs behind each wait (...)";
  // empty where not.
  std::string pooling() const;

 private:
  LoggedWaitsSpec spec_;
  Seconds floor_ = 0;
  std::size_t exact_jobs_ = 0;  // of the class asking at least half the segment's limit
  std::vector<std::pair<Seconds, Seconds>> jobs_;  // (submit, wait), by submit
  bool log_has_starts_ = false;
};

}  // namespace mirage

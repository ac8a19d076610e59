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

#include "mirage/core/Job.h"
#include "mirage/traces/Trace.h"

namespace mirage {

struct LoggedWaitsSpec {
  // The shape: a segment of `nodes` nodes asking `time_limit`. The real jobs that speak for it are
  // of its size class (1 node, 2-7, 8+) and ask at least half its limit (a short job backfills
  // where a segment cannot).
  int nodes = 1;
  Seconds time_limit = 2 * kDay;
  // The real jobs behind one wait: the `jobs` submitted nearest t, within `window` either side.
  Seconds window = 3 * kDay;
  std::size_t jobs = 5;
};

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
  // "the 5 real jobs of 2-7 nodes asking 24 h or more submitted nearest it within 3 d (their
  // median)", for the tables.
  std::string describe() const;

 private:
  LoggedWaitsSpec spec_;
  std::vector<std::pair<Seconds, Seconds>> jobs_;  // (submit, wait), by submit
  bool log_has_starts_ = false;
};

}  // namespace mirage

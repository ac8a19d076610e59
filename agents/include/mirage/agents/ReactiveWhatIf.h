#pragma once
// The fidelity check a user would make of a what-if: a chain's reactive successor of N nodes,
// inserted into the replay, should wait about as long as the real N-node jobs submitted near that
// moment did. Only the replay's inferred cluster (limits, capacity, priority) can make it so; the
// real waits are the yardstick, never an input.
#include <vector>

#include "mirage/core/ClusterSpec.h"
#include "mirage/traces/Trace.h"

namespace mirage {

struct ReactiveWhatIfConfig {
  int nodes = 1;
  int gpus_per_node = 0;
  Seconds time_limit = 2880 * kMinute;  // each segment runs its limit, as eval's chains do
  Seconds from = 0;                     // sample times from, from + every, ... < to
  Seconds to = 0;
  Seconds every = 4 * kHour;
  // The real jobs compared: exactly `nodes` nodes, a time limit at least half the segment's (a
  // short job backfills where a segment cannot), submitted within this much of a successor's
  // submission; each successor weighs the same, however many real jobs are near it.
  Seconds near = 2 * kDay;
  int threads = 0;  // 0: all cores
  // The log's own jobs chained: at most this many, evenly spread over those submitted in
  // [from, to) (0: skip that check).
  std::size_t log_predecessors = 200;
};

struct ReactiveWhatIf {
  int nodes = 1;
  Seconds time_limit = 0;
  // The successors: one per sample, submitted a minute before their predecessor's end.
  std::size_t successors = 0;
  std::size_t truncated = 0;  // still pending at eval's cut-off (their wait counts to it)
  // The successors compared: those with real jobs of their size near them. The figures below
  // are theirs; the real side is each one's near jobs, every successor weighing the same.
  std::size_t compared = 0;
  double sim_mean_wait_s = 0, sim_median_wait_s = 0, sim_over_1h = 0;
  // The real jobs of that size submitted near the successors' submissions.
  std::size_t real_jobs = 0;
  double real_mean_wait_s = 0, real_median_wait_s = 0, real_over_1h = 0;
  double ratio = 0;  // sim mean / real mean; 0 when either side has nothing to compare
  // Of those, the jobs whose user had nothing pending when they were submitted, as a successor's
  // user has not: the like-for-like yardstick where a log's users queue behind their own jobs
  // (queued_behind_own). None when the log names no users.
  std::size_t lone_jobs = 0;
  double lone_mean_wait_s = 0, lone_median_wait_s = 0;
  double lone_ratio = 0;  // the successors with lone jobs near them: their sim mean / those jobs'

  // The same check with the log's own jobs of that size as predecessors: each successor submitted
  // a minute before its predecessor's replayed end, as that job's user. A chain's predecessor is
  // load the log never had (a 2-day, 8-node job on a congested machine builds a backlog its
  // successor waits behind); a log job's was in the log, and so in what the calibration inferred.
  std::size_t log_successors = 0;
  std::size_t log_truncated = 0;  // still pending at their allowance (the wait counts to it)
  std::size_t log_dropped = 0;    // too near the log's end for a successor's whole allowance
  std::size_t log_compared = 0;   // those with real jobs near them: the figures below are theirs
  double log_sim_mean_wait_s = 0, log_sim_median_wait_s = 0, log_sim_over_1h = 0;
  std::size_t log_real_jobs = 0;  // the real jobs near those successors
  double log_real_mean_wait_s = 0;
  double log_ratio = 0;

  // The target: within 0.67 to 1.5 times the real waits of jobs of its size.
  bool on_target() const { return ratio >= 0.67 && ratio <= 1.5; }
  bool lone_on_target() const { return lone_ratio >= 0.67 && lone_ratio <= 1.5; }
  bool log_on_target() const { return log_ratio >= 0.67 && log_ratio <= 1.5; }
};

// The sizes worth checking in a log: the most common node count of each size class (1 node, 2-7,
// 8+) among the jobs submitted in [from, to) (0: no bound), smallest first.
std::vector<int> typical_chain_sizes(const std::vector<Job>& jobs, Seconds from, Seconds to);

// A long segment at this site for `nodes`: the 90th percentile of the time limits the log's jobs
// of that size asked for in [from, to); 0 when there are none.
Seconds long_time_limit(const std::vector<Job>& jobs, int nodes, Seconds from, Seconds to);

// Runs reactive two-segment chains of `config.nodes` nodes on the replay of `trace` over
// `cluster` (calibrated or not) and compares the successors' waits with the log's. Jobs without a
// real start are left out of the real side.
ReactiveWhatIf check_reactive_what_if(const Trace& trace, const ClusterSpec& cluster,
                                      const ReactiveWhatIfConfig& config);

}  // namespace mirage

#pragma once
// How true a replay is to the cluster in the log: every job's simulated wait against the wait it
// really had, overall, by job size and by month. This is how the simulator's models of what the
// log leaves out are judged (docs/results/fidelity.md), so the figures are plain and the targets
// fixed.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "mirage/core/Job.h"
#include "mirage/simulator/Simulator.h"

namespace mirage {

// One job's two waits. `nodes` and `submit` place it in its size class and month.
struct WaitPair {
  Seconds submit = 0;
  int nodes = 1;
  Seconds real_wait = 0;
  Seconds sim_wait = 0;
  Seconds time_limit = 0;
  std::uint32_t user = 0;   // an index of the log's user names; 0: the log names none
  bool behind_own = false;  // it queued behind its own user's jobs (queued_behind_own)
};

// For each job of `jobs`, whether it queued behind its own user's: a job of the same user
// submitted before it had not started yet when it was submitted. A chain's successor never does,
// and on some clusters these jobs wait many times longer than a user's lone job (a per-user queue
// the log does not name), so a what-if is also held against the lone jobs. Jobs of no named user
// and jobs the log never started are behind nothing and hold nothing back.
std::vector<char> queued_behind_own(const std::vector<Job>& jobs);

// How far the log's own waits can be told apart by what a replay sees of a job. Twins are two
// jobs alike in all of it: the same nodes, time limits within a quarter of each other, submitted
// within ten minutes of each other by different users (not one user's array). Where a job's real
// wait barely ranks with its twin's, the rest of what decided it is not in the log, and no replay
// of the log ranks the waits much better. Where the log names no user, twins may be one user's
// jobs, which wait more alike (docs/results/fidelity.md, twins): such pairs are counted apart.
struct TwinAgreement {
  std::size_t pairs = 0;
  std::size_t unnamed_pairs = 0;  // of them, pairs with a job whose user the log does not name
  double real_with_twin = 0;      // rank correlation of a job's real wait with its twin's
  double sim_with_real = 0;       // the replay's rank correlation with the real waits, same jobs
};

// The targets every trace is held to: mean ratio 0.75..1.33, share over 1 h within 7 points,
// rank correlation at least 0.5 (docs/results/fidelity.md).
struct FidelityTargets {
  static constexpr double kRatioLow = 0.75, kRatioHigh = 1.33;
  static constexpr double kShareGap = 0.07;
  static constexpr double kRank = 0.5;
};

// The figures of one group of jobs.
struct WaitFidelity {
  std::string group;  // "all", "1 node", "2-7 nodes", "8+ nodes", "2023-02"
  std::size_t jobs = 0;
  double real_mean_s = 0, sim_mean_s = 0;
  double real_median_s = 0, sim_median_s = 0;
  double real_p90_s = 0, sim_p90_s = 0;
  double real_over_1h = 0, sim_over_1h = 0;  // shares of waits over one hour
  double rank_correlation = 0;               // Spearman's, ties ranked by their mean
  double mean_ratio = 0;                     // sim mean / real mean; 0 when the real mean is 0

  bool ratio_on_target() const {
    return mean_ratio >= FidelityTargets::kRatioLow && mean_ratio <= FidelityTargets::kRatioHigh;
  }
  bool share_on_target() const {
    return std::abs(sim_over_1h - real_over_1h) <= FidelityTargets::kShareGap;
  }
  bool correlation_on_target() const { return rank_correlation >= FidelityTargets::kRank; }
  // How far the figures lie outside their targets, each in units of its target's width (the
  // mean ratio's logarithm over ln 1.33, the share's gap over 7 points, the rank correlation's
  // shortfall over 0.1), summed: 0 when every target is met.
  double target_miss() const;
  // The same distances measured from the middle of each target (ratio 1, no gap, rank 0.5).
  double centre_distance() const;
};

// Whether `a` waits more like the log than `b`: less outside the targets, and where both lie as
// far outside (most often within every target), nearer their middle.
bool closer_to_targets(const WaitFidelity& a, const WaitFidelity& b);

struct FidelityReport {
  WaitFidelity overall;
  std::vector<WaitFidelity> by_size;   // 1 node, 2-7 nodes, 8+ nodes (classes with jobs)
  std::vector<WaitFidelity> by_month;  // by the month of submission (UTC), in order
  // Jobs whose user had nothing pending when they were submitted ("lone") and jobs queued behind
  // their user's own ("behind own"); empty when the log names no users.
  std::vector<WaitFidelity> by_user_queue;
  TwinAgreement twins;
  std::size_t without_real_start = 0;  // jobs the log gives no start for: not compared
};

// Pairs each trace job (index i of the replay is jobs[i]) with its simulated wait. Jobs of
// `jobs` submitted outside [from, to) are left out (0: no bound); so are jobs without a real
// start, which are counted in `without_real_start`.
std::vector<WaitPair> pair_waits(const std::vector<Job>& jobs, const Simulator& sim, Seconds from,
                                 Seconds to, std::size_t& without_real_start);
// The same from the replay's wait of jobs[i] (Simulator::waits; kUnknownTime: never started).
std::vector<WaitPair> pair_waits(const std::vector<Job>& jobs, const std::vector<Seconds>& waits,
                                 Seconds from, Seconds to, std::size_t& without_real_start);

// Throws std::invalid_argument when `pairs` is empty.
FidelityReport measure_fidelity(const std::vector<WaitPair>& pairs);
// Its overall figures alone for the jobs of a whole replay (what choosing a calibration by replay
// reads): measure_fidelity(pair_waits(jobs, waits, 0, 0, ...)).overall, without pairing each job
// with its user and queue. Throws std::invalid_argument when no job has both waits.
WaitFidelity measure_overall_fidelity(const std::vector<Job>& jobs,
                                      const std::vector<Seconds>& waits);

// One side's figures of a comparison (the log's waits or the replay's): what WaitFidelity holds
// of it, and the waits' ranks in their order, which the rank correlation pairs with the other
// side's.
struct WaitSideFigures {
  std::size_t jobs = 0;
  double mean_s = 0, over_1h = 0, median_s = 0, p90_s = 0;
  std::vector<double> ranks;  // none for fewer than two waits
};
WaitSideFigures side_figures(std::vector<double> waits);
// The log's side of measure_overall_fidelity for `jobs` (its jobs with a real start), worked out
// once for every replay of the same jobs: a calibration's inference replays one log with several
// weightings, and the log's waits are ranked once, not once a replay.
WaitSideFigures logged_wait_figures(const std::vector<Job>& jobs);
// measure_overall_fidelity(jobs, waits) to the bit, its log's side taken from `logged`
// (logged_wait_figures(jobs)); worked out again where the replay left a job the log started
// unstarted (fewer jobs compared). Throws std::invalid_argument where `logged` is of another
// number of started jobs.
WaitFidelity measure_overall_fidelity(const std::vector<Job>& jobs, const WaitSideFigures& logged,
                                      const std::vector<Seconds>& waits);

// Twins among `pairs` (in submission order), each job in one pair at most.
TwinAgreement twin_agreement(const std::vector<WaitPair>& pairs);

// "1 node", "2-7 nodes", "8+ nodes".
std::string size_class(int nodes);

// Spearman's rank correlation of two equally long samples (0 when either is constant).
double rank_correlation(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace mirage

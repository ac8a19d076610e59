#pragma once
// Slurm's multifactor priority weights, fitted to the priority a log records for each job (sacct's
// Priority column): a least-squares fit of
//
//   priority = constant + age weight x age factor + fairshare weight x fairshare factor
//              + job size weight x size factor
//
// with the factors computed as the simulator computes them (ClusterSpec.h): the fairshare factor
// from the log's own usage before each job's submission, decayed with a half-life (the one of
// several that fits best), the size factor growing or, PriorityFavorSmall, shrinking with the
// job's share of the machine, the age factor from the wait the job had when its priority was
// recorded. A factor whose weight comes out negative is left out: the log shows no such
// preference. The constant (QOS, partition) is the same for every job of a log and ranks nothing.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mirage/core/ClusterSpec.h"
#include "mirage/core/Job.h"
#include "mirage/simulator/Fidelity.h"

namespace mirage {

struct PriorityFit {
  PriorityParameters weights;  // age, job size, fairshare, half-life; max_age from the spec
  double r2 = 0;               // share of the priorities' variance the factors explain
  std::size_t jobs = 0;        // jobs fitted
  std::size_t outliers = 0;    // jobs set aside: over 3 standard errors off the first fit
  // Where the log records no priority the weights are chosen by replay instead (Calibration.h):
  // how many weightings were replayed (the chosen one's figures: `replay`, below).
  int candidates = 0;
  // Of those, first-come-first-served was kept: it waited most like the log, or the weighting
  // that did ranked the log's waits more than kRankMargin below it. The two ranks (Spearman's, of
  // the replays the choice was made on), for reports.
  bool like_fcfs = false;
  double fcfs_rank = 0, closest_rank = 0;
  // Where the column was fitted but could not tell the age weight (it came out 0: a priority
  // recorded before the job aged does not grow with its wait), that weight is chosen by replay:
  // how many age weights were replayed (`replay` is then the chosen one's).
  int age_candidates = 0;
  // The kept replay's figures, overall, where one was chosen: after the weights, the room and
  // feedback chosen by replay replace them with their own replay's.
  WaitFidelity replay;
  // The chosen replay's wait of each job it ran (the log's jobs the machine can run, in the
  // log's order; Simulator::waits): a caller about to replay the log on the machine so
  // calibrated, as `trace fidelity` is, has its outcome already. Not written to a file.
  std::shared_ptr<const std::vector<Seconds>> replay_waits;
};

// Where the log records no priority, the weighting whose replay waits most like the log is kept
// unless it ranks the log's waits (Spearman's) more than this below first-come-first-served's
// replay: a weighting that comes closer to the targets only by ordering the queue worse stands in
// for something else the replay gets wrong (room, a scheduler setting). On logs the simulator
// made with job size weights the weighting kept ranks them 0.09 to 0.57 above it; on the embedded
// sample, made first-come-first-served, the closest weighting ranks them 0.09 below it
// (docs/results/fidelity.md).
inline constexpr double kRankMargin = 0.02;

// The weights in words: "age 0, fairshare 363 (half-life 7-00:00:00), job size 503 favoring
// small jobs". One wording for the calibration file, the one-line summary and `trace calibrate`.
std::string describe_weights(const PriorityFit& fit);
// Where they came from, with the evidence: fitted to the log's Priority column, or chosen by
// replay (and how close that replay came to the log's waits).
std::string describe_evidence(const PriorityFit& fit);

// The fit for the machine `spec`, from the jobs of `jobs` that have a start and a priority.
// Nothing when fewer than `min_jobs` have one, the priorities do not vary, or the factors explain
// less than a tenth of their variance.
std::optional<PriorityFit> fit_priority(const std::vector<Job>& jobs, const ClusterSpec& spec,
                                        std::size_t min_jobs = 100);

}  // namespace mirage

// Priority weights chosen by replay where the log records none, and the rank rule (Calibration.h).

#include <future>
#include <optional>
#include <vector>

#include "CalibrationReplay.h"
#include "mirage/simulator/Calibration.h"

namespace mirage {

using namespace calibration;  // the replays (CalibrationReplay.h)

std::optional<PriorityFit> choose_priority_by_replay(const std::vector<Job>& all,
                                                     const ClusterSpec& spec, const Calibration& c,
                                                     bool test_rank) {
  const auto replay = calibrated_replay(all, spec, c);
  if (!replay) return std::nullopt;
  // First-come-first-served (the age factor alone orders jobs as they came) first: the weighting
  // every other has to beat.
  std::vector<PriorityParameters> candidates;
  for (const double fairshare :
       replay->users ? std::vector<double>{0, 1000} : std::vector<double>{0})
    for (const int size : {0, 1, -1}) {         // ignore size, favour large jobs, favour small jobs
      if (fairshare > 0 && size < 0) continue;  // two factors against large jobs: not a site's
      PriorityParameters p = spec.priority;
      p.weight_fairshare = fairshare;
      p.weight_job_size = size == 0 ? 0 : 1000;
      p.favor_small = size < 0;
      candidates.push_back(p);
    }
  std::vector<std::future<ReplayOutcome>> runs;
  for (const PriorityParameters& p : candidates) runs.push_back(replay_outcome_async(*replay, p));
  std::vector<ReplayOutcome> outcomes;
  for (auto& run : runs) outcomes.push_back(run.get());
  std::size_t chosen = 0;
  for (std::size_t i = 1; i < outcomes.size(); ++i)
    if (closer_to_targets(outcomes[i].figures, outcomes[chosen].figures)) chosen = i;
  // A weighting orders the queue: one that comes closer to the targets only by ranking the log's
  // waits more than kRankMargin below first-come-first-served stands in for something else.
  PriorityFit fit;
  fit.fcfs_rank = outcomes[0].figures.rank_correlation;
  fit.closest_rank = outcomes[chosen].figures.rank_correlation;
  const bool told_apart =
      chosen != 0 && (!test_rank || fit.closest_rank >= fit.fcfs_rank - kRankMargin);
  if (!told_apart) chosen = 0;
  fit.weights = candidates[chosen];
  fit.candidates = static_cast<int>(candidates.size());
  fit.jobs = outcomes[chosen].figures.jobs;
  fit.like_fcfs = !told_apart;
  record_replay(outcomes[chosen], fit);
  return fit;
}

void choose_age_by_replay(const std::vector<Job>& all, const ClusterSpec& spec, Calibration& c) {
  if (!c.priority || c.priority->weights.weight_age > 0) return;
  const auto replay = calibrated_replay(all, spec, c);
  if (!replay) return;
  std::vector<PriorityParameters> candidates;
  for (const double age : kAgeWeightsReplayed) {
    PriorityParameters p = c.priority->weights;
    p.weight_age = age;
    candidates.push_back(p);
  }
  const auto [chosen, outcome] = closest_weighting(*replay, candidates);
  c.priority->weights = candidates[chosen];
  c.priority->age_candidates = static_cast<int>(candidates.size());
  record_replay(outcome, *c.priority);
}

}  // namespace mirage

// Feedback: jobs submitted on seeing their user's earlier job end (Calibration.h).

#include <algorithm>
#include <cmath>
#include <iterator>
#include <unordered_map>
#include <utility>
#include <vector>

#include "CalibrationParts.h"
#include "CalibrationReplay.h"

namespace mirage::calibration {

// Jobs submitted within settings.feedback_within of the end of their user's latest-ended job
// (which started before they were submitted), and not already replayed as dependent on a job.
void infer_followers(const LogView& log, const CalibrationSettings& settings, Calibration& c) {
  c.followers.clear();
  c.feedback = settings.feedback;
  if (!settings.feedback) return;
  std::unordered_map<JobId, char> dependent;
  for (const auto& [job, after] : c.dependencies) dependent.emplace(job, 1);
  for (const Job* b : log.jobs) {
    if (b->user.empty() || dependent.count(b->id)) continue;
    const auto& list = log.ends.at(b->user);
    auto it = std::upper_bound(list.begin(), list.end(), b->submit,
                               [](Seconds t, const Job* j) { return t < j->end; });
    if (it == list.begin()) continue;
    const Job* a = *std::prev(it);
    if (a != b && a->start < b->submit && b->submit - a->end <= settings.feedback_within)
      c.followers.push_back({b->id, a->id, b->submit - a->end});
  }
}

// Feedback, chosen by replay: where the kept replay of `c` misses a fidelity target, the log is
// replayed again with the followers feedback infers, the rest as chosen, and that is kept only
// where it lies less far outside the targets. A replay inside every target is left alone.
void choose_feedback_by_replay(const std::vector<Job>& all, const LogView& log,
                               const ClusterSpec& spec, const CalibrationSettings& settings,
                               Calibration& c) {
  using Choice = Calibration::FeedbackChoice;
  if (!c.priority || !c.priority->replay_waits) return;
  const WaitFidelity kept = c.priority->replay;
  if (kept.target_miss() <= 0) {
    c.feedback_choice = Choice::kTargetsMet;
    return;
  }
  CalibrationSettings with = settings;
  with.feedback = true;
  Calibration trial = c;
  infer_followers(log, with, trial);
  c.feedback_choice = Choice::kNoFollowers;
  if (trial.followers.empty()) return;
  // A job submitted minutes after its user's earlier one ended happens by chance too: the kept
  // replay (without feedback) written as a log shows how often; the log's followers must
  // outnumber those by kLinkSigmas standard deviations, as dependencies must.
  const std::vector<Job> null_jobs = replayed_as_log(all, spec, c);
  Calibration by_chance = c;
  infer_followers(LogView(null_jobs), with, by_chance);
  const auto seen = static_cast<double>(trial.followers.size()),
             chance = static_cast<double>(by_chance.followers.size());
  c.followers_by_chance = static_cast<int>(chance);
  c.feedback_choice = Choice::kByChance;
  if (settings.test_feedback && seen - chance <= kLinkSigmas * std::sqrt(seen + chance)) return;
  const auto r = calibrated_replay(all, spec, trial);
  if (!r) return;
  ReplayOutcome o = replay_outcome(*r, trial.priority->weights);
  c.feedback_choice = Choice::kNoCloser;
  if (!lies_less_far_outside(o.figures, kept)) return;
  c = std::move(trial);
  c.feedback_choice = Choice::kChosen;
  record_replay(o, *c.priority);
}

}  // namespace mirage::calibration

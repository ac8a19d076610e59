// Feedback: jobs submitted on seeing their user's earlier job end (Calibration.h).

#include <algorithm>
#include <cmath>
#include <iterator>
#include <unordered_set>
#include <utility>
#include <vector>

#include "CalibrationChance.h"
#include "CalibrationParts.h"
#include "CalibrationReplay.h"

namespace mirage::calibration {

// Jobs submitted within settings.feedback_within of the end of their user's latest-ended job
// (which started before they were submitted), and not already replayed as dependent on a job.
void infer_followers(const LogView& log, const CalibrationSettings& settings, Calibration& c) {
  c.followers.clear();
  c.feedback = settings.feedback;
  if (!settings.feedback) return;
  std::unordered_set<JobId> dependent;
  for (const auto& [job, after] : c.dependencies) dependent.insert(job);
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

namespace {

// The log's followers, and how many its own times give by chance. A user who holds many of the
// jobs running sees one of them end minutes before many of their submissions without waiting for
// it; so, for each job b, the jobs running at some moment of the feedback_within before its
// submission that ended by it are taken as a random draw from all those running then, whoever's
// they are, and the chance that the draw holds one of b's user's is hypergeometric (ChanceCount).
// The log's own submissions, starts and ends stay as they are; only who ran which job is left to
// chance. Counted over the jobs infer_followers looks at: with a user, not replayed as dependent.
ChanceCount followers_against_shuffled_users(const LogView& log,
                                             const CalibrationSettings& settings,
                                             const Calibration& c) {
  std::unordered_set<JobId> dependent;
  for (const auto& [job, after] : c.dependencies) dependent.insert(job);
  std::vector<const Job*> by_submit = log.jobs;
  std::sort(by_submit.begin(), by_submit.end(), [](const Job* a, const Job* b) {
    return a->submit != b->submit ? a->submit < b->submit : a->id < b->id;
  });
  RunningSweep sweep(log);
  ChanceCount out;
  for (const Job* b : by_submit) {
    const std::vector<const Job*>& running = sweep.at(b->submit, settings.feedback_within);
    if (b->user.empty() || dependent.count(b->id)) continue;
    int all = 0, own = 0, ended = 0;
    bool own_ended = false;
    for (const Job* a : running) {
      if (a == b) continue;
      const bool mine = a->user == b->user, in_window = a->end <= b->submit;
      ++all;
      own += mine;
      ended += in_window;
      own_ended = own_ended || (mine && in_window);
    }
    if (own > 0 && ended > 0) out.add(own_ended, all, own, ended);
  }
  return out;
}

}  // namespace

// Feedback, chosen by replay: where the log's followers stand out from chance on its own times
// and the kept replay of `c` misses a fidelity target, the log is replayed again with the
// followers feedback infers, the rest as chosen, and that is kept only where it lies less far
// outside the targets. A replay inside every target is left alone.
void choose_feedback_by_replay(const std::vector<Job>& all, const LogView& log,
                               const ClusterSpec& spec, const CalibrationSettings& settings,
                               Calibration& c) {
  using Choice = Calibration::FeedbackChoice;
  if (!c.priority || !c.priority->replay_waits) return;
  CalibrationSettings with = settings;
  with.feedback = true;
  Calibration trial = c;
  infer_followers(log, with, trial);
  c.feedback_choice = Choice::kNoFollowers;
  if (trial.followers.empty()) return;
  // Before any replay: a job submitted minutes after its user's earlier one ended happens by
  // chance too, and the log's followers must outnumber those by kLinkSigmas standard
  // deviations, as its dependencies must.
  const ChanceCount chance = followers_against_shuffled_users(log, with, c);
  trial.followers_seen = c.followers_seen = chance.seen;
  trial.followers_by_chance = c.followers_by_chance =
      static_cast<int>(std::lround(chance.expected));
  c.feedback_choice = Choice::kByChance;
  if (settings.test_feedback && !chance.stands_out()) return;
  const WaitFidelity kept = c.priority->replay;
  c.feedback_choice = Choice::kTargetsMet;
  if (kept.target_miss() <= 0) return;
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

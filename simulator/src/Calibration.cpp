#include "mirage/simulator/Calibration.h"

#include <fmt/format.h>

#include <future>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "CalibrationParts.h"
#include "mirage/simulator/Fidelity.h"
#include "mirage/simulator/PriorityFit.h"

namespace mirage {

using namespace calibration;  // the parts (CalibrationParts.h)

Calibration infer_calibration(const std::vector<Job>& all, const ClusterSpec& spec,
                              const CalibrationSettings& settings) {
  Calibration c;
  const LogView log(all);
  if (log.jobs.empty()) return c;
  if (settings.boundaries) infer_boundaries(log, settings, c);
  infer_limits(log, spec, settings, c);
  if (settings.down_windows && spec.allocation == AllocationMode::kWholeNode)
    infer_down_windows(log, spec, settings, c);
  const bool whole_node = spec.allocation == AllocationMode::kWholeNode;
  auto nothing_hidden =
      whole_node ? replay_nothing_hidden(all, spec, settings, c) : std::future<std::vector<Job>>{};
  const auto candidates = dependency_candidates(log, settings, c);
  // The links' count against chance reads only the rules inferred so far: on a thread of its own
  // (a copy of them), beside the null replay.
  auto links = settings.dependencies ? std::async(std::launch::async,
                                                  [&log, &spec, &settings, &candidates, rules = c] {
                                                    return count_links_against_chance(
                                                        log, spec, settings, candidates, rules);
                                                  })
                                     : std::future<ChanceCount>{};
  const std::vector<char> room_seen =
      whole_node ? room_evidence(log, spec, settings, candidates, std::move(nothing_hidden), c)
                 : std::vector<char>{};
  if (whole_node) infer_capacity(log, spec, settings, room_seen, c);
  if (settings.dependencies) {
    confirm_dependencies(log, spec, settings, candidates, c);
    test_links_against_chance(log, spec, settings, candidates, links.get(), c);
  }
  infer_followers(log, settings, c);
  if (settings.priority) {
    c.priority = fit_priority(all, spec);
    if (c.priority)
      choose_age_by_replay(all, spec, c);
    else
      c.priority = choose_priority_by_replay(all, spec, c, settings.test_rank);
    const bool choose_room = settings.choose_capacity_share && whole_node;
    if (choose_room)
      choose_capacity_share_by_replay(all, log, spec, settings, candidates, room_seen, c);
    if (settings.choose_feedback && !settings.feedback)
      choose_feedback_by_replay(all, log, spec, settings, c);
    if (choose_room)
      refine_capacity_share_by_replay(all, log, spec, settings, candidates, room_seen, c);
  }
  return c;
}

namespace {

// c's dependencies and followers over `all`, the links tested against chance on `all` again or
// kept to c's verdict (links_told_apart), and feedback as `feedback` has it.
void relink(const std::vector<Job>& all, const ClusterSpec& spec,
            const CalibrationSettings& settings, bool test_links, bool feedback, Calibration& c) {
  c.dependencies.clear();
  c.array_members = 0;
  c.followers.clear();
  if (c.priority) c.priority->replay_waits.reset();  // a replay of other dependencies
  const LogView log(all);
  if (log.jobs.empty()) return;
  if (settings.dependencies) {
    const auto candidates = dependency_candidates(log, settings, c);
    if (test_links) c.links_told_apart = true;
    confirm_dependencies(log, spec, settings, candidates, c);
    if (test_links)
      test_links_against_chance(log, spec, settings, candidates,
                                count_links_against_chance(log, spec, settings, candidates, c), c);
  }
  CalibrationSettings followed = settings;
  followed.feedback = feedback;
  infer_followers(log, followed, c);
}

}  // namespace

void infer_dependencies(const std::vector<Job>& all, const ClusterSpec& spec,
                        const CalibrationSettings& settings, Calibration& c) {
  relink(all, spec, settings, /*test_links=*/true, settings.feedback, c);
}

void apply_fitted_dependencies(const std::vector<Job>& all, const ClusterSpec& spec,
                               const CalibrationSettings& settings, Calibration& c) {
  relink(all, spec, settings, /*test_links=*/false, c.feedback, c);
}

void apply_calibration(const Calibration& calibration, ClusterSpec& spec, std::vector<Job>& jobs) {
  spec.user_limits = calibration.user_limits;
  if (calibration.priority) spec.priority = calibration.priority->weights;
  if (calibration.scheduler) spec.scheduler = *calibration.scheduler;
  spec.unavailable =
      calibration.unavailable.empty()
          ? nullptr
          : std::make_shared<const std::vector<CapacityStep>>(calibration.unavailable);
  spec.boundaries =
      calibration.boundaries.empty()
          ? nullptr
          : std::make_shared<const std::vector<WeeklyBoundaries>>(calibration.boundaries);
  spec.down = calibration.down.empty()
                  ? nullptr
                  : std::make_shared<const std::vector<DownWindow>>(calibration.down);
  if (calibration.dependencies.empty() && calibration.followers.empty()) return;
  const std::unordered_map<JobId, JobId> after(calibration.dependencies.begin(),
                                               calibration.dependencies.end());
  std::unordered_map<JobId, const Calibration::Follower*> follows;
  for (const Calibration::Follower& f : calibration.followers) follows.emplace(f.job, &f);
  for (Job& j : jobs)
    if (const auto it = after.find(j.id); it != after.end()) {
      j.after_any = it->second;
    } else if (const auto f = follows.find(j.id); f != follows.end()) {
      j.after_any = f->second->after;
      j.think = f->second->think;
    }
}

std::string Calibration::describe_feedback_choice() const {
  const std::string against = fmt::format(
      "{} of the log's jobs were submitted minutes after their user's earlier job ended, against "
      "{} by chance, whoever's jobs ended then",
      followers_seen, followers_by_chance);
  switch (feedback_choice) {
    case FeedbackChoice::kChosen:
      return "chosen by replay: without it the replay missed a fidelity target, and with it lies "
             "less far outside them; " +
             against;
    case FeedbackChoice::kNoCloser:
      return "off: tried by replay, it brought the replay no closer to the fidelity targets; " +
             against;
    case FeedbackChoice::kNoFollowers:
      return "off: no job of the log was submitted minutes after its user's earlier one ended";
    case FeedbackChoice::kTargetsMet:
      return "off: the replay without it met every fidelity target; " + against;
    case FeedbackChoice::kByChance:
      return "off: " + against + ": the log cannot tell feedback apart from none";
    case FeedbackChoice::kNotTried: break;
  }
  return "off: not tried (no replay of the log was chosen to judge it by)";
}

std::string Calibration::describe_boundaries() const {
  return mirage::describe_boundaries(boundaries);
}

std::string Calibration::describe_room() const {
  if (congested_windows == 0) return "";
  const std::string held = capacity_share > 0
                               ? fmt::format("held for {:.0f}% of it", 100 * capacity_share)
                               : std::string("held at their most");
  return fmt::format("a congested {}'s room what the log's jobs {}{}",
                     window == kDay ? std::string("day") : "window", held,
                     share_candidates > 0
                         ? fmt::format(" (of {} shares replayed, the one whose replay lies least "
                                       "outside the targets)",
                                       share_candidates)
                         : std::string());
}

std::string Calibration::describe_room_evidence() const {
  if (windows == 0) return "";
  if (congested_windows == 0)
    return fmt::format(
        "waiting jobs stood beside no more idle room they fitted than in the log replayed with "
        "nothing hidden ({:.1f} nodes on average) and {:.0f}% of the machine: the log cannot tell "
        "hidden room apart from none",
        idle_by_chance, 100 * kRoomMargin);
  return fmt::format(
      "waiting jobs stood beside more idle room they fitted than in the log replayed with nothing "
      "hidden ({:.1f} nodes on average) and {:.0f}% of the machine",
      idle_by_chance, 100 * kRoomMargin);
}

std::string Calibration::describe_links() const {
  if (links_seen == 0) return "";
  const std::string seen = fmt::format(
      "{} of the log's jobs outside arrays started as their user's earlier job ended, after a "
      "wait with room free",
      links_seen);
  if (!links_told_apart)
    return fmt::format(
        "{}; {} would by chance, whoever's jobs ended then: the log cannot tell these "
        "dependencies apart from none",
        seen, links_by_chance);
  return fmt::format("{}, against {} by chance, whoever's jobs ended then", seen, links_by_chance);
}

std::string Calibration::describe_congestion() const {
  return fmt::format(
      "{} of {} {} congested", congested_windows, windows,
      window == kDay ? std::string("days") : "windows of " + format_short_duration(window));
}

}  // namespace mirage

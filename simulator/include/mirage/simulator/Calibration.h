#pragma once
// What a job log leaves out of its cluster, inferred from the log itself, so that a replay waits
// as the real jobs waited (docs/results/fidelity.md). Each part is a model of the cluster
// with parameters fitted to the log, never a copy of any job's start:
//
//   boundaries     A site that switches between prime time and the night lets no job run across
//                  the switch: in a log, an hour of the week that the time limits of the log's
//                  jobs almost never ran across, four weeks after four weeks
//                  (WeeklyBoundaries.h). Held as a weekly recurring reservation holds it.
//   down windows   Spans in which no job started while the machine stood nearly idle and a job
//                  that fitted waited (maintenance, an upgrade: the partition set DOWN): in a log,
//                  at least three hours between two starts in which the nodes the log's jobs held
//                  fell to a tenth of the machine with such a job waiting (DownWindows.h). No job
//                  starts in them; running ones go on.
//   user limits    A per-user limit on running jobs (or nodes) shows in a log as a value that
//                  several users reach and nobody exceeds, and at which their waiting jobs were
//                  passed over while room they fitted was free: kept only where, at the value,
//                  the log's own starts show room for those users' waiting jobs more often than
//                  for jobs of the same nodes while the same users were under it (kLimitSigmas),
//                  else none. Held as a QOS would hold it.
//   capacity       Nodes held by work the log does not show. Over each window (a day by
//                  default) in which some job waited that neither its user's limits nor a
//                  dependency held back, the cluster had about as much room as the log's jobs
//                  held for a share of that window (a quarter: their use's 0.75 quantile over
//                  time, not the most they held at any moment; or that most, or 35%, where the
//                  log's waits say so: chosen by replay); the rest is taken as held by hidden work,
//                  which the replay runs as background jobs (HiddenWork.h): they queue as other
//                  jobs do, so the log's jobs still reach their peaks when hidden work waits.
//                  Windows where nobody waited say nothing, and get the whole machine. None is
//                  congested unless, over the whole log, waiting jobs stood beside more idle room
//                  they fitted than in the log replayed with nothing hidden (EASY backfill's
//                  reservations leave some): else the log cannot tell hidden room from none.
//   dependencies   A job that waited while its user was under the limits and the cluster had
//                  room for it, and started as the same user's earlier job ended, waited for that
//                  job: it is replayed as --dependency=afterany on it. Kept only where the log
//                  shows more such jobs than its own starts and ends give by chance, whoever's
//                  the jobs that ended just before each start were (kLinkSigmas), else none.
//   arrays         Jobs one user submitted at the same second with the same request (an array,
//                  or a script's loop) of which the log never ran more than K at once, though
//                  fewer than all: an array throttled to K (--array=...%K). Each member after the
//                  first K the log started, if it waited, is a candidate dependency on the member
//                  whose end freed its slot (an earlier-started one that had ended by its start:
//                  every dependency points to an earlier start, none closes a cycle), confirmed
//                  as the others are (its wait had room).
//   feedback       A job submitted within minutes of its user's earlier job ending was
//                  submitted on seeing that end: the replay submits it as long after that job's
//                  replayed end (Simulator::submit_time), so a replay that runs the first late
//                  does not queue the next at the log's time behind it. Only where the log shows
//                  more such jobs than its own submissions and ends give by chance, whoever's the
//                  jobs that ended just before each submission were (kLinkSigmas), it is tried
//                  by replay after the rest is chosen, where that replay misses a fidelity
//                  target, and kept where it lies less far outside them (or asked for:
//                  --feedback).
//   priority       Where the log records each job's priority, the multifactor weights fitted to
//                  it (PriorityFit.h): fairshare with its half-life, job size, age. Where it
//                  does not, the log is replayed (with the parts above) under a few weightings
//                  (job size for large or small jobs or none, fairshare or none) and the one
//                  whose waits come closest to the log's is kept unless it ranks the log's waits
//                  more than kRankMargin below first-come-first-served (PriorityFit.h): then
//                  first-come-first-served, which the log cannot tell it apart from.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mirage/core/ClusterSpec.h"
#include "mirage/core/Job.h"
#include "mirage/simulator/PriorityFit.h"

namespace mirage {

struct CalibrationSettings {
  Seconds capacity_window = kDay;  // capacity is one figure per window
  double capacity_share = 0.25;    // a window's room: what the log's jobs held this long (0: peak)
  bool choose_capacity_share = true;       // replay kCapacitySharesReplayed too (see there)
  Seconds sample_every = 10 * kMinute;     // how finely waiting jobs are looked at
  int limit_min_users = 3;                 // users that must reach a value for it to be a limit
  bool dependencies = true;                // infer dependencies at all
  Seconds dependency_slack = 2 * kMinute;  // a start this soon after the end it waited for
  bool arrays = true;                      // infer throttled arrays (with the dependencies)
  std::size_t array_min_members = 5;       // jobs submitted together that make an array
  // Infer jobs submitted on seeing their user's job end. Off by default: it meets two more rank
  // targets and misses LS6's February mean and three what-ifs (docs/results/fidelity.md).
  bool feedback = false;
  Seconds feedback_within = 10 * kMinute;  // a submission this soon after that end
  // Where feedback is not asked for and the kept replay misses a fidelity target, replay it with
  // feedback too and keep that where it lies less far outside the targets (see there).
  bool choose_feedback = true;
  bool priority = true;                  // fit the priority weights (to the column, or by replay)
  bool boundaries = true;                // infer weekly boundaries at all
  Seconds boundary_stretch = 4 * kWeek;  // boundaries are looked for in stretches this long
  // An hour is a boundary where the jobs whose limits ran across it number at most this share of
  // the stretch's median hour's, and fewer than either neighbouring hour's.
  double boundary_share = 0.25;
  bool down_windows = true;      // infer down windows at all
  Seconds down_min = 3 * kHour;  // the shortest stretch without a start that may be one
  double down_share = 0.1;       // of the machine, the most the log's jobs held in it
  // Which parts must stand out from their null before they are kept (the rule per part:
  // docs/simulator.md#what-the-calibration-cannot-tell-apart); a part not tested is kept as the
  // log shows it. Switched one at a time to measure each rule on the real logs (--null-tests).
  bool test_room = true;      // hidden room against the log replayed with nothing hidden
  bool test_links = true;     // dependencies against the log's own ends with users shuffled
  bool test_rank = true;      // priority weights against first-come-first-served's rank
  bool test_feedback = true;  // followers against the log's own ends with users shuffled
  bool test_limits = true;    // user limits against the same users' waits under the limit
};

// How a candidate per-user limit (the most running jobs, or nodes, several users reached) stood
// against its null (test_limit_against_chance in CalibrationLimits.cpp): of the instants at which
// those users had a job waiting, the share at which the log showed room for it, at the value and
// for jobs of the same nodes while the same users were under it, by two marks: nodes free by the
// log's own counts that the job fitted, and room given to a later job (one submitted after it, of
// at least its nodes, started in the step before).
struct LimitEvidence {
  int candidate = 0;      // the value several users reached (0: fewer than limit_min_users did)
  int waiting_jobs = 0;   // their jobs that waited at it
  int compared_jobs = 0;  // of those, the ones of a size that also waited under it (the tested)
  double free_at_limit = 0, free_under = 0, free_sigmas = 0;     // the free nodes' shares, excess
  double taken_at_limit = 0, taken_under = 0, taken_sigmas = 0;  // the later jobs'
  bool told_apart = false;  // either excess over kLimitSigmas: the limit is kept

  // "4 of 40 users reach 4 running jobs; at it 1 of their jobs waited (1 of a size that waited
  // under it too), beside nodes free they fitted at 0% of the instants (their sizes under it 0%,
  // +0.0 sd) and room a later job took at 0% (0%, +0.0 sd): the log cannot tell this limit apart
  // from none"; empty where there is no candidate.
  std::string describe(const char* what, int users_at, int users) const;
};

struct Calibration {
  UserLimits user_limits;
  std::vector<CapacityStep> unavailable;     // merged: consecutive steps differ
  std::vector<WeeklyBoundaries> boundaries;  // in time order; consecutive periods differ
  std::vector<DownWindow> down;              // sorted, not overlapping
  std::optional<PriorityFit> priority;       // none: the weights the flags give
  // The site's scheduler settings (bf_window, bf_max_job_user, ...), where a calibration file
  // gives them: set per trace, not inferred (the log shows too little of them).
  std::optional<SchedulerParameters> scheduler;
  // The evidence, for reports.
  int users = 0;
  int users_at_job_limit = 0;   // users whose most running jobs at once is the limit
  int users_at_node_limit = 0;  // likewise for nodes
  LimitEvidence job_limit_evidence, node_limit_evidence;  // each candidate against its null
  Seconds window = kDay;                                  // the length of a capacity window
  int windows = 0;                                        // capacity windows the log spans
  int congested_windows = 0;     // windows with a job waiting that its limits did not hold back
  double mean_unavailable = 0;   // nodes, averaged over the windows
  double capacity_share = 0.25;  // a congested window's room: what the log's jobs held this long
  int share_candidates = 0;      // shares replayed to choose it (0: set, not chosen)
  // The idle nodes waiting jobs fitted, on average over the log replayed with nothing hidden
  // (room_evidence): the log's must exceed them by kRoomMargin of the machine for hidden room.
  double idle_by_chance = 0;
  // Each dependent job's id and the id of the job it waited for.
  std::vector<std::pair<JobId, JobId>> dependencies;
  int array_members = 0;  // of those, members of throttled arrays waiting for an earlier member
  // The links outside arrays the log shows, those the log replayed without any dependency shows by
  // chance, and whether the first stand out from the second (else none is kept).
  int links_seen = 0, links_by_chance = 0;
  bool links_told_apart = true;
  // Each job submitted on seeing its user's earlier job end: its id, that job's, and how long
  // after that end it was submitted.
  struct Follower {
    JobId job = 0, after = 0;
    Seconds think = 0;
  };
  std::vector<Follower> followers;
  bool feedback = false;  // the followers are inferred (asked for, or chosen by replay)
  // How feedback was decided where it was not asked for (choose_feedback_by_replay).
  enum class FeedbackChoice : std::uint8_t {
    kNotTried,     // no kept replay to judge it by (no replay chosen, or none asked for)
    kTargetsMet,   // the kept replay met every fidelity target: nothing to gain
    kNoFollowers,  // no job of the log follows its user's earlier one
    kNoCloser,     // replayed with it, no closer to the targets: left off
    kChosen,       // replayed with it, closer: kept
    kByChance,     // no more followers in the log than its own times give by chance
  };
  FeedbackChoice feedback_choice = FeedbackChoice::kNotTried;
  // The log's followers, and those its own times give by chance, whoever's the jobs that ended
  // before each submission were (counted where a replay could judge feedback: all but kNotTried
  // and kNoFollowers).
  int followers_seen = 0, followers_by_chance = 0;

  // How feedback came to be on or off, for reports: "chosen by replay: ...", "off: ...".
  std::string describe_feedback_choice() const;
  // "137 of 155 days congested" (or "... windows of 06:00:00 ...").
  std::string describe_congestion() const;
  // "a congested day's room what the log's jobs held for 35% of it (of 3 shares replayed, the
  // closest to the log's waits)"; empty where nothing was inferred (a calibration file).
  std::string describe_room() const;
  // How the congested windows stand against a replay with nothing hidden: "no day's jobs waited
  // beside more idle room than ...: the log cannot tell hidden room apart from none"; empty
  // where nothing was inferred.
  std::string describe_room_evidence() const;
  // How the log's dependencies stand against chance: "62 of the log's jobs outside arrays started
  // as ...; 45 would by chance, whoever's jobs ended then: the log cannot tell these dependencies
  // apart from none"; empty where the log shows none.
  std::string describe_links() const;
  // "Mon-Fri 07:00, Mon-Fri 16:00 UTC from 1996-09-30 to 1997-06-09"; "none".
  std::string describe_boundaries() const;
  // How each candidate limit stood against its null (LimitEvidence::describe), "; "-joined; empty
  // where no value was reached by limit_min_users users.
  std::string describe_limits() const;

  bool empty() const {
    return user_limits == UserLimits{} && unavailable.empty() && boundaries.empty() &&
           down.empty() && !priority;
  }
};

// Infers the calibration of the machine `spec` from `jobs` (those with a real start and end are
// used). Whole-node allocation only for capacity; GPU-granular machines get user limits alone.
Calibration infer_calibration(const std::vector<Job>& jobs, const ClusterSpec& spec,
                              const CalibrationSettings& settings = {});

// Infers the dependencies and followers alone, under the limits and capacity `c` already holds
// (a calibration read from a file keeps the rules, not the lists): replaces c.dependencies and
// c.followers.
void infer_dependencies(const std::vector<Job>& jobs, const ClusterSpec& spec,
                        const CalibrationSettings& settings, Calibration& c);

// The dependencies and followers of `jobs` by the rules `c` was fitted with, its verdicts kept:
// the links outside arrays only where its fit told them apart from chance (links_told_apart, and
// its counts), followers only where its fit kept feedback (c.feedback). Nothing is tested again on
// `jobs`, so jobs after those it was fitted on decide only their own marks.
void apply_fitted_dependencies(const std::vector<Job>& jobs, const ClusterSpec& spec,
                               const CalibrationSettings& settings, Calibration& c);

// The weighting of `spec`'s priority, among a few, under which the log replayed on the machine
// calibrated with `c` (its limits, capacity and dependencies) waits most like the log did. For
// logs that record no priority; nothing when no job has a real start.
std::optional<PriorityFit> choose_priority_by_replay(const std::vector<Job>& jobs,
                                                     const ClusterSpec& spec, const Calibration& c,
                                                     bool test_rank = true);

// Where c.priority was fitted to a Priority column that could not tell the age weight (it came
// out 0: a priority recorded before the job aged does not grow with its wait), the age weight of
// kAgeWeightsReplayed under which the calibrated log waits most like the log did. The others
// stay as fitted.
inline constexpr double kAgeWeightsReplayed[] = {0, 250, 1000, 4000, 16000};
void choose_age_by_replay(const std::vector<Job>& jobs, const ClusterSpec& spec, Calibration& c);

// The rooms of a congested window replayed after the priority is chosen
// (CalibrationSettings::choose_capacity_share): the most the log's jobs held at any moment of the
// window (the room the log proves), what they held for a quarter of it
// (CalibrationSettings::capacity_share) or for 35%. Another than the default is kept only where
// its replay lies less far outside the fidelity targets (closer_to_targets).
inline constexpr double kCapacitySharesReplayed[] = {0, 0.25, 0.35};
// Then, where the replay kept (its feedback chosen too) still misses a target, the shares this far
// either side of the kept one are replayed the same way, and one kept only where it comes closer.
inline constexpr double kCapacityShareRefinement = 0.05;

// The log's idle room beside waiting jobs must exceed what its replay with nothing hidden shows by
// this share of the machine for any window to be congested (room_evidence in Calibration.cpp).
inline constexpr double kRoomMargin = 0.05;
// The log's dependencies outside arrays, and its followers, are kept where they outnumber those
// its own times give by chance (links_against_shuffled_users in CalibrationLinks.cpp,
// followers_against_shuffled_users in CalibrationFeedback.cpp) by more than this many standard
// deviations of that chance count.
inline constexpr double kLinkSigmas = 3;
// A candidate user limit is kept where the share of its users' waiting instants that show room
// for the waiting job (by either mark) exceeds the same users' share under the limit, for jobs of
// the same nodes, by more than this many standard deviations (test_limit_against_chance in
// CalibrationLimits.cpp).
inline constexpr double kLimitSigmas = 3;

// Puts the calibration into the machine the simulator replays, and the dependencies into `jobs`.
void apply_calibration(const Calibration& calibration, ClusterSpec& spec, std::vector<Job>& jobs);

}  // namespace mirage

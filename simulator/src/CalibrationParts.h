#pragma once
// The parts of the calibration (Calibration.h), one rule per file; infer_calibration
// (Calibration.cpp) runs them in order. Internal to the inference.
#include <future>
#include <unordered_map>
#include <vector>

#include "CalibrationChance.h"
#include "CalibrationLog.h"
#include "mirage/core/ClusterSpec.h"
#include "mirage/core/Job.h"
#include "mirage/simulator/Calibration.h"

namespace mirage::calibration {

// A job that may have waited for another of its user's: that job, and whether the two are members
// of a throttled array.
struct WaitedFor {
  const Job* job = nullptr;
  bool array_member = false;
};

using DependencyCandidates = std::unordered_map<const Job*, WaitedFor>;

// CalibrationLimits.cpp: the per-user limits several users reach and none exceeds, kept where the
// log's own starts show those users passed over at them more than under them (a null test).
void infer_limits(const LogView& log, const ClusterSpec& spec, const CalibrationSettings& settings,
                  Calibration& c);
// CalibrationBoundaries.cpp: hours of the week no job's limit ran across.
void infer_boundaries(const LogView& log, const CalibrationSettings& settings, Calibration& c);
// CalibrationDownWindows.cpp: stretches without a start while a job that fitted waited.
void infer_down_windows(const LogView& log, const ClusterSpec& spec,
                        const CalibrationSettings& settings, Calibration& c);

// CalibrationArrays.cpp: members of throttled arrays, each with the member it waited for.
void add_throttled_array_members(const LogView& log, const CalibrationSettings& settings,
                                 DependencyCandidates& out);
// CalibrationLinks.cpp: the jobs that may have waited for their user's own job; those confirmed
// (their wait had room); and the test against chance on the log's own times.
DependencyCandidates dependency_candidates(const LogView& log, const CalibrationSettings& settings,
                                           const Calibration& c);
void confirm_dependencies(const LogView& log, const ClusterSpec& spec,
                          const CalibrationSettings& settings,
                          const DependencyCandidates& candidates, Calibration& c);
// The log's links outside arrays, and how many its own times give by chance: it reads c's limits,
// boundaries and down windows alone (neither the room nor the dependencies), so it is counted
// beside the replay with nothing hidden.
ChanceCount count_links_against_chance(const LogView& log, const ClusterSpec& spec,
                                       const CalibrationSettings& settings,
                                       const DependencyCandidates& candidates,
                                       const Calibration& c);
void test_links_against_chance(const LogView& log, const ClusterSpec& spec,
                               const CalibrationSettings& settings,
                               const DependencyCandidates& candidates, const ChanceCount& links,
                               Calibration& c);

// CalibrationRoom.cpp: which windows show hidden room (against the log replayed with nothing
// hidden: started on a thread of its own by replay_nothing_hidden, so that the passes over the log
// before room_evidence run beside it; none where settings.test_room is off), the room of each, and
// the share of a window that sets it, chosen by replay.
std::future<std::vector<Job>> replay_nothing_hidden(const std::vector<Job>& all,
                                                    const ClusterSpec& spec,
                                                    const CalibrationSettings& settings,
                                                    const Calibration& c);
std::vector<char> room_evidence(const LogView& log, const ClusterSpec& spec,
                                const CalibrationSettings& settings,
                                const DependencyCandidates& candidates,
                                std::future<std::vector<Job>> nothing_hidden, Calibration& c);
void infer_capacity(const LogView& log, const ClusterSpec& spec,
                    const CalibrationSettings& settings, const std::vector<char>& room_seen,
                    Calibration& c);
void choose_capacity_share_by_replay(const std::vector<Job>& all, const LogView& log,
                                     const ClusterSpec& spec, const CalibrationSettings& settings,
                                     const DependencyCandidates& dependent,
                                     const std::vector<char>& room_seen, Calibration& c);
void refine_capacity_share_by_replay(const std::vector<Job>& all, const LogView& log,
                                     const ClusterSpec& spec, const CalibrationSettings& settings,
                                     const DependencyCandidates& dependent,
                                     const std::vector<char>& room_seen, Calibration& c);

// CalibrationFeedback.cpp: jobs submitted minutes after their user's earlier job ended, and
// whether the replay keeps them.
void infer_followers(const LogView& log, const CalibrationSettings& settings, Calibration& c);
void choose_feedback_by_replay(const std::vector<Job>& all, const LogView& log,
                               const ClusterSpec& spec, const CalibrationSettings& settings,
                               Calibration& c);

}  // namespace mirage::calibration

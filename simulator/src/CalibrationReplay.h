#pragma once
// The log replayed on the machine a calibration makes: what every part chosen by replay, and every
// null that replays the log without a part, runs. Internal to the inference.
#include <cstddef>
#include <future>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "mirage/core/ClusterSpec.h"
#include "mirage/core/Job.h"
#include "mirage/simulator/Calibration.h"
#include "mirage/simulator/Fidelity.h"
#include "mirage/simulator/Simulator.h"

namespace mirage::calibration {

// The log as the machine calibrated with `c` (less its priority) replays it: the jobs it can run,
// with their dependencies. Nothing when no job has a real start to compare with.
struct CalibratedReplay {
  std::vector<Job> jobs;
  ClusterSpec machine;
  std::shared_ptr<const std::vector<SimJobSpec>> sim_jobs;
  bool users = false;  // whether the log names them (fairshare needs them)
  // The log's side of every replay's figures (logged_wait_figures), shared by its replays.
  std::shared_ptr<const WaitSideFigures> logged;
};

// A whole replay of the log: its figures against the log's waits, and each job's start.
struct ReplayOutcome {
  WaitFidelity figures;
  std::shared_ptr<const std::vector<Seconds>> waits;
};

// The log as the machine calibrated with `c` (less its priority) replays it; nothing when no job
// has a real start to compare with.
std::optional<CalibratedReplay> calibrated_replay(const std::vector<Job>& all,
                                                  const ClusterSpec& spec, const Calibration& c);
// The log replayed on `r`'s machine with the weights `p`; the same on a thread of its own.
ReplayOutcome replay_outcome(const CalibratedReplay& r, const PriorityParameters& p);
std::future<ReplayOutcome> replay_outcome_async(const CalibratedReplay& r,
                                                const PriorityParameters& p);
// Each weighting replayed: the index of the one whose waits miss the targets least, and its
// outcome.
std::pair<std::size_t, ReplayOutcome> closest_weighting(
    const CalibratedReplay& r, const std::vector<PriorityParameters>& weightings);
// Whether a trial replay lies less far outside the fidelity targets than the kept one.
bool lies_less_far_outside(const WaitFidelity& trial, const WaitFidelity& kept);
// Whether any replay could lie less far outside the targets than the kept one: not where the kept
// one lies inside every target (no replay misses by less than nothing).
bool can_lie_less_far_outside(const WaitFidelity& kept);
// Keeps `o` as the calibration's replay.
void record_replay(const ReplayOutcome& o, PriorityFit& fit);
// The log as the machine calibrated with `c` replays it, written as a log (the replay's starts and
// ends): what a part's evidence is measured on again, to tell it from a replay without it.
std::vector<Job> replayed_as_log(const std::vector<Job>& all, const ClusterSpec& spec,
                                 const Calibration& c);

}  // namespace mirage::calibration

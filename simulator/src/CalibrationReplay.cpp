#include "CalibrationReplay.h"

#include <algorithm>
#include <future>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "mirage/simulator/Fidelity.h"
#include "mirage/simulator/Simulator.h"

namespace mirage::calibration {

namespace {
constexpr double kFitsNoWorse = 1e-9;  // a trial must miss the targets by this much less
}  // namespace

std::optional<CalibratedReplay> calibrated_replay(const std::vector<Job>& all,
                                                  const ClusterSpec& spec, const Calibration& c) {
  CalibratedReplay r;
  r.jobs.reserve(all.size());
  for (const Job& j : all)
    if (j.nodes > 0 && j.nodes <= spec.nodes &&
        (spec.allocation != AllocationMode::kGpuGranular ||
         j.gpus_per_node <= spec.gpus_per_node)) {
      r.jobs.push_back(j);
      r.users = r.users || !j.user.empty();
    }
  r.machine = spec;
  Calibration parts = c;
  parts.priority.reset();
  apply_calibration(parts, r.machine, r.jobs);
  if (std::none_of(r.jobs.begin(), r.jobs.end(), [](const Job& j) { return j.started(); }))
    return std::nullopt;
  r.sim_jobs = std::make_shared<const std::vector<SimJobSpec>>(to_sim_jobs(r.jobs));
  r.logged = std::make_shared<const WaitSideFigures>(logged_wait_figures(r.jobs));
  return r;
}

// The log replayed on `r`'s machine with the weights `p`.
ReplayOutcome replay_outcome(const CalibratedReplay& r, const PriorityParameters& p) {
  ClusterSpec m = r.machine;
  m.priority = p;
  Simulator sim(m, r.sim_jobs);
  sim.set_recording(false);
  sim.run_to_completion();
  auto waits = std::make_shared<const std::vector<Seconds>>(sim.waits(r.jobs.size()));
  return ReplayOutcome{measure_overall_fidelity(r.jobs, *r.logged, *waits), std::move(waits)};
}

// The same on a thread of its own, so that several replays run side by side.
std::future<ReplayOutcome> replay_outcome_async(const CalibratedReplay& r,
                                                const PriorityParameters& p) {
  return std::async(std::launch::async, [&r, p] { return replay_outcome(r, p); });
}

// Replays each weighting and returns the index of the one whose waits miss the targets least,
// with its outcome.
std::pair<std::size_t, ReplayOutcome> closest_weighting(
    const CalibratedReplay& r, const std::vector<PriorityParameters>& weightings) {
  std::vector<std::future<ReplayOutcome>> runs;
  for (const PriorityParameters& p : weightings) runs.push_back(replay_outcome_async(r, p));
  std::pair<std::size_t, ReplayOutcome> best{0, {}};
  for (std::size_t i = 0; i < weightings.size(); ++i) {
    ReplayOutcome o = runs[i].get();
    if (i == 0 || closer_to_targets(o.figures, best.second.figures)) best = {i, std::move(o)};
  }
  return best;
}

// Whether a trial replay lies less far outside the fidelity targets than the kept one: one that
// fits the log no worse leaves the kept one in place.
bool lies_less_far_outside(const WaitFidelity& trial, const WaitFidelity& kept) {
  return trial.target_miss() < kept.target_miss() - kFitsNoWorse;
}

// A trial's miss is never below 0 (WaitFidelity::target_miss), so none lies less far outside
// where the kept one's, less the margin, is not above it.
bool can_lie_less_far_outside(const WaitFidelity& kept) {
  return kept.target_miss() - kFitsNoWorse > 0;
}

void record_replay(const ReplayOutcome& o, PriorityFit& fit) {
  fit.replay = o.figures;
  fit.replay_waits = o.waits;
}

// The log as the machine calibrated with `c` (its weights, where it has them) replays it, written
// as a log: each job with a real
// start in the log has the replay's start and end instead; the others stay unstarted, as the log
// leaves them (they still run in the replay, as unseen work runs on the real machine). What a
// component's evidence is measured on again, to tell it from what a replay without that
// component shows by chance.
std::vector<Job> replayed_as_log(const std::vector<Job>& all, const ClusterSpec& spec,
                                 const Calibration& c) {
  auto r = calibrated_replay(all, spec, c);
  if (!r) return {};
  if (c.priority) r->machine.priority = c.priority->weights;
  Simulator sim(r->machine, r->sim_jobs);
  sim.set_recording(false);
  sim.run_to_completion();
  std::vector<Job> out = r->jobs;
  for (std::size_t i = 0; i < out.size(); ++i) {
    Job& j = out[i];
    const auto at = static_cast<SimJobIndex>(i);
    const Seconds start = sim.start_time(at), end = sim.end_time(at);
    const bool seen = j.started() && start != kUnknownTime && end != kUnknownTime;
    j.start = seen ? start : kUnknownTime;
    j.end = seen ? end : kUnknownTime;
    j.after_any = 0;
    j.think = kUnknownTime;
  }
  return out;
}

}  // namespace mirage::calibration

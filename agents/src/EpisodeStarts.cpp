#include "mirage/agents/EpisodeStarts.h"

#include <algorithm>

namespace mirage {
namespace {

Seconds next_grid(Seconds t, Seconds interval) {
  return (t / interval + 1) * interval;
}

// The trace indices of the jobs that fit `c`.
std::vector<std::size_t> fitting(const Trace& trace, const ClusterSpec& c) {
  std::vector<std::size_t> keep;
  for (std::size_t i = 0; i < trace.jobs.size(); ++i) {
    const Job& j = trace.jobs[i];
    if (j.nodes <= c.nodes &&
        (c.allocation != AllocationMode::kGpuGranular || j.gpus_per_node <= c.gpus_per_node))
      keep.push_back(i);
  }
  return keep;
}

std::vector<SimJobSpec> sim_jobs(const Trace& trace, const std::vector<std::size_t>& kept) {
  std::vector<Job> keep;
  keep.reserve(kept.size());
  for (std::size_t i : kept) keep.push_back(trace.jobs[i]);
  return to_sim_jobs(keep);
}

}  // namespace

EpisodeStarts::EpisodeStarts(const Trace& trace, const ClusterSpec& cluster,
                             const EpisodeConfig& episode, EpisodeStartMode mode)
    : cluster_(cluster), episode_(episode), mode_(mode), kept_(fitting(trace, cluster)) {
  jobs_ = std::make_shared<const std::vector<SimJobSpec>>(sim_jobs(trace, kept_));
  if (mode_ == EpisodeStartMode::kForkReplay) {
    base_.emplace(cluster_, jobs_);
    base_->set_recording(false);
  }
}

std::vector<Seconds> EpisodeStarts::sample_times(Seconds from, Seconds to, Seconds every,
                                                 std::size_t* dropped) const {
  // Trace time an episode needs after its sample time.
  const Seconds need = mode_ == EpisodeStartMode::kPeerWarmup ? kPeerSlice : episode_.horizon();
  std::vector<Seconds> times;
  for (Seconds t = from; t < to; t += every) {
    if (t + need > trace_end()) {
      if (dropped) ++*dropped;
    } else {
      times.push_back(t);
    }
  }
  return times;
}

std::optional<SimJobIndex> EpisodeStarts::replayed(std::size_t trace_index) const {
  const auto it = std::lower_bound(kept_.begin(), kept_.end(), trace_index);
  if (it == kept_.end() || *it != trace_index) return std::nullopt;
  return static_cast<SimJobIndex>(it - kept_.begin());
}

void EpisodeStarts::drop_window() {
  window_read_ = false;
  history_.drop_window();
}

EpisodeStart EpisodeStarts::at(Seconds t) {
  const Seconds interval = episode_.decision_interval;
  if (mode_ == EpisodeStartMode::kForkReplay) {
    // Snapshots only over the window before the first sample: that is all a policy sees.
    if (next_snapshot_ == 0)
      next_snapshot_ = next_grid(t - FeatureEncoder::kWindow * interval - 1, interval);
    while (next_snapshot_ <= t) {
      base_->run_until(next_snapshot_);
      const bool read = window_read_ || next_snapshot_ + interval > t;
      history_.add(read ? base_->snapshot() : base_->snapshot_without_jobs());
      next_snapshot_ += interval;
    }
    base_->run_until(t);
    return EpisodeStart{t, base_->fork(), history_, trace_end(), next_snapshot_};
  }
  // Mirage's protocol: an empty cluster with only the jobs submitted in [t, t + 5 days].
  auto lo = std::lower_bound(jobs_->begin(), jobs_->end(), t,
                             [](const SimJobSpec& s, Seconds v) { return s.submit < v; });
  auto hi = std::lower_bound(lo, jobs_->end(), t + kPeerSlice,
                             [](const SimJobSpec& s, Seconds v) { return s.submit < v; });
  // Dependencies point into the whole list: into the slice's own numbering, or none when the
  // job waited for lies before the slice.
  std::vector<SimJobSpec> slice(lo, hi);
  const auto offset = static_cast<SimJobIndex>(lo - jobs_->begin());
  for (SimJobSpec& s : slice)
    if (s.after_any)
      s.after_any = *s.after_any >= offset && *s.after_any - offset < slice.size()
                        ? std::optional<SimJobIndex>(*s.after_any - offset)
                        : std::nullopt;
  Simulator sim(cluster_, std::make_shared<const std::vector<SimJobSpec>>(std::move(slice)));
  sim.set_recording(false);
  ObservationBuilder history;
  Seconds snap = next_grid(t - 1, interval);
  const Seconds submit_at = t + kPeerWarmup;
  while (snap <= submit_at) {
    sim.run_until(snap);
    history.add(sim.snapshot());
    snap += interval;
  }
  sim.run_until(submit_at);
  // Their simulator runs the slice to its end: no cut-off but the episode's max wait.
  return EpisodeStart{t, std::move(sim), std::move(history), submit_at + 60 * kDay, snap};
}

}  // namespace mirage

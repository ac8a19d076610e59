#include "mirage/agents/Probe.h"

#include <algorithm>

#include "SampleTasks.h"
#include "mirage/core/QueueForecast.h"

namespace mirage {
namespace {

constexpr std::size_t kSnapshotWidth = FeatureEncoder::kPerSnapshot;

// Never submits; at each decision instant records the observation and the what-if gap: from a
// fork of the replay, or in the logged world from the log's real waits.
class ProbingDecider final : public Decider {
 public:
  ProbingDecider(const EpisodeConfig& config, const WaitPredictor* waits, ProbedEpisode& out)
      : config_(config), waits_(waits), out_(out) {}

  bool submit_now(const Simulator& sim, const Observation& obs, SimJobIndex,
                  Seconds fallback_time) override {
    if (out_.snapshots.empty()) {
      out_.snapshots = obs.window;  // the history up to and including this instant
    } else {
      out_.snapshots.insert(out_.snapshots.end(), obs.window.end() - kSnapshotWidth,
                            obs.window.end());
    }
    ProbedDecision d;
    d.time = sim.now();
    d.snapshot_index = static_cast<int>(out_.snapshots.size() / kSnapshotWidth) - 1;
    d.campaign = FeatureEncoder::encode_campaign(obs);
    if (waits_) d.predicted_wait = waits_->predict(obs.latest, QueueForecast::successor(obs));
    const Seconds predecessor_end = fallback_time + config_.reactive_lead;
    const Seconds deadline = predecessor_end + config_.max_wait;
    Seconds start = deadline;
    if (config_.logged_waits) {
      const auto wait = config_.logged_waits->wait_at(d.time);
      if (!wait) {
        ++out_.unscored_instants;
        return false;
      }
      start = std::min(d.time + *wait, deadline);
    } else {
      Simulator what_if = sim.fork();
      const SimJobIndex s = what_if.submit(segment_job(config_.chain));
      if (what_if.run_until_started(s, deadline)) start = what_if.start_time(s);
    }
    d.gap_if_submitted = start - predecessor_end;
    out_.decisions.push_back(d);
    return false;
  }

 private:
  const EpisodeConfig& config_;
  const WaitPredictor* waits_;
  ProbedEpisode& out_;
};

}  // namespace

std::vector<float> ProbedEpisode::features(std::size_t k) const {
  const ProbedDecision& d = decisions.at(k);
  const std::size_t window = FeatureEncoder::kWindow * kSnapshotWidth;
  const std::size_t end = (static_cast<std::size_t>(d.snapshot_index) + 1) * kSnapshotWidth;
  std::vector<float> x(snapshots.begin() + static_cast<std::ptrdiff_t>(end - window),
                       snapshots.begin() + static_cast<std::ptrdiff_t>(end));
  x.insert(x.end(), d.campaign.begin(), d.campaign.end());
  return x;
}

ProbedEpisode probe_episode(EpisodeStart start, const EpisodeConfig& config,
                            const WaitPredictor* waits) {
  EpisodeConfig two = config;
  two.chain.segments = 2;
  ProbedEpisode out;
  out.sample_time = start.sample_time;
  ProbingDecider decider(two, waits, out);
  const EpisodeResult r = run_episode(std::move(start), decider, two);
  if (r.lacks_logged_wait) {
    // The predecessor, or the fallback submission, had no logged wait: no outcome to score.
    out.unscored = true;
    return out;
  }
  const BoundaryOutcome& b = r.boundaries.front();
  out.predecessor_end = b.predecessor_end;
  out.fallback_gap = b.gap();
  return out;
}

std::vector<ProbedEpisode> probe_window(
    const Trace& trace, const ClusterSpec& cluster, const EpisodeConfig& config,
    EpisodeStartMode mode, Seconds from, Seconds to, Seconds every, int threads,
    const std::function<void(std::size_t, std::size_t)>& progress, const WaitPredictor* waits) {
  EpisodeStarts starts(trace, cluster, config, mode);
  const std::vector<Seconds> times = starts.sample_times(from, to, every, nullptr);
  std::vector<ProbedEpisode> out(times.size());
  for_each_sample_task(
      starts, times, 1, threads,
      [&](std::size_t sample, std::size_t, EpisodeStart& start) {
        out[sample] = probe_episode(std::move(start), config, waits);
      },
      progress);
  return out;
}

}  // namespace mirage

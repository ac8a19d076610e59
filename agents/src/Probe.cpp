#include "mirage/agents/Probe.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace mirage {
namespace {

constexpr std::size_t kSnapshotWidth = FeatureEncoder::kPerSnapshot;

// Never submits; at each decision instant records the observation and the what-if gap.
class ProbingDecider final : public Decider {
 public:
  ProbingDecider(const EpisodeConfig& config, ProbedEpisode& out) : config_(config), out_(out) {}

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
    const Seconds predecessor_end = fallback_time + config_.reactive_lead;
    const Seconds deadline = predecessor_end + config_.max_wait;
    Simulator what_if = sim.fork();
    const SimJobIndex s = what_if.submit(segment_job(config_.chain));
    const bool started = what_if.run_until_started(s, deadline);
    d.gap_if_submitted = (started ? what_if.start_time(s) : deadline) - predecessor_end;
    out_.decisions.push_back(d);
    return false;
  }

 private:
  const EpisodeConfig& config_;
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

ProbedEpisode probe_episode(EpisodeStart start, const EpisodeConfig& config) {
  EpisodeConfig two = config;
  two.chain.segments = 2;
  ProbedEpisode out;
  out.sample_time = start.sample_time;
  ProbingDecider decider(two, out);
  const EpisodeResult r = run_episode(std::move(start), decider, two);
  const BoundaryOutcome& b = r.boundaries.front();
  out.predecessor_end = b.predecessor_end;
  out.fallback_gap = b.gap();
  return out;
}

std::vector<ProbedEpisode> probe_window(const Trace& trace, const ClusterSpec& cluster,
                                        const EpisodeConfig& config, EpisodeStartMode mode,
                                        Seconds from, Seconds to, Seconds every, int threads,
                                        const std::function<void(std::size_t, std::size_t)>& progress) {
  EpisodeStarts starts(trace, cluster, config, mode);
  const std::vector<Seconds> times = starts.sample_times(from, to, every, nullptr);
  std::vector<ProbedEpisode> out(times.size());
  const int n_threads =
      threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::size_t batch = static_cast<std::size_t>(n_threads) * 4;
  std::atomic<std::size_t> done{0};
  std::mutex mutex;
  for (std::size_t b0 = 0; b0 < times.size(); b0 += batch) {
    const std::size_t b1 = std::min(times.size(), b0 + batch);
    std::vector<EpisodeStart> batch_starts;
    for (std::size_t i = b0; i < b1; ++i) batch_starts.push_back(starts.at(times[i]));
    std::atomic<std::size_t> next{0};
    std::exception_ptr failure;
    auto worker = [&] {
      try {
        for (std::size_t i; (i = next.fetch_add(1)) < batch_starts.size();) {
          out[b0 + i] = probe_episode(std::move(batch_starts[i]), config);
          const std::size_t d = ++done;
          if (progress) {
            std::lock_guard lock(mutex);
            progress(d, times.size());
          }
        }
      } catch (...) {
        std::lock_guard lock(mutex);
        failure = std::current_exception();
      }
    };
    std::vector<std::thread> pool;
    for (int i = 0; i < n_threads; ++i) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
  }
  return out;
}

}  // namespace mirage

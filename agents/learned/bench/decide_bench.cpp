// decide_bench MODEL_FILE...: the latency of one decision of each learned agent, the way the
// daemon and `mirage eval` call it (Observation -> FeatureEncoder -> pooled features -> network),
// on a busy queue. Prints mean, median and p99 over many decisions. A wait model (.json) or a
// binned distribution (.toml) is timed as `quantile` reading it.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "mirage/agents/PolicyRegistry.h"
#include "mirage/agents/learned/LearnedModel.h"
#include "mirage/core/FeatureEncoder.h"

namespace {

constexpr int kDecisions = 20000;
constexpr int kWarmup = 200;
constexpr int kQueueJobs = 300;  // pending and running jobs per snapshot

mirage::QueueSnapshot busy_snapshot(std::mt19937_64& rng, mirage::Seconds t) {
  mirage::QueueSnapshot q;
  q.time = t;
  q.total_nodes = 88;
  for (int i = 0; i < kQueueJobs; ++i) {
    const mirage::Seconds limit = static_cast<mirage::Seconds>(1 + rng() % 48) * mirage::kHour;
    if (i % 2)
      q.pending.push_back({limit, 1 + static_cast<int>(rng() % 8), 0,
                           static_cast<mirage::Seconds>(rng() % (24 * mirage::kHour))});
    else
      q.running.push_back({limit, 1 + static_cast<int>(rng() % 8), 0,
                           static_cast<mirage::Seconds>(rng() % (6 * mirage::kHour)),
                           static_cast<mirage::Seconds>(rng() % static_cast<unsigned>(limit))});
  }
  q.recent_starts = 100;
  q.recent_mean_wait_s = 3.0 * mirage::kHour;
  return q;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: decide_bench MODEL_FILE...\n");
    return 2;
  }
  mirage::learned::register_learned_policies();
  std::mt19937_64 rng(1);
  mirage::ObservationBuilder history;
  for (int i = 0; i < mirage::FeatureEncoder::kWindow; ++i)
    history.add(busy_snapshot(rng, i * mirage::FeatureEncoder::kSpacing));
  mirage::CampaignView view;
  view.predecessor_limit = view.successor_limit = 48 * mirage::kHour;
  view.predecessor_nodes = view.successor_nodes = 8;
  view.predecessor_running = true;
  for (int a = 1; a < argc; ++a) {
    const std::string file = argv[a];
    const bool waits = file.ends_with(".json") || file.ends_with(".toml");
    mirage::PolicyContext context;
    if (waits) context.waits = mirage::read_wait_predictor(file);
    auto policy = mirage::make_policy(waits ? "quantile" : file, context);
    std::vector<double> us;
    int submits = 0;
    for (int i = 0; i < kDecisions + kWarmup; ++i) {
      view.predecessor_run = (i % 288) * mirage::FeatureEncoder::kSpacing;
      const mirage::Observation obs = history.build(view);
      const auto t0 = std::chrono::steady_clock::now();
      const auto d = policy->decide(obs);
      const auto t1 = std::chrono::steady_clock::now();
      submits += d.action == mirage::Action::kSubmitNow;
      if (i >= kWarmup) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(us.begin(), us.end());
    double sum = 0;
    for (double u : us) sum += u;
    fmt::print("{}: {} decisions, mean {:.1f} us, median {:.1f} us, p99 {:.1f} us ({} submit)\n",
               waits ? "quantile reading " + file : policy->name(), us.size(),
               sum / static_cast<double>(us.size()), us[us.size() / 2], us[us.size() * 99 / 100],
               submits);
  }
  return 0;
}

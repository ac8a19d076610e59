#pragma once
// Shared by the training sources; no LibTorch here (see Nets.h for the LibTorch side).
#include <string>
#include <vector>

#include "mirage/learned/Training.h"

namespace mirage::learned {

// The match-average objective's constraint: in each group of validation episodes, no more mean
// overlap than `average` had there. The groups are the validation blocks (the tail of each
// period of the window: Hyperparameters::overlap_cap "blocks"), so that a rule cannot buy its
// interruption with overlap in one period and pay it back in another, or all of them as one
// ("pooled"). No caps: the cost objective.
struct OverlapCaps {
  std::vector<double> cap;  // per group: `average`'s mean overlap there (h)
  std::vector<int> group;   // per validation episode (Split::val order)
  bool active() const { return !cap.empty(); }
  // Whether `stops` (per validation episode) keep every group within its cap.
  bool hold(const ProbeSet& data, const std::vector<std::size_t>& episodes,
            const std::vector<int>& stops, const CostModel& cost) const;
};
// The mean overlap of `stops` in each of `groups` groups (`group`: per entry of `episodes`).
std::vector<double> group_overlaps(const ProbeSet& data, const std::vector<std::size_t>& episodes,
                                   const std::vector<int>& group, int groups,
                                   const std::vector<int>& stops, const CostModel& cost);

// What an algorithm gets: the data, its split, the cost, where to write, how to report.
struct TrainContext {
  const TrainConfig& config;
  const ProbeSet& data;
  Split split;
  CostModel cost;
  OverlapCaps overlap_caps;  // the match-average objective's; none with the cost objective
  const TrainCallbacks& callbacks;
  std::string metadata_json;    // the model file's metadata, less the validation figures
  std::string run_fingerprint;  // a checkpoint made with another one is refused
  std::string checkpoint_path;  // config.out + ".ckpt"
};

struct AgentResult {
  StopMetrics val;  // the selected weights, greedy, on the validation episodes
  int epochs = 0;
  ForecastGuard forecast_guard = ForecastGuard::kOff;  // the selected decision rule's
};

AgentResult train_dqn(const TrainContext& ctx);
AgentResult train_pg(const TrainContext& ctx);
AgentResult train_moe(const TrainContext& ctx);

// LibTorch's intra-op threads (Model.cpp).
void set_torch_threads(int threads);

// Reports an epoch through the callbacks (a no-op without them).
inline void report_epoch(const TrainContext& ctx, const EpochStats& s) {
  if (ctx.callbacks.epoch) ctx.callbacks.epoch(s);
}
inline void report_message(const TrainContext& ctx, const std::string& m) {
  if (ctx.callbacks.message) ctx.callbacks.message(m);
}

}  // namespace mirage::learned

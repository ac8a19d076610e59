#pragma once
// Shared by the training sources; no LibTorch here (see Nets.h for the LibTorch side).
#include <string>
#include <vector>

#include "mirage/learned/Training.h"

namespace mirage::learned {

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

#pragma once
// Shared by the training sources; no LibTorch here (see Nets.h for the LibTorch side).
#include <limits>
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

// How a model turns margins into decisions: submit when the margin exceeds `threshold`
// (infinity: never submit early), only where `guard` allows it (forecast_allows_submit); or,
// where `average` would submit (average_would_submit), when the margin exceeds `after_average`
// (infinity: not there either; kAlways: there whatever the margin, as `average` does). The second
// clause makes `average` one of the rules: the network can then bring its submissions forward
// where the queue says so, and hold them back where `average` would overlap. The third, the
// window clause (WindowClause), submits where a closing window fires it, whatever the margin:
// submits() leaves it out, and decisions test it before the network.
struct DecisionRule {
  static constexpr double kAlways = kAlwaysAfterAverage;
  double threshold = 0;
  ForecastGuard guard = ForecastGuard::kOff;
  double after_average = std::numeric_limits<double>::infinity();
  WindowClause window;
  bool submits(double margin, bool guard_allows, bool average_submits) const {
    return (margin > threshold && guard_allows) || (average_submits && margin > after_average);
  }
};
struct AgentResult {
  StopMetrics val;  // the selected weights, greedy, on the validation episodes
  int epochs = 0;
  DecisionRule rule;  // the selected decision rule
};

AgentResult train_dqn(const TrainContext& ctx);
AgentResult train_pg(const TrainContext& ctx);
AgentResult train_moe(const TrainContext& ctx);
// The model of Hyperparameters::ensemble members, trained into `member_files`: their mean
// margin (one file: that network), with its decision rule chosen on validation as each
// member's was, and a window clause with it (Hyperparameters::window_clause); writes the model
// file. `epochs`: the members' epochs, all told.
AgentResult combine_ensemble(const TrainContext& ctx, const std::vector<std::string>& member_files,
                             int epochs);

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

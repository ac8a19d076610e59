#pragma once
// Shared by the training sources; no LibTorch here (see Nets.h for the LibTorch side).
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "mirage/agents/learned/Training.h"

namespace mirage::learned {

inline constexpr float kInputClamp = 8.f;  // standardised inputs beyond this are clipped

// What an algorithm gets: the data, its split, the cost, where to write, how to report.
struct TrainContext {
  const TrainConfig& config;
  const ProbeSet& data;
  Split split;
  CostModel cost;
  const TrainCallbacks& callbacks;
  std::string metadata_json;    // the model file's metadata, less the validation figures
  std::string run_fingerprint;  // a checkpoint made with another one is refused
  std::string checkpoint_path;  // config.out + ".ckpt"
};

struct AgentResult {
  StopMetrics val;  // the selected weights, greedy, on the validation episodes
  int epochs = 0;
  DecisionRule rule;  // the selected decision rule
};

AgentResult train_dqn(const TrainContext& ctx);
AgentResult train_pg(const TrainContext& ctx);
AgentResult train_moe(const TrainContext& ctx);
// pg with the risk as an input (Hyperparameters::risk_input; RiskPg.cpp).
AgentResult train_risk_pg(const TrainContext& ctx);
// The model of Hyperparameters::ensemble members, trained into `member_files`: their mean
// margin (one file: that network), with its decision rule chosen on validation as each
// member's was, and a window clause with it (WindowClause); writes the model
// file. `epochs`: the members' epochs, all told.
AgentResult combine_ensemble(const TrainContext& ctx, const std::vector<std::string>& member_files,
                             int epochs);

// LibTorch's intra-op threads (Networks.cpp).
void set_torch_threads(int threads);

// Reports an epoch through the callbacks (a no-op without them).
inline void report_epoch(const TrainContext& ctx, const EpochStats& s) {
  if (ctx.callbacks.epoch) ctx.callbacks.epoch(s);
}
inline void report_message(const TrainContext& ctx, const std::string& m) {
  if (ctx.callbacks.message) ctx.callbacks.message(m);
}

// An epoch's figures from its training pass: `steps` gradient steps whose losses sum to
// `loss_sum`, in `seconds`; its validation is the caller's.
inline EpochStats epoch_stats(std::string phase, int epoch, int max_epochs, double loss_sum,
                              std::size_t steps, double seconds) {
  EpochStats s;
  s.phase = std::move(phase);
  s.epoch = epoch;
  s.max_epochs = max_epochs;
  s.loss = steps ? loss_sum / static_cast<double>(steps) : 0;
  s.steps_per_s = seconds > 0 ? static_cast<double>(steps) / seconds : 0;
  return s;
}

}  // namespace mirage::learned

#pragma once
// The user's objective as an input (`risk_input`, issue 58): one model trained over a range of
// prices gives a frontier, and MODEL@RISK picks a point on it as quantile@RISK does for the
// baseline.
//
// The price: an hour the campaign stands idle (or finishes late) costs `risk`, an hour charged
// twice (overlap) costs 1 - risk; the price ratio r = (1 - risk) / risk is the overlap weight of
// CostModel. A submission rule that minimises risk x interruption + (1 - risk) x overlap for a
// known wait distribution submits once the distribution's `risk`-quantile reaches the time the
// predecessor has left (the newsvendor's critical fractile): quantile@RISK. So the model's knob
// reads as quantile's level does, and the residual variant starts from exactly that rule.
//
// Training samples the risk uniformly in [kMinRisk, kMaxRisk] (r from 1/9 to 9) per episode;
// validation chooses a decision threshold at each of kRiskLevels, and MODEL@RISK decides with
// the threshold of the nearest level. Torch-free: live decisions (LearnedPolicy) and probes
// (training) append the same inputs.
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "mirage/agents/WaitPredictor.h"
#include "mirage/agents/learned/ProbeData.h"

namespace mirage::learned {

inline constexpr double kMinRisk = 0.1, kMaxRisk = 0.9;
// The levels validated, and swept by `mirage eval --sweep-risk` (as quantile's).
inline constexpr std::array<double, 9> kRiskLevels{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
// A model's risk when none is named: interruption and overlap priced alike (r = 1).
inline constexpr double kDefaultRisk = 0.5;

inline double price_ratio(double risk) {
  return (1 - risk) / risk;
}
// The cost at `risk`, as CostModel prices it (interruption + r x overlap), from `base`'s overlap
// mode; its figures are 1/risk times the risk-weighted ones.
CostModel cost_at_risk(const CostModel& base, double risk);

// The residual's baseline (`quantile_residual`): quantile@risk's submission margin in hours,
// positive exactly where it submits (the `risk`-quantile of the successor's wait, interpolated
// between the predictor's stated levels as WaitPredictor::quantile does, at least the time the
// predecessor has left). Where the predictor states the level itself (the binned distribution at
// 0.1, 0.25, 0.5, 0.75, 0.9; the learned wait model everywhere) that is `quantile@risk`'s rule.
// `pooled`: a row of pool_features (the remaining time is read from it, to the second).
double quantile_margin_h(const float* pooled, const WaitQuantiles& predicted, double risk);
// The predecessor's remaining time in a pooled row, to the second (time_feature inverted; its
// float rounding is well under a second below 48 h).
Seconds pooled_remaining(const float* pooled);

// What a model trained with the risk as an input reads beyond its pooled row.
struct RiskInputs {
  bool residual = false;  // quantile_residual: the margin is quantile@risk's plus the network's
  // The inputs appended to the pooled row: ln r, then with the residual quantile@risk's margin in
  // units of 48 h (clipped to +-4).
  int width() const { return residual ? 2 : 1; }
  void append(const float* pooled, const WaitQuantiles* predicted, double risk, float* out) const;
  // The margin a decision compares with its threshold is the network's output plus this (in
  // float, in training and live alike): with the residual kResidualSlope x quantile_margin_h (a
  // network that outputs 0 decides as quantile@risk), without it 0.
  static constexpr double kResidualSlope = 1.0;  // logit per hour
  float baseline(const float* pooled, const WaitQuantiles* predicted, double risk) const;
};

// The sequence model's input (Hyperparameters::history): the last `history` queue snapshots of
// the encoder's window, kHistorySpacing apart (an hour), oldest first, kPerSnapshot floats each,
// after the pooled row and the risk inputs. The window holds kWindow snapshots, so at most
// kMaxHistory fit.
inline constexpr int kHistorySpacing = 6;
inline constexpr int kMaxHistory = (FeatureEncoder::kWindow - 1) / kHistorySpacing + 1;
inline constexpr int history_width(int history) {
  return history * FeatureEncoder::kPerSnapshot;
}
// `latest`: the latest snapshot's floats, with the window's earlier snapshots before it in
// memory (FeatureEncoder::encode's window, or a probed episode's snapshots).
void gather_history(const float* latest, int history, float* out);

// Per validated level: its threshold (infinity: never submit early) and the validation figures
// there, at that level's price.
struct RiskPoint {
  double risk = 0;
  double threshold = 0;
  StopMetrics val;
};
// The threshold MODEL@RISK decides with: that of the nearest validated level (the lower on a
// tie). `points` is not empty.
double threshold_at(const std::vector<RiskPoint>& points, double risk);
// Why `risk` is no risk a model takes (one line), or nothing.
std::optional<std::string> risk_problem(double risk);

}  // namespace mirage::learned

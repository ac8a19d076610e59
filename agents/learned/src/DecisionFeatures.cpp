// What a decision is made from, as functions of the encoder's output alone (so live and probed
// decisions agree): the pooled inputs of the networks, the forecast guards, the window clause,
// and whether `average` would submit.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "mirage/agents/learned/ProbeData.h"
#include "mirage/core/QueueForecast.h"

namespace mirage::learned {
namespace {

constexpr int kSnap = FeatureEncoder::kPerSnapshot;
constexpr int kWindow = FeatureEncoder::kWindow;
constexpr int kCampaign = FeatureEncoder::kCampaignFeatures;

// Hours back from FeatureEncoder::time_feature.
double feature_hours(float f) {
  static const double kScale = std::log1p(48.0);
  return std::expm1(static_cast<double>(f) * kScale);
}

}  // namespace

void pool_features(const float* x, const WaitQuantiles* predicted, float* out) {
  const float* window = x;
  const float* campaign = x + kWindow * kSnap;
  float* o = out;
  // The latest snapshot.
  std::copy(window + (kWindow - 1) * kSnap, window + kWindow * kSnap, o);
  o += kSnap;
  std::copy(campaign, campaign + kNetworkCampaignFeatures, o);
  o += kNetworkCampaignFeatures;
  // Derived, in linear units of 48 h and clipped so that a strange queue cannot blow them up:
  // remaining time, recent mean wait, and their difference (what the `average` baseline
  // compares); the planned wait, and the planned start against the predecessor's end, behind
  // the queue, with the running jobs alone and with runtimes halved (what a queue-aware rule
  // would compare).
  using F = FeatureEncoder;
  const double remaining = feature_hours(campaign[F::kPredecessorRemaining]) / 48.0;
  const double mean_wait = feature_hours(campaign[F::kRecentMeanWait]) / 48.0;
  const double planned = feature_hours(campaign[F::kPlannedWait]) / 48.0;
  const double planned_running = feature_hours(campaign[F::kPlannedWaitRunningOnly]) / 48.0;
  const double planned_half = feature_hours(campaign[F::kPlannedWaitHalfRuntimes]) / 48.0;
  o[0] = static_cast<float>(std::min(remaining, 4.0));
  o[1] = static_cast<float>(std::min(mean_wait, 4.0));
  o[2] = static_cast<float>(std::clamp(mean_wait - remaining, -4.0, 4.0));
  o[3] = static_cast<float>(std::min(planned, 4.0));
  o[4] = static_cast<float>(std::clamp(planned - remaining, -4.0, 4.0));
  o[5] = static_cast<float>(std::clamp(planned_running - remaining, -4.0, 4.0));
  o[6] = static_cast<float>(std::clamp(planned_half - remaining, -4.0, 4.0));
  o += kDerivedFeatures;
  // The predictor's quantiles, on the encoder's log scale and against the remaining time as
  // the planned waits are.
  constexpr std::size_t levels = kWaitLevels.size();
  if (!predicted) return;
  for (std::size_t k = 0; k < levels; ++k) {
    const Seconds wait = (*predicted)[k];
    o[k] = FeatureEncoder::time_feature(wait);
    o[levels + k] = static_cast<float>(
        std::clamp(static_cast<double>(wait) / kHour / 48.0 - remaining, -4.0, 4.0));
  }
}

void pool_observation(const Observation& obs, const float* encoded, const WaitPredictor* waits,
                      float* out, WaitQuantiles* predicted) {
  if (!waits) return pool_features(encoded, nullptr, out);
  const WaitQuantiles p = waits->predict(obs.latest, QueueForecast::successor(obs));
  pool_features(encoded, &p, out);
  if (predicted) *predicted = p;
}

std::string_view to_string(ForecastPlan plan) {
  switch (plan) {
    case ForecastPlan::kLimits: return "limits";
    case ForecastPlan::kHalved: return "halved";
    case ForecastPlan::kRecent: return "recent";
  }
  return "?";
}

std::optional<ForecastPlan> parse_forecast_plan(std::string_view text) {
  for (const auto p : kForecastPlans)
    if (text == to_string(p)) return p;
  return std::nullopt;
}

std::string_view to_string(ForecastGuard guard) {
  switch (guard) {
    case ForecastGuard::kOff: return "off";
    case ForecastGuard::kLimits: return "limits";
    case ForecastGuard::kHalved: return "halved";
  }
  return "?";
}

std::optional<ForecastGuard> parse_forecast_guard(std::string_view text) {
  if (text == to_string(ForecastGuard::kOff)) return ForecastGuard::kOff;
  for (const auto g : kForecastGuards)
    if (text == to_string(g)) return g;
  return std::nullopt;
}

bool forecast_allows_submit(const float* encoded, ForecastGuard guard) {
  using F = FeatureEncoder;
  const float* campaign = encoded + kWindow * kSnap;
  switch (guard) {
    case ForecastGuard::kOff: return true;
    case ForecastGuard::kLimits:
      return campaign[F::kPlannedWait] >= campaign[F::kPredecessorRemaining];
    case ForecastGuard::kHalved:
      return campaign[F::kPlannedWaitHalfRuntimes] >= campaign[F::kPredecessorRemaining];
  }
  return true;
}

WindowClause::Features WindowClause::features(const float* encoded) {
  using F = FeatureEncoder;
  const float* campaign = encoded + kWindow * kSnap;
  // In the order of kForecastPlans, whose values are 1, 2, 3: fires() indexes by the plan.
  static_assert([] {
    for (std::size_t i = 0; i < kForecastPlans.size(); ++i)
      if (static_cast<std::size_t>(kForecastPlans[i]) != i + 1) return false;
    return true;
  }());
  return {campaign[F::kPredecessorRemaining], campaign[F::kPlannedWaitAtEnd],
          campaign[F::kPlannedWaitAtEndHalfRuntimes], campaign[F::kPlannedWaitAtEndRecentRuntimes]};
}

bool WindowClause::fires(const Features& f) const {
  if (!active()) return false;
  // time_feature is monotone: comparing features compares the times.
  return f[0] <= FeatureEncoder::time_feature(within) &&
         f[static_cast<std::size_t>(*plan)] >= FeatureEncoder::time_feature(wait);
}

bool WindowClause::fires(const float* encoded) const {
  return active() && fires(features(encoded));
}

bool operator<(const WindowClause& a, const WindowClause& b) {
  return std::tie(a.plan, a.within, a.wait) < std::tie(b.plan, b.within, b.wait);
}

std::vector<WindowClause> window_clauses() {
  std::vector<WindowClause> out;
  for (const auto plan : kForecastPlans)
    for (const Seconds within : {kHour, 2 * kHour, 3 * kHour, 4 * kHour})
      for (const Seconds wait : {kHour, 2 * kHour, 4 * kHour, 8 * kHour})
        out.push_back({plan, within, wait});
  return out;
}

bool average_would_submit(const float* encoded) {
  using F = FeatureEncoder;
  // time_feature is monotone, so comparing features compares the times; a zero mean wait is
  // `average` without recent starts, which waits.
  const float* campaign = encoded + kWindow * kSnap;
  return campaign[F::kRecentMeanWait] > 0 &&
         campaign[F::kPredecessorRemaining] <= campaign[F::kRecentMeanWait];
}

}  // namespace mirage::learned

// The risk as an input: the price it sets, the inputs it appends, the residual's baseline, and
// the threshold a level decides with.
#include "mirage/agents/learned/RiskInput.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace mirage::learned {

CostModel cost_at_risk(const CostModel& base, double risk) {
  CostModel c = base;
  c.overlap_weight = price_ratio(risk);
  return c;
}

Seconds pooled_remaining(const float* pooled) {
  static const double kScale = std::log1p(48.0);  // FeatureEncoder::time_feature's
  const float f = pooled[FeatureEncoder::kPerSnapshot + FeatureEncoder::kPredecessorRemaining];
  return static_cast<Seconds>(std::llround(std::expm1(static_cast<double>(f) * kScale) * kHour));
}

double quantile_margin_h(const float* pooled, const WaitQuantiles& predicted, double risk) {
  const Seconds wait = interpolate_quantile(predicted, risk);
  // Half a second up: positive exactly where wait >= remaining, as quantile submits.
  return (static_cast<double>(wait - pooled_remaining(pooled)) + 0.5) / kHour;
}

void RiskInputs::append(const float* pooled, const WaitQuantiles* predicted, double risk,
                        float* out) const {
  out[0] = static_cast<float>(std::log(price_ratio(risk)));
  if (residual)
    out[1] = static_cast<float>(
        std::clamp(quantile_margin_h(pooled, *predicted, risk) / 48.0, -4.0, 4.0));
}

float RiskInputs::baseline(const float* pooled, const WaitQuantiles* predicted, double risk) const {
  if (!residual) return 0.f;
  return static_cast<float>(kResidualSlope * quantile_margin_h(pooled, *predicted, risk));
}

void gather_history(const float* latest, int history, float* out) {
  constexpr int kSnap = FeatureEncoder::kPerSnapshot;
  for (int j = 0; j < history; ++j) {
    const float* from =
        latest - static_cast<std::ptrdiff_t>((history - 1 - j) * kHistorySpacing) * kSnap;
    std::copy(from, from + kSnap, out + static_cast<std::ptrdiff_t>(j) * kSnap);
  }
}

double threshold_at(const std::vector<RiskPoint>& points, double risk) {
  const RiskPoint* best = &points.front();
  for (const RiskPoint& p : points)
    if (std::abs(p.risk - risk) < std::abs(best->risk - risk) - 1e-12) best = &p;
  return best->threshold;
}

std::optional<std::string> risk_problem(double risk) {
  if (risk > 0 && risk < 1) return std::nullopt;
  return fmt::format(
      "the risk {:g} is out of range: a model trained with the price ratio as an input takes "
      "MODEL@RISK with a risk between 0 and 1, as quantile@RISK (trained on {:g} to {:g})",
      risk, kMinRisk, kMaxRisk);
}

}  // namespace mirage::learned

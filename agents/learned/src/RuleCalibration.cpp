// Which decision rule a network's margins make: the thresholds and rules tried, and the one
// chosen on validation: the lowest cost.
#include <algorithm>
#include <cmath>

#include "Nets.h"

namespace mirage::learned {

std::vector<double> decision_thresholds(AgentKind kind) {
  constexpr double kNever = std::numeric_limits<double>::infinity();
  if (kind == AgentKind::kPg) {
    // Submission probabilities, as logits.
    std::vector<double> t;
    for (const double p : {0.5, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002})
      t.push_back(std::log(p / (1 - p)));
    t.push_back(kNever);
    return t;
  }
  // Hours: submit only when submitting is better by this much (or worse by no more than -this),
  // or never; 0 is plain greedy. Queue waits range from minutes to days, so the grid does too.
  return {0.0,  -4.0, -2.0, -1.0, -0.5, -0.25, -0.1, -0.05, -0.02,
          0.02, 0.05, 0.1,  0.25, 0.5,  1.0,   2.0,  4.0,   kNever};
}

std::vector<DecisionRule> candidate_rules(AgentKind kind,
                                          const std::optional<ForecastGuard>& forecast_guard,
                                          bool window) {
  const std::vector<double> thresholds = decision_thresholds(kind);
  std::vector<DecisionRule> rules;
  std::vector<double> after{std::numeric_limits<double>::infinity(), DecisionRule::kAlways};
  for (const double t : thresholds)
    if (!std::isinf(t)) after.push_back(t);
  // Rules that never follow `average` first: on equal scores the simpler rule is kept.
  std::vector<ForecastGuard> guards{ForecastGuard::kOff};
  guards.insert(guards.end(), kForecastGuards.begin(), kForecastGuards.end());
  for (const double a : after)
    for (const ForecastGuard guard : guards) {
      if (forecast_guard && *forecast_guard != guard) continue;
      for (const double t : thresholds) rules.push_back({t, guard, a, {}});
    }
  if (window) {
    // Without the clause first, as above.
    const std::size_t plain = rules.size();
    for (const WindowClause& w : window_clauses())
      for (std::size_t i = 0; i < plain; ++i) {
        DecisionRule r = rules[i];
        r.window = w;
        rules.push_back(r);
      }
  }
  return rules;
}

namespace {

// Where each episode of `episodes` first has a margin above `threshold` at a decision that
// `allowed(decision)` admits (-1: none), given their margins back to back.
template <typename Allowed>
std::vector<int> first_above(const std::vector<float>& margins, const ProbeSet& data,
                             const std::vector<std::size_t>& episodes, double threshold,
                             Allowed allowed) {
  std::vector<int> stops(episodes.size(), -1);
  if (std::isinf(threshold) && threshold > 0) return stops;
  std::size_t at = 0;
  for (std::size_t i = 0; i < episodes.size(); ++i) {
    const ProbeSet::Episode& e = data.episodes[episodes[i]];
    for (std::size_t k = 0; k < e.count; ++k)
      if (static_cast<double>(margins.at(at + k)) > threshold && allowed(e.first + k)) {
        stops[i] = static_cast<int>(k);
        break;
      }
    at += e.count;
  }
  return stops;
}

// The earlier of two stops (-1: none).
int earlier(int a, int b) {
  return a < 0 ? b : b < 0 ? a : std::min(a, b);
}

}  // namespace

Calibration calibrate(const std::vector<float>& margins, const ProbeSet& data,
                      const std::vector<std::size_t>& episodes, const CostModel& cost,
                      const std::vector<DecisionRule>& rules) {
  // A rule's stops are the earliest of its clauses' (DecisionRule::submits and the window
  // clause); each clause's stops are computed once, however many rules share it.
  std::map<std::pair<double, ForecastGuard>, std::vector<int>> early;
  std::map<double, std::vector<int>> late;
  std::map<WindowClause, std::vector<int>> closing;
  Calibration best;
  bool first = true;
  std::vector<int> stops(episodes.size());
  for (const DecisionRule& rule : rules) {
    auto e = early.find({rule.threshold, rule.guard});
    if (e == early.end())
      e = early
              .emplace(std::pair{rule.threshold, rule.guard},
                       first_above(margins, data, episodes, rule.threshold,
                                   [&](std::size_t d) { return data.guard_allows(d, rule.guard); }))
              .first;
    auto l = late.find(rule.after_average);
    if (l == late.end())
      l = late.emplace(rule.after_average,
                       first_above(margins, data, episodes, rule.after_average,
                                   [&](std::size_t d) { return data.average_submits(d); }))
              .first;
    auto w = closing.find(rule.window);
    if (w == closing.end())
      w = closing
              .emplace(rule.window, first_above(margins, data, episodes,
                                                -std::numeric_limits<double>::infinity(),
                                                [&](std::size_t d) {
                                                  return rule.window.fires(data.window_features[d]);
                                                }))
              .first;
    for (std::size_t i = 0; i < stops.size(); ++i)
      stops[i] = earlier(earlier(e->second[i], l->second[i]), w->second[i]);
    const StopMetrics m = evaluate_stops(data, episodes, stops, cost);
    const double score = m.mean_cost_h;
    if (first || score < best.score - 1e-12) {
      best = {rule, m, score};
      first = false;
    }
  }
  return best;
}

Calibration calibrate_risk_levels(const std::function<std::vector<float>(double)>& margins_at,
                                  const ProbeSet& data, const std::vector<std::size_t>& val,
                                  const CostModel& cost, const std::vector<DecisionRule>& rules,
                                  std::vector<RiskPoint>& points) {
  points.clear();
  Calibration out;
  for (const double q : kRiskLevels) {
    const Calibration cal = calibrate(margins_at(q), data, val, cost_at_risk(cost, q), rules);
    points.push_back({q, cal.rule.threshold, cal.val});
    // cost_at_risk's cost is 1/q times the risk-weighted one.
    out.score += q * cal.val.mean_cost_h / static_cast<double>(kRiskLevels.size());
    if (q == kDefaultRisk) {
      out.rule = cal.rule;
      out.val = cal.val;
    }
  }
  return out;
}

std::vector<DecisionRule> threshold_rules(AgentKind kind) {
  std::vector<DecisionRule> rules;
  for (const double t : decision_thresholds(kind)) {
    rules.emplace_back();
    rules.back().threshold = t;
  }
  return rules;
}

}  // namespace mirage::learned

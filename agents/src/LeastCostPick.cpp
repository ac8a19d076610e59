#include "mirage/agents/LeastCostPick.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "mirage/agents/Verdict.h"

namespace mirage {

std::vector<PointCost> point_costs(const EvalReport& report, const ChainSpec& chain,
                                   double work_h) {
  std::vector<PointCost> out;
  if (work_h > 0) {
    const double g = report.gpus_per_segment;
    for (const auto& [name, m] : report.campaign)
      if (name != "oracle" && m.compared > 0)
        out.push_back({name, (m.makespan_h - work_h) * g + (m.charged_gpu_h - work_h * g),
                       m.makespan_h, m.charged_gpu_h});
    return out;
  }
  for (const auto& [name, m] : costs_where_every_policy_finished(report, chain).mean)
    out.push_back({name, m.first + m.second, m.first, m.second});
  return out;
}

PricedPoints price_points(const EvalReport& report, const ChainSpec& chain, double work_h) {
  PricedPoints p{point_costs(report, chain, work_h), {}};
  if (!p.costs.empty()) return p;
  // The points and how many samples (or campaigns) each finished; the oracle is no point.
  const auto finished = [&](const SampleOutcome& o) {
    if (work_h > 0) return o.episode.campaign && o.episode.campaign->complete;
    return !o.episode.boundaries.empty() && !o.episode.truncated();
  };
  EvalReport rest;
  rest.gpus_per_segment = report.gpus_per_segment;
  rest.gpus_known = report.gpus_known;
  std::vector<std::pair<std::size_t, std::string>> by_finished;
  for (const auto& [name, outs] : report.outcomes) {
    if (name == "oracle") continue;
    rest.outcomes[name] = outs;
    by_finished.emplace_back(std::count_if(outs.begin(), outs.end(), finished), name);
  }
  // Fewest finished first; among equals reactive last, as ties go to it.
  std::sort(by_finished.begin(), by_finished.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(a.first, a.second == "reactive", a.second) <
           std::make_tuple(b.first, b.second == "reactive", b.second);
  });
  for (std::size_t i = 0; i + 1 < by_finished.size(); ++i) {
    rest.outcomes.erase(by_finished[i].second);
    p.left_out.push_back(by_finished[i].second);
    if (work_h > 0)
      rest.campaign = compute_campaign_metrics(
          rest.outcomes, static_cast<Seconds>(std::llround(work_h * kHour)), rest.gpus_per_segment);
    p.costs = point_costs(rest, chain, work_h);
    if (!p.costs.empty()) return p;
  }
  p.left_out.clear();  // none priced: nothing was left out in favour of another
  return p;
}

std::optional<PointCost> least_cost(const std::vector<PointCost>& costs) {
  if (costs.empty()) return std::nullopt;
  // Costs within a rounding of each other are a tie: points that decided alike.
  const auto key = [](const PointCost& p) {
    return std::make_tuple(std::round(p.cost * 1e6), p.policy != "reactive", p.second);
  };
  return *std::min_element(costs.begin(), costs.end(),
                           [&](const PointCost& a, const PointCost& b) { return key(a) < key(b); });
}

const PointCost* find_cost(const std::vector<PointCost>& costs, const std::string& policy) {
  const auto it = std::find_if(costs.begin(), costs.end(),
                               [&](const PointCost& p) { return p.policy == policy; });
  return it == costs.end() ? nullptr : &*it;
}

PickWindow forward_pick_window(const EvalConfig& judged, Seconds length, bool logged_world) {
  PickWindow w;
  w.to = judged.from - judged.episode.horizon() - (logged_world ? judged.logged_window : 0);
  w.from = w.to - length;
  return w;
}

}  // namespace mirage

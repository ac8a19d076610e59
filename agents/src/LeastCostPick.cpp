#include "mirage/agents/LeastCostPick.h"

#include <algorithm>
#include <cmath>

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

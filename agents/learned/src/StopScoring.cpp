// What any stopping rule costs on the probes, exactly (a probed episode says what every
// submission instant would have given): the cost model and the baselines' stops.
#include <algorithm>
#include <cmath>

#include "mirage/agents/learned/ProbeData.h"

namespace mirage::learned {
double CostModel::interruption_h(Seconds gap) const {
  return gap > 0 ? static_cast<double>(gap) / kHour : 0.0;
}

double CostModel::overlap_h(Seconds gap) const {
  Seconds o = gap < 0 ? -gap : 0;
  if (overlap == OverlapMode::kHandoff) o = std::min(o, handoff_grace);
  return static_cast<double>(o) / kHour;
}

StopMetrics evaluate_stops(const ProbeSet& data, const std::vector<std::size_t>& episodes,
                           const std::vector<int>& stops, const CostModel& cost) {
  StopMetrics m;
  m.episodes = episodes.size();
  if (episodes.empty()) return m;
  for (std::size_t i = 0; i < episodes.size(); ++i) {
    const ProbeSet::Episode& e = data.episodes[episodes[i]];
    const Seconds gap = data.gap_at(e, stops[i]);
    m.mean_cost_h += cost(gap);
    m.mean_interruption_h += cost.interruption_h(gap);
    m.mean_overlap_h += cost.overlap_h(gap);
    m.zero_share += gap <= 0 ? 1 : 0;
  }
  const double n = static_cast<double>(episodes.size());
  m.mean_cost_h /= n;
  m.mean_interruption_h /= n;
  m.mean_overlap_h /= n;
  m.zero_share /= n;
  return m;
}

std::vector<int> reactive_stops(const ProbeSet&, const std::vector<std::size_t>& episodes) {
  return std::vector<int>(episodes.size(), -1);
}

std::vector<int> average_stops(const ProbeSet& data, const std::vector<std::size_t>& episodes) {
  std::vector<int> s;
  for (std::size_t i : episodes) s.push_back(data.episodes[i].average_stop);
  return s;
}

std::vector<int> hindsight_stops(const ProbeSet& data, const std::vector<std::size_t>& episodes,
                                 const CostModel& cost) {
  std::vector<int> s;
  for (std::size_t i : episodes) {
    const ProbeSet::Episode& e = data.episodes[i];
    int best = -1;
    double best_cost = cost(e.fallback_gap);
    for (std::size_t k = 0; k < e.count; ++k)
      if (const double c = cost(data.gap[e.first + k]); c < best_cost) {
        best_cost = c;
        best = static_cast<int>(k);
      }
    s.push_back(best);
  }
  return s;
}

}  // namespace mirage::learned

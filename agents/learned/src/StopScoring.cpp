// What any stopping rule costs on the probes, exactly (a probed episode says what every
// submission instant would have given): the cost model, the baselines' stops, and the overlap
// caps that match-average holds a rule to.
#include <algorithm>
#include <cmath>
#include <random>

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

namespace {

double mean_overlap(const ProbeSet& data, const std::vector<std::size_t>& episodes,
                    const std::vector<int>& stops, const CostModel& cost) {
  double sum = 0;
  for (std::size_t i = 0; i < episodes.size(); ++i)
    sum += cost.overlap_h(data.gap_at(data.episodes[episodes[i]], stops[i]));
  return episodes.empty() ? 0.0 : sum / static_cast<double>(episodes.size());
}

}  // namespace

bool OverlapCap::holds(const ProbeSet& data, const std::vector<std::size_t>& episodes,
                       const std::vector<int>& stops, const CostModel& cost) const {
  if (!cap) return true;
  if (confidence <= 0) return mean_overlap(data, episodes, stops, cost) <= *cap + 1e-9;
  // Paired: per day, the overlap the rule adds over `average` on the same episodes. The mean is
  // within the cap in a resample where the drawn days add up to <= 0.
  std::vector<double> excess(static_cast<std::size_t>(days), 0.0);
  for (std::size_t i = 0; i < episodes.size(); ++i) {
    const Seconds gap = data.gap_at(data.episodes[episodes[i]], stops[i]);
    excess[static_cast<std::size_t>(day[i])] += cost.overlap_h(gap) - average_overlap[i];
  }
  std::size_t within = 0;
  for (const auto& draw : resamples) {
    double sum = 0;
    for (std::size_t d = 0; d < draw.size(); ++d)
      if (draw[d] != 0) sum += draw[d] * excess[d];
    if (sum <= 1e-9) ++within;
  }
  return static_cast<double>(within) >= confidence * static_cast<double>(resamples.size());
}

OverlapCap make_overlap_cap(const ProbeSet& data, const Split& split, const CostModel& cost,
                            double confidence, std::uint64_t seed, int resamples) {
  OverlapCap out;
  const std::vector<int> average = average_stops(data, split.val);
  out.cap = mean_overlap(data, split.val, average, cost);
  out.confidence = confidence;
  if (confidence <= 0 || split.val.empty()) return out;  // nothing to resample
  std::vector<Seconds> day_of;  // distinct days, in order of first appearance
  for (std::size_t i = 0; i < split.val.size(); ++i) {
    const ProbeSet::Episode& e = data.episodes[split.val[i]];
    const Seconds d = e.sample_time / kDay;
    auto it = std::find(day_of.begin(), day_of.end(), d);
    out.day.push_back(static_cast<int>(it - day_of.begin()));
    if (it == day_of.end()) day_of.push_back(d);
    out.average_overlap.push_back(cost.overlap_h(data.gap_at(e, average[i])));
  }
  out.days = static_cast<int>(day_of.size());
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pick(0, out.days - 1);
  out.resamples.assign(static_cast<std::size_t>(std::max(1, resamples)),
                       std::vector<std::uint16_t>(day_of.size(), 0));
  for (auto& draw : out.resamples)
    for (int k = 0; k < out.days; ++k) ++draw[static_cast<std::size_t>(pick(rng))];
  return out;
}

}  // namespace mirage::learned

// Probed episodes as a training set: each decision's pooled features and outcome, and the
// time-ordered split into training and validation with the episodes that reach into validation
// purged.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "mirage/agents/learned/ProbeData.h"

namespace mirage::learned {
namespace {

constexpr int kSnap = FeatureEncoder::kPerSnapshot;
constexpr int kWindow = FeatureEncoder::kWindow;

}  // namespace

void add_probes(ProbeSet& set, const std::vector<ProbedEpisode>& probed, bool wait_features,
                bool keep_snapshots) {
  if (set.decisions() > 0 && set.width != pooled_width(wait_features))
    throw std::logic_error("add_probes: probes with and without the predictor's quantiles");
  set.width = pooled_width(wait_features);
  const auto width = static_cast<std::size_t>(set.width);
  std::size_t total = set.gap.size();
  for (const auto& e : probed) total += e.decisions.size();
  set.x.resize(total * width);
  set.gap.reserve(total);
  set.submit_flags.reserve(total);
  set.window_features.reserve(total);
  std::vector<float> encoded(FeatureEncoder::kInputSize);
  constexpr std::size_t kWindowFloats = static_cast<std::size_t>(kWindow) * kSnap;
  for (const ProbedEpisode& e : probed) {
    set.unscored_instants += e.unscored_instants;
    if (e.unscored) {
      ++set.unscored_episodes;
      continue;
    }
    ProbeSet::Episode ep;
    ep.sample_time = e.sample_time;
    ep.first = set.gap.size();
    ep.count = e.decisions.size();
    ep.fallback_gap = e.fallback_gap;
    const std::size_t first_snapshot = set.snapshots.size() / kSnap;
    if (keep_snapshots)
      set.snapshots.insert(set.snapshots.end(), e.snapshots.begin(), e.snapshots.end());
    for (std::size_t k = 0; k < e.decisions.size(); ++k) {
      const ProbedDecision& d = e.decisions[k];
      // As ProbedEpisode::features(k), without the allocation.
      const std::size_t end = (static_cast<std::size_t>(d.snapshot_index) + 1) * kSnap;
      std::copy(e.snapshots.begin() + static_cast<std::ptrdiff_t>(end - kWindowFloats),
                e.snapshots.begin() + static_cast<std::ptrdiff_t>(end), encoded.begin());
      std::copy(d.campaign.begin(), d.campaign.end(),
                encoded.begin() + static_cast<std::ptrdiff_t>(kWindowFloats));
      pool_features(encoded.data(), wait_features ? &d.predicted_wait : nullptr,
                    set.x.data() + set.gap.size() * width);
      set.gap.push_back(d.gap_if_submitted);
      std::uint8_t flags = 0;
      for (const auto g : kForecastGuards)
        if (forecast_allows_submit(encoded.data(), g)) flags |= 1 << static_cast<int>(g);
      if (average_would_submit(encoded.data())) {
        flags |= 1 << ProbeSet::kAverageBit;
        if (ep.average_stop < 0) ep.average_stop = static_cast<int>(k);
      }
      set.submit_flags.push_back(flags);
      set.window_features.push_back(WindowClause::features(encoded.data()));
      if (wait_features) set.predicted.push_back(d.predicted_wait);
      if (keep_snapshots)
        set.latest_snapshot.push_back(first_snapshot + static_cast<std::size_t>(d.snapshot_index));
    }
    set.episodes.push_back(ep);
  }
  std::stable_sort(set.episodes.begin(), set.episodes.end(),
                   [](const ProbeSet::Episode& a, const ProbeSet::Episode& b) {
                     return a.sample_time < b.sample_time;
                   });
}

Split time_split(const ProbeSet& data, double val_fraction, Seconds purge, int blocks) {
  Split s;
  const std::size_t n = data.episodes.size();
  blocks = std::max(1, blocks);
  // Validation: the last val_fraction of each block's episodes, as a list of [from, to]
  // sample-time intervals.
  std::vector<std::pair<Seconds, Seconds>> val;
  for (int b = 0; b < blocks; ++b) {
    const std::size_t lo = n * static_cast<std::size_t>(b) / static_cast<std::size_t>(blocks);
    const std::size_t hi = n * static_cast<std::size_t>(b + 1) / static_cast<std::size_t>(blocks);
    if (hi <= lo) continue;
    std::size_t n_val =
        static_cast<std::size_t>(std::llround(val_fraction * static_cast<double>(hi - lo)));
    if (val_fraction > 0 && hi - lo >= 2) n_val = std::clamp<std::size_t>(n_val, 1, hi - lo - 1);
    if (n_val == 0) continue;
    val.emplace_back(data.episodes[hi - n_val].sample_time, data.episodes[hi - 1].sample_time);
  }
  for (std::size_t i = 0; i < data.episodes.size(); ++i) {
    const ProbeSet::Episode& e = data.episodes[i];
    bool validating = false, purged = false;
    for (const auto& [from, to] : val) {
      if (e.sample_time >= from && e.sample_time <= to) validating = true;
      // An episode whose horizon reaches into a validation period would leak its outcome.
      else if (e.sample_time < from && e.sample_time + purge > from)
        purged = true;
    }
    if (validating) {
      s.val.push_back(i);
    } else if (purged) {
      ++s.purged;
    } else {
      s.train.push_back(i);
    }
  }
  s.blocks = static_cast<int>(val.size());
  return s;
}

}  // namespace mirage::learned

#include "mirage/core/FeatureEncoder.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "mirage/core/QueueForecast.h"

namespace mirage {
namespace {

// p0, p25, p50, p75, p100 of `v` (reordered), each through time_feature; zeros if empty. The five
// order statistics by selection: what a sort would put at those places, without the sort (every
// snapshot of every episode is encoded).
void percentiles(std::vector<Seconds>& v, float* out) {
  if (v.empty()) {
    std::fill(out, out + 5, 0.f);
    return;
  }
  const std::size_t n = v.size() - 1;
  const auto at = [&](std::size_t k) { return v.begin() + static_cast<std::ptrdiff_t>(k); };
  const std::size_t k1 = (n + 2) / 4, k2 = (2 * n + 2) / 4, k3 = (3 * n + 2) / 4;
  std::nth_element(v.begin(), at(k2), v.end());
  std::nth_element(v.begin(), at(k1), at(k2));
  if (k3 > k2) std::nth_element(at(k2 + 1), at(k3), v.end());
  const Seconds values[5] = {*std::min_element(v.begin(), at(k1 + 1)), v[k1], v[k2], v[k3],
                             *std::max_element(at(k3), v.end())};
  for (int q = 0; q < 5; ++q) out[q] = FeatureEncoder::time_feature(values[q]);
}

}  // namespace

float FeatureEncoder::time_feature(Seconds seconds) {
  static const double kScale = std::log1p(48.0);
  const double hours = static_cast<double>(std::max<Seconds>(0, seconds)) / 3600.0;
  return static_cast<float>(std::log1p(hours) / kScale);
}

FeatureEncoder::SnapshotFeatures FeatureEncoder::encode_snapshot(const QueueSnapshot& q) {
  SnapshotFeatures f{};
  const float nodes = static_cast<float>(std::max(1, q.total_nodes));
  std::vector<Seconds> a, b, c;
  a.reserve(q.pending.size());
  b.reserve(q.pending.size());
  long long size = 0;
  for (const auto& p : q.pending) {
    a.push_back(p.time_limit);
    b.push_back(p.waited);
    size += p.nodes;
  }
  f[0] = static_cast<float>(q.pending.size()) / nodes;
  f[1] = static_cast<float>(size) / nodes;
  percentiles(a, &f[2]);
  percentiles(b, &f[7]);
  a.clear();
  b.clear();
  size = 0;
  for (const auto& r : q.running) {
    a.push_back(r.time_limit);
    b.push_back(r.waited);
    c.push_back(r.run);
    size += r.nodes;
  }
  f[12] = static_cast<float>(q.running.size()) / nodes;
  f[13] = static_cast<float>(size) / nodes;
  percentiles(a, &f[14]);
  percentiles(b, &f[19]);
  percentiles(c, &f[24]);
  return f;
}

std::array<float, FeatureEncoder::kCampaignFeatures> FeatureEncoder::encode_campaign(
    const Observation& obs) {
  const CampaignView& c = obs.campaign;
  const float nodes = static_cast<float>(std::max(1, obs.latest.total_nodes));
  const PlannedStart planned = QueueForecast::plan_successor(obs);
  const PlannedStart half =
      QueueForecast::plan_successor(obs, RuntimeGuess::share_of_limits(kHalfRuntimes));
  const PlannedStart recent = QueueForecast::plan_successor(obs, RuntimeGuess::recent_ends());
  return {time_feature(c.predecessor_limit),
          static_cast<float>(c.predecessor_nodes) / nodes,
          time_feature(c.predecessor_waited),
          time_feature(c.predecessor_run),
          time_feature(c.predecessor_remaining()),
          static_cast<float>(c.successor_nodes) / nodes,
          time_feature(c.successor_limit),
          time_feature(static_cast<Seconds>(obs.latest.recent_mean_wait_s)),
          time_feature(planned.wait),
          time_feature(planned.wait_running),
          time_feature(half.wait),
          time_feature(planned.wait_after_delay),
          time_feature(half.wait_after_delay),
          time_feature(recent.wait),
          time_feature(recent.wait_after_delay),
          planned.held_by_limit ? 1.f : 0.f,
          static_cast<float>(obs.latest.unavailable_nodes) / nodes};
}

std::vector<float> FeatureEncoder::encode(const Observation& obs) {
  std::vector<float> x;
  x.reserve(kInputSize);
  x.insert(x.end(), obs.window.begin(), obs.window.end());
  x.resize(static_cast<std::size_t>(kWindow * kPerSnapshot), 0.f);
  const auto c = encode_campaign(obs);
  x.insert(x.end(), c.begin(), c.end());
  return x;
}

void ObservationBuilder::add(const QueueSnapshot& snapshot) {
  add(QueueSnapshot(snapshot));
}

void ObservationBuilder::add(QueueSnapshot&& snapshot) {
  if (keeps_window_) {
    history_.push_back(FeatureEncoder::encode_snapshot(snapshot));
    if (history_.size() > static_cast<std::size_t>(FeatureEncoder::kWindow)) history_.pop_front();
  }
  filled_ = std::min(filled_ + 1, FeatureEncoder::kWindow);
  last_ = std::move(snapshot);
}

void ObservationBuilder::drop_window() {
  keeps_window_ = false;
  history_.clear();
}

Observation ObservationBuilder::build(const CampaignView& campaign) const {
  Observation o;
  o.time = last_.time;
  o.encoder_version = FeatureEncoder::kVersion;
  o.campaign = campaign;
  o.latest = last_;
  o.window_filled = filled_;
  if (!keeps_window_) return o;
  // Oldest first; missing history (a fresh start) is zero-padded at the front.
  o.window.assign(static_cast<std::size_t>((FeatureEncoder::kWindow - o.window_filled) *
                                           FeatureEncoder::kPerSnapshot),
                  0.f);
  for (const auto& f : history_) o.window.insert(o.window.end(), f.begin(), f.end());
  return o;
}

}  // namespace mirage

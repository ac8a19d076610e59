#include "mirage/learned/ProbeData.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "ProbeSourceDigest.h"
#include "mirage/core/DurableFile.h"
#include "mirage/core/Fnv.h"

namespace mirage::learned {
namespace {

constexpr int kSnap = FeatureEncoder::kPerSnapshot;
constexpr int kWindow = FeatureEncoder::kWindow;
constexpr int kCampaign = FeatureEncoder::kCampaignFeatures;
constexpr char kCacheMagic[] = "MIRAGE-PROBES 1\n";

// Hours back from FeatureEncoder::time_feature.
double feature_hours(float f) {
  static const double kScale = std::log1p(48.0);
  return std::expm1(static_cast<double>(f) * kScale);
}

template <class T>
void put(std::ostream& out, const T& v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
void get(std::istream& in, T& v) {
  in.read(reinterpret_cast<char*>(&v), sizeof v);
}

void write_cache(const std::string& path, const std::string& fingerprint,
                 const std::vector<ProbedEpisode>& eps) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  std::ostringstream out(std::ios::binary);
  {
    out.write(kCacheMagic, sizeof kCacheMagic - 1);
    put(out, static_cast<std::uint64_t>(fingerprint.size()));
    out.write(fingerprint.data(), static_cast<std::streamsize>(fingerprint.size()));
    put(out, static_cast<std::uint64_t>(eps.size()));
    for (const ProbedEpisode& e : eps) {
      put(out, e.sample_time);
      put(out, e.predecessor_end);
      put(out, e.fallback_gap);
      put(out, static_cast<std::uint64_t>(e.snapshots.size()));
      out.write(reinterpret_cast<const char*>(e.snapshots.data()),
                static_cast<std::streamsize>(e.snapshots.size() * sizeof(float)));
      put(out, static_cast<std::uint64_t>(e.decisions.size()));
      for (const ProbedDecision& d : e.decisions) {
        put(out, d.time);
        put(out, d.snapshot_index);
        out.write(reinterpret_cast<const char*>(d.campaign.data()),
                  static_cast<std::streamsize>(d.campaign.size() * sizeof(float)));
        put(out, d.gap_if_submitted);
      }
    }
  }
  write_file_durably(path, out.view());
}

// Empty optional-like: returns false when the file is absent, foreign or for other probes.
bool read_cache(const std::string& path, const std::string& fingerprint,
                std::vector<ProbedEpisode>& eps) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  char magic[sizeof kCacheMagic - 1];
  in.read(magic, sizeof magic);
  if (!in || std::memcmp(magic, kCacheMagic, sizeof magic) != 0) return false;
  std::uint64_t n = 0;
  get(in, n);
  if (!in || n > (1u << 20)) return false;
  std::string fp(n, '\0');
  in.read(fp.data(), static_cast<std::streamsize>(n));
  if (!in || fp != fingerprint) return false;
  get(in, n);
  eps.assign(n, {});
  for (ProbedEpisode& e : eps) {
    get(in, e.sample_time);
    get(in, e.predecessor_end);
    get(in, e.fallback_gap);
    std::uint64_t k = 0;
    get(in, k);
    if (!in || k > (1u << 26)) return false;
    e.snapshots.resize(k);
    in.read(reinterpret_cast<char*>(e.snapshots.data()),
            static_cast<std::streamsize>(k * sizeof(float)));
    get(in, k);
    if (!in || k > (1u << 20)) return false;
    e.decisions.resize(k);
    for (ProbedDecision& d : e.decisions) {
      get(in, d.time);
      get(in, d.snapshot_index);
      in.read(reinterpret_cast<char*>(d.campaign.data()),
              static_cast<std::streamsize>(d.campaign.size() * sizeof(float)));
      get(in, d.gap_if_submitted);
    }
  }
  return static_cast<bool>(in);
}

}  // namespace

void Pooling::operator()(const float* x, float* out) const {
  const float* window = x;
  const float* campaign = x + kWindow * kSnap;
  float* o = out;
  // The latest snapshot.
  std::copy(window + (kWindow - 1) * kSnap, window + kWindow * kSnap, o);
  o += kSnap;
  // Block means, oldest block first.
  const int per_block = history_blocks > 0 ? kWindow / history_blocks : 0;
  for (int b = 0; b < history_blocks; ++b) {
    std::fill(o, o + kSnap, 0.f);
    for (int s = b * per_block; s < (b + 1) * per_block; ++s)
      for (int f = 0; f < kSnap; ++f) o[f] += window[s * kSnap + f];
    for (int f = 0; f < kSnap; ++f) o[f] /= static_cast<float>(per_block);
    o += kSnap;
  }
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
}

std::vector<float> Pooling::operator()(const std::vector<float>& encoded) const {
  if (encoded.size() != static_cast<std::size_t>(FeatureEncoder::kInputSize))
    throw std::invalid_argument("Pooling: expected " + std::to_string(FeatureEncoder::kInputSize) +
                                " encoded features");
  std::vector<float> out(static_cast<std::size_t>(size()));
  (*this)(encoded.data(), out.data());
  return out;
}

std::string_view to_string(ForecastGuard guard) {
  switch (guard) {
    case ForecastGuard::kOff: return "off";
    case ForecastGuard::kLimits: return "limits";
    case ForecastGuard::kHalved: return "halved";
    case ForecastGuard::kRecent: return "recent";
  }
  return "?";
}

std::optional<ForecastGuard> parse_forecast_guard(std::string_view text) {
  if (text == to_string(ForecastGuard::kOff)) return ForecastGuard::kOff;
  for (const auto g : kForecastPlans)
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
    case ForecastGuard::kRecent:
      return campaign[F::kPlannedWaitRecentRuntimes] >= campaign[F::kPredecessorRemaining];
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
         f[static_cast<std::size_t>(plan)] >= FeatureEncoder::time_feature(wait);
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

double CostModel::interruption_h(Seconds gap) const {
  return gap > 0 ? static_cast<double>(gap) / kHour : 0.0;
}

double CostModel::overlap_h(Seconds gap) const {
  Seconds o = gap < 0 ? -gap : 0;
  if (overlap == OverlapMode::kHandoff) o = std::min(o, handoff_grace);
  return static_cast<double>(o) / kHour;
}

std::string probe_fingerprint(const Trace& trace, const ProbeSpec& s) {
  Fnv1a jobs;
  for (const Job& j : trace.jobs) {
    jobs.add(j.id);
    jobs.add(j.submit);
    jobs.add(j.start);
    jobs.add(j.end);
    jobs.add(j.time_limit);
    jobs.add(j.nodes);
    jobs.add(j.gpus_per_node);
    jobs.add(j.after_any);
    jobs.add(j.user.data(), j.user.size());
  }
  const ClusterSpec& c = s.cluster;
  Fnv1a capacity;
  if (c.unavailable)
    for (const CapacityStep& step : *c.unavailable) {
      capacity.add(step.from);
      capacity.add(step.unavailable_nodes);
    }
  const EpisodeConfig& e = s.episode;
  std::ostringstream f;
  // The code's digest: probes from another build of the simulator or the encoder are not these.
  f << "code=" << MIRAGE_PROBE_SOURCE_DIGEST << " encoder=" << FeatureEncoder::kVersion
    << " jobs=" << trace.jobs.size() << ":" << std::hex << jobs.h << std::dec
    << " nodes=" << c.nodes << " gpus=" << c.gpus_per_node << " alloc=" << to_string(c.allocation)
    << " sched=" << c.scheduler.sched_interval << "," << c.scheduler.bf_interval << ","
    << c.scheduler.bf_window << "," << c.scheduler.bf_resolution << ","
    << c.scheduler.bf_max_job_test << "," << c.scheduler.bf_max_job_user << ","
    << to_string(c.scheduler.backfill) << " prio=" << c.priority.weight_age << ","
    << c.priority.weight_job_size << "," << c.priority.max_age << "," << c.priority.favor_small
    << "," << c.priority.weight_fairshare << "," << c.priority.decay_half_life
    << " limits=" << c.user_limits.max_running_jobs << "," << c.user_limits.max_running_nodes
    << " capacity=" << std::hex << capacity.h << std::dec << " chain=" << e.chain.nodes << "x"
    << e.chain.gpus_per_node << "," << e.chain.time_limit << "," << e.chain.runtime
    << " interval=" << e.decision_interval << " max_wait=" << e.max_wait
    << " lead=" << e.reactive_lead
    << " mode=" << (s.mode == EpisodeStartMode::kForkReplay ? "fork" : "peer")
    << " window=" << s.from << ".." << s.to << "/" << s.every;
  return f.str();
}

std::string probe_cache_file(const std::string& dir, const std::string& trace_path,
                             const Trace& trace, const ProbeSpec& spec) {
  Fnv1a h;
  const std::string fp = probe_fingerprint(trace, spec);
  h.add(fp.data(), fp.size());
  char digest[17];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(h.h));
  return (std::filesystem::path(dir) /
          (std::filesystem::path(trace_path).filename().string() + "." + digest + ".probes"))
      .string();
}

std::vector<ProbedEpisode> probe_or_load(const Trace& trace, const ProbeSpec& spec,
                                         const std::string& cache_path, int threads,
                                         const CountProgress& progress, bool* from_cache) {
  const std::string fp = probe_fingerprint(trace, spec);
  std::vector<ProbedEpisode> eps;
  if (!cache_path.empty() && read_cache(cache_path, fp, eps)) {
    if (from_cache) *from_cache = true;
    return eps;
  }
  if (from_cache) *from_cache = false;
  eps = probe_window(trace, spec.cluster, spec.episode, spec.mode, spec.from, spec.to, spec.every,
                     threads, progress);
  if (!cache_path.empty()) write_cache(cache_path, fp, eps);
  return eps;
}

void add_probes(ProbeSet& set, const std::vector<ProbedEpisode>& probed, const Pooling& pooling,
                int chain_nodes) {
  const std::size_t width = static_cast<std::size_t>(pooling.size());
  if (set.width == 0) set.width = static_cast<int>(width);
  if (set.width != static_cast<int>(width))
    throw std::invalid_argument("add_probes: one pooling per probe set");
  std::size_t total = set.gap.size();
  for (const auto& e : probed) total += e.decisions.size();
  set.x.resize(total * width);
  set.gap.reserve(total);
  set.submit_flags.reserve(total);
  set.window_features.reserve(total);
  std::vector<float> encoded(FeatureEncoder::kInputSize);
  constexpr std::size_t kWindowFloats = static_cast<std::size_t>(kWindow) * kSnap;
  for (const ProbedEpisode& e : probed) {
    ProbeSet::Episode ep;
    ep.sample_time = e.sample_time;
    ep.chain_nodes = chain_nodes;
    ep.first = set.gap.size();
    ep.count = e.decisions.size();
    ep.fallback_gap = e.fallback_gap;
    for (std::size_t k = 0; k < e.decisions.size(); ++k) {
      const ProbedDecision& d = e.decisions[k];
      // As ProbedEpisode::features(k), without the allocation.
      const std::size_t end = (static_cast<std::size_t>(d.snapshot_index) + 1) * kSnap;
      std::copy(e.snapshots.begin() + static_cast<std::ptrdiff_t>(end - kWindowFloats),
                e.snapshots.begin() + static_cast<std::ptrdiff_t>(end), encoded.begin());
      std::copy(d.campaign.begin(), d.campaign.end(),
                encoded.begin() + static_cast<std::ptrdiff_t>(kWindowFloats));
      pooling(encoded.data(), set.x.data() + set.gap.size() * width);
      set.gap.push_back(d.gap_if_submitted);
      std::uint8_t flags = 0;
      for (const auto g : kForecastPlans)
        if (forecast_allows_submit(encoded.data(), g)) flags |= 1 << static_cast<int>(g);
      if (average_would_submit(encoded.data())) {
        flags |= 1 << ProbeSet::kAverageBit;
        if (ep.average_stop < 0) ep.average_stop = static_cast<int>(k);
      }
      set.submit_flags.push_back(flags);
      set.window_features.push_back(WindowClause::features(encoded.data()));
    }
    set.episodes.push_back(ep);
  }
  std::stable_sort(set.episodes.begin(), set.episodes.end(),
                   [](const ProbeSet::Episode& a, const ProbeSet::Episode& b) {
                     return a.sample_time < b.sample_time;
                   });
}

Split time_split(const ProbeSet& data, double val_fraction, Seconds purge, int chain_nodes,
                 int blocks) {
  Split s;
  std::vector<std::size_t> primary;
  for (std::size_t i = 0; i < data.episodes.size(); ++i)
    if (data.episodes[i].chain_nodes == chain_nodes) primary.push_back(i);
  const std::size_t n = primary.size();
  blocks = std::max(1, blocks);
  // Validation: the last val_fraction of each block's episodes of the main chain, as a list of
  // [from, to] sample-time intervals.
  std::vector<std::pair<Seconds, Seconds>> val;
  for (int b = 0; b < blocks; ++b) {
    const std::size_t lo = n * static_cast<std::size_t>(b) / static_cast<std::size_t>(blocks);
    const std::size_t hi = n * static_cast<std::size_t>(b + 1) / static_cast<std::size_t>(blocks);
    if (hi <= lo) continue;
    std::size_t n_val =
        static_cast<std::size_t>(std::llround(val_fraction * static_cast<double>(hi - lo)));
    if (val_fraction > 0 && hi - lo >= 2) n_val = std::clamp<std::size_t>(n_val, 1, hi - lo - 1);
    if (n_val == 0) continue;
    val.emplace_back(data.episodes[primary[hi - n_val]].sample_time,
                     data.episodes[primary[hi - 1]].sample_time);
  }
  for (std::size_t i = 0; i < data.episodes.size(); ++i) {
    const ProbeSet::Episode& e = data.episodes[i];
    int validating = -1;
    bool purged = false;
    for (std::size_t b = 0; b < val.size(); ++b) {
      const auto& [from, to] = val[b];
      if (e.sample_time >= from && e.sample_time <= to) validating = static_cast<int>(b);
      // An episode whose horizon reaches into a validation period would leak its outcome.
      else if (e.sample_time < from && e.sample_time + purge > from)
        purged = true;
    }
    if (validating >= 0) {
      if (e.chain_nodes == chain_nodes) {
        s.val.push_back(i);
        s.val_block.push_back(validating);
      }
    } else if (purged) {
      ++s.purged;
    } else {
      s.train.push_back(i);
    }
  }
  s.blocks = static_cast<int>(val.size());
  return s;
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

double mean_interruption_cost_h(const StopMetrics& m, const CostModel& cost) {
  return m.mean_interruption_h + cost.interruption_penalty * (1 - m.zero_share);
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

std::vector<double> group_overlaps(const ProbeSet& data, const std::vector<std::size_t>& episodes,
                                   const std::vector<int>& group, int groups,
                                   const std::vector<int>& stops, const CostModel& cost) {
  std::vector<double> sum(static_cast<std::size_t>(std::max(0, groups)), 0.0);
  std::vector<std::size_t> n(sum.size(), 0);
  for (std::size_t i = 0; i < episodes.size(); ++i) {
    const ProbeSet::Episode& e = data.episodes[episodes[i]];
    const Seconds gap = data.gap_at(e, stops[i]);
    const auto g = static_cast<std::size_t>(group[i]);
    sum[g] += cost.overlap_h(gap);
    ++n[g];
  }
  for (std::size_t g = 0; g < sum.size(); ++g)
    if (n[g] > 0) sum[g] /= static_cast<double>(n[g]);
  return sum;
}

bool OverlapCaps::hold(const ProbeSet& data, const std::vector<std::size_t>& episodes,
                       const std::vector<int>& stops, const CostModel& cost) const {
  if (confidence <= 0) {
    const auto overlaps =
        group_overlaps(data, episodes, group, static_cast<int>(cap.size()), stops, cost);
    for (std::size_t g = 0; g < cap.size(); ++g)
      if (overlaps[g] > cap[g] + 1e-9) return false;
    return true;
  }
  // Paired: per day and group, the overlap the rule adds over `average` on the same episodes.
  // A group's mean is within its cap in a resample where the drawn days add up to <= 0.
  const std::size_t groups = cap.size();
  std::vector<double> excess(static_cast<std::size_t>(days) * groups, 0.0);
  for (std::size_t i = 0; i < episodes.size(); ++i) {
    const Seconds gap = data.gap_at(data.episodes[episodes[i]], stops[i]);
    excess[static_cast<std::size_t>(day[i]) * groups + static_cast<std::size_t>(group[i])] +=
        cost.overlap_h(gap) - average_overlap[i];
  }
  std::size_t within = 0;
  std::vector<double> sum(groups);
  for (const auto& draw : resamples) {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (std::size_t d = 0; d < draw.size(); ++d)
      if (draw[d] != 0)
        for (std::size_t g = 0; g < groups; ++g) sum[g] += draw[d] * excess[d * groups + g];
    if (std::all_of(sum.begin(), sum.end(), [](double s) { return s <= 1e-9; })) ++within;
  }
  return static_cast<double>(within) >= confidence * static_cast<double>(resamples.size());
}

OverlapCaps make_overlap_caps(const ProbeSet& data, const Split& split, const CostModel& cost,
                              bool per_block, double confidence, std::uint64_t seed,
                              int resamples) {
  OverlapCaps caps;
  const std::vector<int> average = average_stops(data, split.val);
  caps.group = per_block ? split.val_block : std::vector<int>(split.val.size(), 0);
  caps.cap =
      group_overlaps(data, split.val, caps.group, per_block ? split.blocks : 1, average, cost);
  caps.confidence = confidence;
  if (confidence <= 0 || split.val.empty()) return caps;  // nothing to resample
  std::vector<Seconds> day_of;  // distinct days, in order of first appearance
  for (std::size_t i = 0; i < split.val.size(); ++i) {
    const ProbeSet::Episode& e = data.episodes[split.val[i]];
    const Seconds d = e.sample_time / kDay;
    auto it = std::find(day_of.begin(), day_of.end(), d);
    caps.day.push_back(static_cast<int>(it - day_of.begin()));
    if (it == day_of.end()) day_of.push_back(d);
    caps.average_overlap.push_back(cost.overlap_h(data.gap_at(e, average[i])));
  }
  caps.days = static_cast<int>(day_of.size());
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pick(0, caps.days - 1);
  caps.resamples.assign(static_cast<std::size_t>(std::max(1, resamples)),
                        std::vector<std::uint16_t>(day_of.size(), 0));
  for (auto& draw : caps.resamples)
    for (int k = 0; k < caps.days; ++k) ++draw[static_cast<std::size_t>(pick(rng))];
  return caps;
}

}  // namespace mirage::learned

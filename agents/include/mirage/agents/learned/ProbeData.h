#pragma once
// What the learned agents train on, without LibTorch: the what-if probes of a training window
// (mirage/agents/Probe.h), cached in a file, turned into compact per-decision features, and the
// exact outcome of any stopping rule on them (no simulation needed: a probed episode says what
// every submission instant would have given).
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mirage/agents/Episode.h"
#include "mirage/agents/EpisodeStarts.h"
#include "mirage/agents/Evaluation.h"
#include "mirage/agents/Probe.h"
#include "mirage/agents/WaitPredictor.h"
#include "mirage/core/FeatureEncoder.h"
#include "mirage/traces/Trace.h"

namespace mirage::learned {

// ---- compact features ----------------------------------------------------------------------
// The networks see the encoder's output pooled to a few dozen numbers: the latest snapshot, the
// campaign features, and a few derived from them (remaining time, recent mean wait and planned
// waits in linear hours, and how each compares with the remaining time). A function of
// FeatureEncoder::encode() only, so live and simulated decisions pool identically. Change it and
// bump kPoolingVersion (model files record it).
// 4: the planned wait at half runtimes, too; 5: without the planned waits at the predecessor's
// end, which feed the window clause (WindowClause) instead: as inputs they made the networks
// submit many hours before a closing window (measured on LS6, 2026-11-23); 6: the wait
// predictor's quantiles (kWaitFeatures, only for a model trained with one); 7: the risk and
// quantile@risk's margin after them, for a model trained with the risk as an input (RiskInput.h).
inline constexpr int kPoolingVersion = 7;
inline constexpr int kDerivedFeatures = 7;
// With a wait predictor (`train --wait-distribution`): each of its quantiles of the successor's
// wait (kWaitLevels), log-scaled as the encoder's times, and each against the predecessor's
// remaining time (what `quantile@q` compares): the network can then represent `quantile` at any
// level and learn where to depart from it. A model without a predictor has no such inputs (as
// dead inputs they changed the networks' initial weights, and what they learned).
inline constexpr int kWaitFeatures = 2 * static_cast<int>(kWaitLevels.size());
// The campaign features the networks see: those before the planned waits at the end (the
// planned waits with recent runtimes, after them, feed the guard and the window clause only).
inline constexpr int kNetworkCampaignFeatures = FeatureEncoder::kPlannedWaitAtEnd;

inline constexpr int kPooledFeatures =
    FeatureEncoder::kPerSnapshot + kNetworkCampaignFeatures + kDerivedFeatures;
// The networks' inputs: kPooledFeatures, then kWaitFeatures with a wait predictor.
constexpr int pooled_width(bool wait_features) {
  return kPooledFeatures + (wait_features ? kWaitFeatures : 0);
}
// `encoded` holds FeatureEncoder::kInputSize floats; `predicted` the wait predictor's quantiles
// there (null: no predictor); `out` receives pooled_width(predicted != nullptr) floats.
void pool_features(const float* encoded, const WaitQuantiles* predicted, float* out);
// The same from a live observation, as a model file decides (LearnedPolicy): `encoded` is
// FeatureEncoder::encode(obs), and with `waits` its prediction for the successor in the observed
// queue joins it, as the probes predicted it there (and is written to `predicted`, when given).
void pool_observation(const Observation& obs, const float* encoded, const WaitPredictor* waits,
                      float* out, WaitQuantiles* predicted = nullptr);

// The predictor a model was trained with, as its file records it: where it was read, and a
// digest of its bytes (a file changed since is refused rather than read as another's inputs).
struct WaitPredictorRef {
  std::string path;  // absolute
  std::string digest;
};
// Reads the predictor at `path` (InputError naming the file when it is none) and its digest.
std::shared_ptr<const WaitPredictor> read_recorded_predictor(const std::string& path,
                                                             WaitPredictorRef* ref);
std::string file_digest(const std::string& path);

// The queue forecasts a decision rule can read, all planning the pending jobs that outrank the
// successor ahead of it:
//  - kLimits: the running jobs run to their time limits (where the `forecast` baseline submits).
//    Time limits overstate runtimes, so this one opens early and overlaps.
//  - kHalved: every other job runs half of what its limit leaves. It opens later: less overlap,
//    and an interruption where the forecast of real runtimes was too short.
//  - kRecent: every other job runs as the recently ended jobs ran (RuntimeGuess::recent_ends):
//    the machine's own bias of time limits, measured as it goes. The window clause reads it; as
//    a guard it lost (it moved the members' epochs without being chosen: LS6 8-node dqn, 0.50 h
//    of overlap in February against 0.41 h) and was removed.
enum class ForecastPlan : std::uint8_t { kLimits = 1, kHalved = 2, kRecent = 3 };
inline constexpr std::array<ForecastPlan, 3> kForecastPlans{
    ForecastPlan::kLimits, ForecastPlan::kHalved, ForecastPlan::kRecent};
std::string_view to_string(ForecastPlan plan);
// limits|halved|recent
std::optional<ForecastPlan> parse_forecast_plan(std::string_view text);

// The forecast guard: no submission until the queue forecast (kLimits or kHalved of the plans
// above) plans the successor to start no earlier than the predecessor's end. Before that,
// submitting buys overlap unless jobs that outrank the successor arrive meanwhile; a learned
// agent may be held to it. Which one (or none) is chosen on validation: the bias of time limits
// is a property of the machine and its users.
enum class ForecastGuard : std::uint8_t { kOff = 0, kLimits = 1, kHalved = 2 };
inline constexpr std::array<ForecastGuard, 2> kForecastGuards{ForecastGuard::kLimits,
                                                              ForecastGuard::kHalved};
std::string_view to_string(ForecastGuard guard);
// off|limits|halved
std::optional<ForecastGuard> parse_forecast_guard(std::string_view text);

// True where `guard` lets a submission through. A function of FeatureEncoder::encode()'s output
// (`encoded`: kInputSize floats), as Pooling is; time_feature is monotone, so comparing features
// compares the times, live and in probes alike.
bool forecast_allows_submit(const float* encoded, ForecastGuard guard);
// The window clause of a decision rule: submit, whatever the network's margin, once the
// predecessor has at most `within` left and the queue forecast `plan` (none: no clause) has the
// successor wait at least `wait` were it submitted at the predecessor's end. That is a window
// closing: a big job's reservation that a successor submitted now would start before, and one
// submitted at the end would wait behind. The networks cannot tell how soon to act on it (the
// forecast does not know how long jobs really run), so the clause bounds the overlap it buys by
// `within`, and the calibration chooses both bounds on validation.
struct WindowClause {
  std::optional<ForecastPlan> plan;
  Seconds within = 0, wait = 0;
  bool active() const { return plan.has_value(); }
  // From FeatureEncoder::encode()'s output, as forecast_allows_submit.
  bool fires(const float* encoded) const;
  // The campaign features it reads (ProbeSet::window_features): the remaining time, then the
  // planned wait at the end in each of kForecastPlans.
  using Features = std::array<float, 1 + kForecastPlans.size()>;
  bool fires(const Features& features) const;
  static Features features(const float* encoded);
};
bool operator<(const WindowClause& a, const WindowClause& b);
// The clauses the calibration tries (besides none): every plan, `within` of 1-4 h, `wait` of
// 1-8 h.
std::vector<WindowClause> window_clauses();

// True where the `average` baseline would submit (the predecessor's remaining time is within the
// recent mean wait), from the same features: the learned rules that follow `average` test this.
bool average_would_submit(const float* encoded);

// ---- the cost of an outcome ----------------------------------------------------------------
// cost(gap) = interruption (h) + overlap_weight x overlap (h), overlap as the evaluation counts it
// (capped at the hand-off grace in hand-off mode).
struct CostModel {
  double overlap_weight = 1.0;
  OverlapMode overlap = OverlapMode::kConcurrent;
  Seconds handoff_grace = 5 * kMinute;
  double interruption_h(Seconds gap) const;
  double overlap_h(Seconds gap) const;
  double operator()(Seconds gap) const {
    return interruption_h(gap) + overlap_weight * overlap_h(gap);
  }
};

// ---- the probed training data --------------------------------------------------------------
// The world whose outcomes the probes record: the replay's (a fork per instant), or the log's
// real waits (`train --successor-wait logged`): submitting at t gives the wait LoggedWaits
// states for the chain's shape at t, while the agent still observes the replayed queue, as
// eval's logged world has it decide.
struct ProbeSpec {
  ClusterSpec cluster;
  EpisodeConfig episode;  // its logged_waits is ignored: `world` and the two below make them
  EpisodeStartMode mode = EpisodeStartMode::kForkReplay;
  Seconds from = 0, to = 0, every = kHour;
  SuccessorWait world = SuccessorWait::kReplay;
  Seconds logged_window = 3 * kDay;  // LoggedWaitsSpec::window
  std::size_t logged_jobs = 5;       // LoggedWaitsSpec::jobs
  // The log the logged world's waits come from, its dependent jobs marked by the log's own fields
  // (yardstick_log in LoggedWaits.h), as eval's is (EvalConfig::yardstick_log), whatever the
  // replay was calibrated on. Null: the trace probed. Its marks key the probes.
  std::shared_ptr<const Trace> yardstick_log;
  // With a predictor, every decision also sees its quantiles of the successor's wait
  // (kWaitFeatures); its digest keys the probes.
  std::shared_ptr<const WaitPredictor> waits;
  WaitPredictorRef waits_ref;
  // The logged world's waits for this chain (world kLogged only).
  LoggedWaitsSpec logged_spec() const {
    return {episode.chain.nodes, episode.chain.time_limit, logged_window, logged_jobs};
  }
};

// Every decision instant of every probed episode, back to back.
struct ProbeSet {
  struct Episode {
    Seconds sample_time = 0;
    std::size_t first = 0;  // index of its first decision
    std::size_t count = 0;  // decisions (may be 0: no instant before the fallback)
    Seconds fallback_gap = 0;
    int average_stop = -1;  // where the `average` baseline submits (-1: the fallback)
  };
  int width = kPooledFeatures;    // per decision: pooled_width(with the predictor's quantiles)
  std::vector<Episode> episodes;  // in sample-time order
  std::vector<float> x;           // decisions x width
  std::vector<Seconds> gap;       // per decision: the gap had the successor been submitted then
  // Per decision: bit g set where forecast_allows_submit(ForecastGuard g) holds, and bit
  // kAverageBit where average_would_submit does.
  static constexpr int kAverageBit = 7;
  std::vector<std::uint8_t> submit_flags;
  // Per decision: what WindowClause reads (remaining time, and the planned waits at the end).
  std::vector<WindowClause::Features> window_features;
  // Per decision, with a predictor's quantiles among the features: those quantiles, exact (the
  // residual on quantile@risk reads them, RiskInput.h); empty without.
  std::vector<WaitQuantiles> predicted;
  // With add_probes' keep_snapshots (the sequence model): every probed snapshot, kPerSnapshot
  // floats each, episode after episode, and per decision the index of its latest one there
  // (each preceded by the kWindow of its episode's window); empty without.
  std::vector<float> snapshots;
  std::vector<std::size_t> latest_snapshot;
  const float* latest(std::size_t decision) const {
    return snapshots.data() + latest_snapshot[decision] * FeatureEncoder::kPerSnapshot;
  }
  // Logged world: what had no logged wait and was left out (ProbedEpisode::unscored and
  // unscored_instants), for the training log.
  std::size_t unscored_episodes = 0, unscored_instants = 0;
  std::size_t decisions() const { return gap.size(); }
  // The gap of `e` had the successor been submitted at its decision `stop` (-1: the fallback).
  Seconds gap_at(const Episode& e, int stop) const {
    return stop < 0 ? e.fallback_gap : gap[e.first + static_cast<std::size_t>(stop)];
  }
  bool guard_allows(std::size_t decision, ForecastGuard guard) const {
    return guard == ForecastGuard::kOff ||
           (submit_flags[decision] >> static_cast<int>(guard) & 1) != 0;
  }
  bool average_submits(std::size_t decision) const {
    return (submit_flags[decision] >> kAverageBit & 1) != 0;
  }
};

// A text that changes whenever anything that shapes the probes changes (trace content, machine,
// scheduler, chain, window, spacing, encoder version, and the code that probes: a digest of the
// sources of the trace readers, simulator, core and agents made at build time).
std::string probe_fingerprint(const Trace& trace, const ProbeSpec& spec);

// Where the probes of `spec` are cached in `dir`: named after the trace and a digest of the
// fingerprint, so that agents trained on the same window share one probing.
std::string probe_cache_file(const std::string& dir, const std::string& trace_path,
                             const Trace& trace, const ProbeSpec& spec);

// Loads the probes from `cache_path` when it holds this fingerprint; otherwise probes on
// `threads` threads and writes the cache (atomically; an empty path disables the cache).
// *from_cache says which happened.
using CountProgress = std::function<void(std::size_t done, std::size_t total)>;
std::vector<ProbedEpisode> probe_or_load(const Trace& trace, const ProbeSpec& spec,
                                         const std::string& cache_path, int threads,
                                         const CountProgress& progress, bool* from_cache);

// Adds the pooled decisions of `probed` to `set`, keeping the episodes in sample-time order and
// leaving out (and counting) the unscored ones; `wait_features`: the probes hold a predictor's
// quantiles (ProbeSpec::waits), which the pooled features then carry.
void add_probes(ProbeSet& set, const std::vector<ProbedEpisode>& probed, bool wait_features = false,
                bool keep_snapshots = false);

// Blocked time split: the episodes are cut into `blocks` consecutive blocks, and the last
// `val_fraction` of each validates (so validation sees every period of the window, quiet and
// busy, not only its end); episodes whose horizon (sample time + `purge`) reaches into a
// validation period are left out of both; the others train. One block is the plain
// time-ordered tail.
struct Split {
  std::vector<std::size_t> train, val;
  int blocks = 0;  // validation blocks (those with episodes)
  std::size_t purged = 0;
};
Split time_split(const ProbeSet& data, double val_fraction, Seconds purge, int blocks = 1);

// ---- stopping rules on probed episodes -----------------------------------------------------
// stops[i]: the decision index at which the rule submits in episodes[i], or -1 (the fallback).
struct StopMetrics {
  std::size_t episodes = 0;
  double mean_cost_h = 0;
  double mean_interruption_h = 0;
  double zero_share = 0;  // gap <= 0
  double mean_overlap_h = 0;
};
StopMetrics evaluate_stops(const ProbeSet& data, const std::vector<std::size_t>& episodes,
                           const std::vector<int>& stops, const CostModel& cost);
// The stops of the baselines, and the hindsight best (the cheapest instant of each episode).
std::vector<int> reactive_stops(const ProbeSet& data, const std::vector<std::size_t>& episodes);
std::vector<int> average_stops(const ProbeSet& data, const std::vector<std::size_t>& episodes);
std::vector<int> hindsight_stops(const ProbeSet& data, const std::vector<std::size_t>& episodes,
                                 const CostModel& cost);

}  // namespace mirage::learned

#pragma once
// Offline training data from what-if probes: along an episode in which the successor is held
// back to the fallback, at every decision instant a fork asks "what if it were submitted now?"
// and records the gap that would give, beside the encoded observation there. This is what
// Mirage learned from, and what the learned agents train on. In the world of the log's real
// waits (EpisodeConfig::logged_waits) no fork is needed: the answer is the wait the log's real
// jobs of the chain's shape had, and an instant without such a figure is left out.
#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "mirage/agents/EpisodeStarts.h"
#include "mirage/agents/WaitPredictor.h"
#include "mirage/core/FeatureEncoder.h"

namespace mirage {

struct ProbedDecision {
  Seconds time = 0;
  int snapshot_index = 0;  // the snapshot taken at this instant, in ProbedEpisode::snapshots
  std::array<float, FeatureEncoder::kCampaignFeatures> campaign{};
  Seconds gap_if_submitted = 0;  // successor start - predecessor end, had it been submitted now
  // With a wait predictor: its quantiles of the successor's wait here (WaitPredictor::predict on
  // the observed queue); zeros without one.
  WaitQuantiles predicted_wait{};
};

struct ProbedEpisode {
  Seconds sample_time = 0;
  Seconds predecessor_end = 0;
  // Encoded snapshots, kPerSnapshot floats each, oldest first: the kWindow before the first
  // decision (zero-padded when the history was short), then one per decision instant.
  std::vector<float> snapshots;
  std::vector<ProbedDecision> decisions;  // in time order
  Seconds fallback_gap = 0;               // the gap if the policy never submits (reactive)
  // Logged world only: decision instants left out for want of a logged wait, and whether the
  // episode has no outcome at all (its predecessor or its fallback had none): it trains nothing.
  std::uint32_t unscored_instants = 0;
  bool unscored = false;

  // The model input at decision k: identical to FeatureEncoder::encode of the Observation the
  // policy saw there.
  std::vector<float> features(std::size_t k) const;
};

// Probes the first boundary of an episode from `start`; with `waits`, each instant also records
// its predicted quantiles of the successor's wait.
ProbedEpisode probe_episode(EpisodeStart start, const EpisodeConfig& config,
                            const WaitPredictor* waits = nullptr);

// Probes every sample time of [from, to) spaced `every`, on `threads` threads (0: all cores).
std::vector<ProbedEpisode> probe_window(
    const Trace& trace, const ClusterSpec& cluster, const EpisodeConfig& config,
    EpisodeStartMode mode, Seconds from, Seconds to, Seconds every, int threads,
    const std::function<void(std::size_t, std::size_t)>& progress = {},
    const WaitPredictor* waits = nullptr);

}  // namespace mirage

#pragma once
// THE feature encoder: every policy, live or simulated, sees queues through this one class.
// Its version is written into every model file and checked on load; change the features and
// you must bump kVersion.
//
// Per snapshot (Mirage's features, normalised; Mirage fed raw values):
//   pending: count, total size, time limit p0/25/50/75/100, time waited p0/25/50/75/100
//   running: count, total size, time limit p0..p100, time waited p0..p100, time run p0..p100
// Counts and sizes are divided by the machine's node count, so machines of any size compare;
// times go through log1p(hours) / log1p(48), so 0 -> 0 and 48 h -> 1 with a long tail kept.
// Campaign: predecessor limit, size, waited, run, remaining; successor size and limit; recent
// mean wait of started jobs; the successor's planned wait were it submitted now (QueueForecast:
// behind the pending jobs that outrank it, and with the running jobs alone), and behind them
// again with every other job running only half of what its limit leaves (jobs end early:
// limits alone overstate waits most when the queue is long); and the wait in the same two
// plans were it submitted at the predecessor's end instead (how long waiting would interrupt,
// were nothing to arrive: a window that a big job's reservation closes shows only here); and
// both waits once more with the other jobs running as the recently ended ones ran; whether the
// user's limits would hold the successor while the predecessor runs, and the share of the
// machine down, drained or reserved for others.
#include <array>
#include <deque>
#include <vector>

#include "mirage/core/Observation.h"
#include "mirage/core/QueueSnapshot.h"

namespace mirage {

class FeatureEncoder {
 public:
  // 2: the planned waits joined the campaign features; 3: planned waits with shorter runtimes;
  // 4: planned waits of a submission at the predecessor's end; 5: planned waits with the
  // runtimes of recently ended jobs; 6: the waits at the predecessor's end count the pending
  // jobs that start before then (small ones it would outrank) and those that age past it;
  // 7: the plans rank the queue by the reported priorities and set aside jobs that cannot run,
  // the successor held by its user's limits and the machine's unavailable share joined.
  static constexpr int kVersion = 7;
  static constexpr int kWindow = 144;       // snapshots in an observation
  static constexpr Seconds kSpacing = 600;  // seconds between snapshots
  static constexpr int kPerSnapshot = 29;
  static constexpr int kCampaignFeatures = 17;
  // Where each campaign feature sits in encode_campaign()'s output.
  enum CampaignFeature {
    kPredecessorLimit,
    kPredecessorNodes,
    kPredecessorWaited,
    kPredecessorRun,
    kPredecessorRemaining,
    kSuccessorNodes,
    kSuccessorLimit,
    kRecentMeanWait,
    kPlannedWait,
    kPlannedWaitRunningOnly,
    kPlannedWaitHalfRuntimes,
    kPlannedWaitAtEnd,
    kPlannedWaitAtEndHalfRuntimes,
    kPlannedWaitRecentRuntimes,
    kPlannedWaitAtEndRecentRuntimes,
    kSuccessorHeldByLimit,
    kUnavailableNodes,
  };
  // The runtime share of the last planned wait (QueueForecast's RuntimeGuess::share). A quarter as
  // well added nothing the learners used and cost 0.2 ms a decision.
  static constexpr double kHalfRuntimes = 0.5;
  static constexpr int kInputSize = kWindow * kPerSnapshot + kCampaignFeatures;

  using SnapshotFeatures = std::array<float, kPerSnapshot>;

  static SnapshotFeatures encode_snapshot(const QueueSnapshot& snapshot);
  static std::array<float, kCampaignFeatures> encode_campaign(const Observation& obs);
  // The model input: the window (oldest first) followed by the campaign features.
  static std::vector<float> encode(const Observation& obs);
  // Time normalisation used throughout.
  static float time_feature(Seconds seconds);
};

// Keeps the last kWindow encoded snapshots and builds Observations from them. The simulator's
// episodes and the daemon's poller both feed one of these.
class ObservationBuilder {
 public:
  void add(const QueueSnapshot& snapshot);
  void add(QueueSnapshot&& snapshot);  // the same, kept without a copy
  Observation build(const CampaignView& campaign) const;
  bool empty() const { return filled_ == 0; }
  // Stops encoding snapshots: later observations have no window (window_filled still counts the
  // snapshots seen). For deciders that never read it, every baseline among them: encoding each
  // snapshot was a tenth of their episodes.
  void drop_window();

 private:
  std::deque<FeatureEncoder::SnapshotFeatures> history_;
  QueueSnapshot last_;
  int filled_ = 0;
  bool keeps_window_ = true;
};

}  // namespace mirage

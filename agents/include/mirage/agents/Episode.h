#pragma once
// One chaining episode (the Mirage protocol): from a simulator state at the sample time, the
// predecessor is submitted; every decision_interval the policy sees an Observation and says
// wait or submit; if it never submits, the successor is submitted reactive_lead before the
// predecessor's end (as a job script's last line would); the episode ends when the successor
// starts. Longer chains repeat this at every boundary.
#include <memory>
#include <optional>
#include <vector>

#include "mirage/agents/CampaignWork.h"
#include "mirage/agents/LoggedWaits.h"
#include "mirage/core/Campaign.h"
#include "mirage/core/FeatureEncoder.h"
#include "mirage/core/Policy.h"
#include "mirage/simulator/Simulator.h"

namespace mirage {

struct ChainSpec {
  int nodes = 1;
  int gpus_per_node = 0;
  Seconds time_limit = 2880 * kMinute;
  Seconds runtime = 2880 * kMinute;  // each segment runs its full limit, as in Mirage
  int segments = 2;
  OverlapMode overlap = OverlapMode::kConcurrent;
  Seconds handoff_grace = 5 * kMinute;  // hand-off: the predecessor stops this long after
};

struct EpisodeConfig {
  ChainSpec chain;
  Seconds decision_interval = FeatureEncoder::kSpacing;
  Seconds max_wait = 2 * kDay;  // the longest wait a segment is allowed before the cut-off
  Seconds reactive_lead = 60;   // the fallback submission, this long before the predecessor ends
  // The fallback too waits for the next decision instant, as it does when `mirage tick` runs
  // every decision_interval (scrontab) instead of a daemon polling every few seconds.
  bool fallback_at_decision = false;
  // A whole campaign (eval --work): the chain goes on until the work is done, and the episode
  // keeps its account. Inactive: chain.segments segments.
  CampaignWork campaign;
  // The world the chain's segments wait in. None: the replay's (each segment is a job of the
  // simulator). Set: the log's real waits (LoggedWaits; not owned): every segment starts when
  // they say, and the replay only shows the policies the queue they decide from.
  const LoggedWaits* logged_waits = nullptr;
  // Trace time an episode may need after its sample time: the limit plus the longest wait,
  // for each boundary; and a whole campaign's last segment.
  Seconds horizon() const {
    if (campaign.active())
      return static_cast<Seconds>(campaign.segments_needed(chain) - 1) *
                 (chain.time_limit + max_wait) +
             chain.time_limit;
    return static_cast<Seconds>(chain.segments - 1) * (chain.time_limit + max_wait);
  }
};

struct BoundaryOutcome {
  Seconds predecessor_submit = 0;
  Seconds predecessor_start = 0;
  Seconds predecessor_end = 0;  // its natural end (start + runtime): what the gap is measured to
  Seconds successor_submit = 0;
  Seconds successor_start = 0;  // the cut-off time when truncated
  bool truncated = false;       // the successor had not started by the cut-off
  // Censored before the boundary: the predecessor itself had not started by the cut-off.
  bool predecessor_waiting = false;
  Seconds gap() const { return successor_start - predecessor_end; }
  Seconds interruption() const { return gap() > 0 ? gap() : 0; }
  // Overlap: GPU time held twice. In hand-off mode the predecessor stops after handoff_grace.
  Seconds overlap(const ChainSpec& chain) const {
    const Seconds o = gap() < 0 ? -gap() : 0;
    return chain.overlap == OverlapMode::kHandoff ? std::min(o, chain.handoff_grace) : o;
  }
};

struct EpisodeResult {
  Seconds sample_time = 0;
  std::vector<BoundaryOutcome> boundaries;
  std::optional<CampaignOutcome> campaign;  // with EpisodeConfig::campaign active
  // With logged waits: a segment was submitted where too few real jobs of its shape were near to
  // give it a wait. The episode stopped there and speaks for nothing (it is dropped and counted).
  bool lacks_logged_wait = false;
  bool truncated() const;
};

// Where an episode starts: the simulator at the sample time and the history observed so far.
struct EpisodeStart {
  Seconds sample_time = 0;
  Simulator sim;
  ObservationBuilder history;
  Seconds deadline = 0;       // nothing of the episode is simulated past this (end of usable trace)
  Seconds next_snapshot = 0;  // the next instant on the snapshot grid
  // Whether the snapshots taken from here on list the queue's jobs: some decider reads them
  // (Decider::reads_queue). The episodes set it.
  bool lists_queue = true;
  QueueSnapshot take_snapshot() const {
    return lists_queue ? sim.snapshot() : sim.snapshot_without_jobs();
  }
};

// Who decides: a Policy, or the oracle with its what-if forks.
class Decider {
 public:
  virtual ~Decider() = default;
  // Called at each decision instant, with the simulator at that instant.
  virtual bool submit_now(const Simulator& sim, const Observation& obs, SimJobIndex predecessor,
                          Seconds fallback_time) = 0;
  // Called when a new boundary begins (the predecessor just started, or the chain moved on).
  virtual void begin_boundary() {}
  // Whether submit_now reads Observation::window (see Policy::reads_window).
  virtual bool reads_window() const { return true; }
  // Whether submit_now reads the queue's jobs in the Observation (see Policy::reads_queue).
  virtual bool reads_queue() const { return true; }
};

class PolicyDecider final : public Decider {
 public:
  explicit PolicyDecider(Policy& policy) : policy_(policy) {}
  // A policy that reads Slurm's estimate gets the simulator's will-run plan of the successor.
  bool submit_now(const Simulator& sim, const Observation& obs, SimJobIndex, Seconds) override;
  void begin_boundary() override { policy_.reset(); }
  bool reads_window() const override { return policy_.reads_window(); }
  bool reads_queue() const override { return policy_.reads_queue(); }

 private:
  Policy& policy_;
};

// One submission instant the oracle tried on a fork, and the gap it would have given.
struct WhatIfSubmission {
  int boundary = 0;
  Seconds submit = 0;
  Seconds gap = 0;  // successor start - predecessor end
};

// The bound no single-submission policy can beat: at the boundary's first decision it tries
// every decision instant (and the fallback) on a fork and keeps the one with the smallest |gap|.
// What every instant would have given is kept too: other trade-offs of interruption against
// overlap than the smallest |gap| can be read off it afterwards.
class OracleDecider final : public Decider {
 public:
  explicit OracleDecider(const EpisodeConfig& config) : config_(config) {}
  bool submit_now(const Simulator& sim, const Observation& obs, SimJobIndex predecessor,
                  Seconds fallback_time) override;
  void begin_boundary() override {
    chosen_ = -1;
    ++boundary_;
  }
  bool reads_window() const override { return false; }
  bool reads_queue() const override { return false; }  // it asks its forks, not the snapshots
  const std::vector<WhatIfSubmission>& tried() const { return tried_; }

 private:
  const EpisodeConfig& config_;
  Seconds chosen_ = -1;
  int boundary_ = -1;
  std::vector<WhatIfSubmission> tried_;
};

SimJobSpec segment_job(const ChainSpec& chain);

EpisodeResult run_episode(EpisodeStart start, Decider& decider, const EpisodeConfig& config);

// The episode of each decider from the same start, each what run_episode gives it, in one
// replay up to the first decision instant at which one of them submits: from there each goes on
// alone on a copy (an evaluation's policies mostly agree until well into the first segment).
std::vector<EpisodeResult> run_episodes(EpisodeStart start, const std::vector<Decider*>& deciders,
                                        const EpisodeConfig& config);

}  // namespace mirage

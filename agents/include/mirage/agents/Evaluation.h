#pragma once
// `mirage eval`: every policy on the same sample episodes, with the metrics of the Mirage paper.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mirage/agents/Episode.h"
#include "mirage/agents/EpisodeStarts.h"
#include "mirage/agents/LoggedWaits.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/traces/Trace.h"

namespace mirage {

// Which world decides when the chain's segments start: the calibrated replay, or the log's real
// waits (LoggedWaits). The policies observe the replayed queue in both.
enum class SuccessorWait { kReplay, kLogged };
std::string_view to_string(SuccessorWait world);

struct EvalConfig {
  ClusterSpec cluster;
  EpisodeConfig episode;
  Seconds from = 0;  // sample times: from, from + every, ... < to
  Seconds to = 0;
  Seconds every = 4 * kHour;
  EpisodeStartMode start_mode = EpisodeStartMode::kForkReplay;
  std::vector<std::string> policies;  // names; "reactive" is always evaluated (it sets buckets)
  PolicyContext context;              // what `quantile` reads
  int threads = 0;                    // 0: all cores
  SuccessorWait world = SuccessorWait::kReplay;
  // With the logged world: the window and the real jobs behind each wait (the shape is the
  // chain's: its nodes and limit are set from episode.chain).
  Seconds logged_window = 3 * kDay;
  std::size_t logged_jobs = 5;
  // The log the logged world's waits come from, its dependent jobs marked by the log's own fields
  // (yardstick_log in LoggedWaits.h), whatever months the replay was calibrated on: the yardstick
  // does not move with the replay. Null: the trace evaluated.
  std::shared_ptr<const Trace> yardstick_log;
};

struct SampleOutcome {
  Seconds sample_time = 0;
  std::string bucket;  // by reactive's interruption: low, medium, heavy
  EpisodeResult episode;
  std::vector<WhatIfSubmission> what_ifs;  // the oracle's only: every instant it tried
};

// Means are over the boundaries that finished. A boundary the end of the log or --max-wait cut
// off (the successor, or its predecessor, had not started) is censored: not an outcome, counted
// apart, with the interruption it had reached by then as a lower bound.
struct BucketMetrics {
  std::size_t samples = 0;
  std::size_t boundaries = 0;  // finished: the means are over these
  std::size_t censored = 0;
  double censored_min_interruption_h = 0;  // mean of the censored ones' lower bounds
  double mean_interruption_h = 0;
  double zero_interruption_share = 0;
  double mean_overlap_h = 0;
  double p90_interruption_h = 0;
  double interruption_reduction = 0;  // 1 - mean interruption / reactive's, same samples
};

struct PolicyMetrics {
  BucketMetrics overall;
  std::map<std::string, BucketMetrics> buckets;  // low, medium, heavy (only those with samples)
};

// What whole campaigns cost (eval --work), averaged over the start times at which every policy
// finished its campaign, so that all are judged on the same ones. GPU-hours are a segment's GPUs
// times hours (EvalReport::gpus_per_segment).
struct CampaignMetrics {
  std::size_t compared = 0;    // campaigns averaged
  std::size_t incomplete = 0;  // this policy's that did not finish (a successor cut off at
                               // --max-wait, or the trace ended)
  double makespan_h = 0;       // first submission to the work's end
  double stretch = 0;          // makespan / work
  double segments = 0;
  double idle_gpu_h = 0;     // interruption x GPUs: the campaign stopped between segments
  double overlap_gpu_h = 0;  // charged twice: two segments holding GPUs at once
  double restart_gpu_h = 0;  // restart overheads and the work redone after hand-offs
  double redo_gpu_h = 0;     // of which: work lost since the last checkpoint, done again
  double charged_gpu_h = 0;  // every segment's allocation: the work and all of the above
};

struct EvalReport {
  std::vector<Seconds> sample_times;
  std::size_t dropped_past_horizon = 0;  // samples whose episode would outrun the trace
  std::size_t truncated = 0;             // episodes cut off at max_wait (counted, kept)
  std::map<std::string, std::vector<SampleOutcome>> outcomes;  // policy -> per sample
  std::map<std::string, PolicyMetrics> metrics;
  // A policy that submitted every successor of every sample exactly when an earlier one in the
  // list did (reactive first): its name -> that one's. A model that learned nothing but a
  // baseline's rule shows here.
  std::map<std::string, std::string> decides_as;
  // eval --work: per policy; GPUs a segment holds (its nodes when the machine's GPUs per node are
  // not known: then the figures are node-hours).
  std::map<std::string, CampaignMetrics> campaign;
  int gpus_per_segment = 0;
  bool gpus_known = false;
  SuccessorWait world = SuccessorWait::kReplay;
  // The logged world: samples dropped because one of their segments (any policy's) was submitted
  // where fewer than logged_jobs real jobs of its shape were near; the real jobs of that shape in
  // the log; whether the log gives start times at all; how each wait was made, for people.
  std::size_t dropped_few_logged_jobs = 0;
  std::size_t logged_shape_jobs = 0;
  bool log_has_starts = true;
  std::string logged_description;
  // Where the shape was too sparse and the class's longest limits were pooled: the floor and one
  // line saying so (LoggedWaits::pooling); the floor is half the segment's limit and the line empty
  // where not.
  Seconds logged_limit_floor = 0;
  std::string logged_pooling;
  double wall_seconds = 0;
};

// Load bucket of a sample from reactive's interruption: low <= 2 h, medium 2-12 h, heavy > 12 h.
std::string load_bucket(Seconds reactive_interruption);

// Progress: (episodes done, episodes total).
using EvalProgress = std::function<void(std::size_t, std::size_t)>;

EvalReport evaluate(const Trace& trace, const EvalConfig& config,
                    const EvalProgress& progress = {});

// Restricts `report` to the samples at `times` (others are left out) and recomputes its metrics:
// two worlds compared on the same samples.
void keep_samples(EvalReport& report, const std::vector<Seconds>& times, const EvalConfig& config);

// Whether two policies submitted at the same instants at every boundary of every sample.
bool same_decisions(const std::vector<SampleOutcome>& a, const std::vector<SampleOutcome>& b);

// Whole-campaign costs of every policy in `outcomes`, on the samples all of them completed.
std::map<std::string, CampaignMetrics> compute_campaign_metrics(
    const std::map<std::string, std::vector<SampleOutcome>>& outcomes, Seconds work,
    int gpus_per_segment);

// Metrics of one policy's outcomes against reactive's on the same samples.
PolicyMetrics compute_metrics(const std::vector<SampleOutcome>& policy,
                              const std::vector<SampleOutcome>& reactive, const ChainSpec& chain);

}  // namespace mirage

// Chaining episodes, the oracle, the probes and the metrics: each test pins one promise of the
// evaluation harness.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "mirage/agents/Baselines.h"
#include "mirage/agents/Evaluation.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/agents/Probe.h"
#include "mirage/agents/ReactiveWhatIf.h"
#include "mirage/core/Error.h"
#include "support/BusyTrace.h"

namespace mirage {
namespace {

using test::busy_trace;
using test::kT0;

ClusterSpec cluster16() {
  ClusterSpec c;
  c.nodes = 16;
  return c;
}

EpisodeConfig short_chain(int nodes = 4) {
  EpisodeConfig e;
  e.chain.nodes = nodes;
  e.chain.time_limit = e.chain.runtime = 6 * kHour;
  e.max_wait = kDay;
  return e;
}

// Records every observation it is shown; never submits.
class RecordingDecider final : public Decider {
 public:
  std::vector<Observation> seen;
  bool submit_now(const Simulator&, const Observation& obs, SimJobIndex, Seconds) override {
    seen.push_back(obs);
    return false;
  }
};

// Submits at a fixed instant.
class FixedDecider final : public Decider {
 public:
  explicit FixedDecider(Seconds at) : at_(at) {}
  bool submit_now(const Simulator& sim, const Observation&, SimJobIndex, Seconds) override {
    return sim.now() >= at_;
  }

 private:
  Seconds at_;
};

std::vector<Observation> observe(const Trace& trace, Seconds sample) {
  EpisodeConfig cfg = short_chain();
  EpisodeStarts starts(trace, cluster16(), cfg, EpisodeStartMode::kForkReplay);
  RecordingDecider d;
  run_episode(starts.at(sample), d, cfg);
  return d.seen;
}

void expect_same_observation(const Observation& a, const Observation& b) {
  ASSERT_EQ(a.time, b.time);
  EXPECT_EQ(a.window, b.window);
  EXPECT_EQ(FeatureEncoder::encode(a), FeatureEncoder::encode(b));
  EXPECT_EQ(a.latest.pending.size(), b.latest.pending.size());
  EXPECT_EQ(a.latest.running.size(), b.latest.running.size());
  EXPECT_EQ(a.latest.recent_mean_wait_s, b.latest.recent_mean_wait_s);
  EXPECT_EQ(a.latest.recent_runtime_shares, b.latest.recent_runtime_shares);
}

TEST(Episode, ObservationsCarryNothingFromTheFutureOfTheTrace) {
  const Trace base = busy_trace(1);
  const Seconds sample = kT0 + 5 * kDay;
  const auto a = observe(base, sample);
  ASSERT_GT(a.size(), 10u);
  const Seconds cut = a[5].time;  // decisions up to here must not see past it
  // Same past, different future: every job submitted after `cut` changes size and length, and
  // long jobs submitted shortly before it (so still running at `cut` in any schedule) get
  // other true ends, later than `cut`.
  Trace other = base;
  std::size_t changed_running = 0;
  for (Job& j : other.jobs) {
    if (j.submit > cut) {
      j.nodes = 1 + (j.nodes % 3);
      j.end = j.start + (j.end - j.start) / 3;
      j.time_limit = j.time_limit / 2 + kHour;
    } else if (j.submit > cut - 2 * kHour && j.end - j.start > 3 * kHour) {
      j.end = j.start + j.time_limit;  // runs its whole limit instead
      ++changed_running;
    }
  }
  EXPECT_GT(changed_running, 0u);
  const auto b = observe(other, sample);
  ASSERT_GT(b.size(), 5u);
  for (std::size_t k = 0; k <= 5; ++k) expect_same_observation(a[k], b[k]);
  // And the futures really differ, so the test could fail.
  bool differs = false;
  for (std::size_t k = 6; k < std::min(a.size(), b.size()); ++k)
    differs |= FeatureEncoder::encode(a[k]) != FeatureEncoder::encode(b[k]);
  EXPECT_TRUE(differs);
}

TEST(Episode, ReactiveSubmitsJustBeforeThePredecessorEnds) {
  const Trace t = busy_trace(2);
  EpisodeConfig cfg = short_chain();
  EpisodeStarts starts(t, cluster16(), cfg, EpisodeStartMode::kForkReplay);
  ReactivePolicy reactive;
  PolicyDecider d(reactive);
  const auto r = run_episode(starts.at(kT0 + 4 * kDay), d, cfg);
  ASSERT_EQ(r.boundaries.size(), 1u);
  const auto& b = r.boundaries[0];
  EXPECT_EQ(b.predecessor_end - b.predecessor_start, cfg.chain.time_limit);
  EXPECT_EQ(b.successor_submit, b.predecessor_end - cfg.reactive_lead);
  EXPECT_GE(b.successor_start, b.successor_submit);
}

// `mirage tick` from scrontab: the fallback too waits for the first decision instant after it.
// The sample lies 7 minutes off the 10-minute grid, so the predecessor's end does too.
TEST(Episode, ReactiveOnATickSubmitsAtTheFirstDecisionInstantAfterTheFallback) {
  const Trace t = busy_trace(2);
  EpisodeConfig cfg = short_chain();
  cfg.fallback_at_decision = true;
  EpisodeStarts starts(t, cluster16(), cfg, EpisodeStartMode::kForkReplay);
  ReactivePolicy reactive;
  PolicyDecider d(reactive);
  const auto r = run_episode(starts.at(kT0 + 4 * kDay + 7 * kMinute), d, cfg);
  ASSERT_EQ(r.boundaries.size(), 1u);
  const auto& b = r.boundaries[0];
  const Seconds fallback = b.predecessor_end - cfg.reactive_lead;
  ASSERT_NE(fallback % cfg.decision_interval, 0);
  EXPECT_EQ(b.successor_submit % cfg.decision_interval, 0);
  EXPECT_GT(b.successor_submit, fallback);
  EXPECT_LT(b.successor_submit - fallback, cfg.decision_interval);
}

// A chain's segments run as a user of their own, held by the cluster's per-user limits as anyone
// is: with one running job per user, the reactive successor waits for its predecessor's end.
TEST(Episode, ChainSegmentsFaceTheClustersUserLimits) {
  Trace t;
  t.machine_nodes = 16;
  for (int i = 0; i < 4; ++i) {  // a few small jobs, so that the replay has a log to fork
    Job j;
    j.id = i + 1;
    j.submit = kT0 + i * kDay;
    j.start = j.submit;
    j.end = j.submit + kHour;
    j.time_limit = kHour;
    t.jobs.push_back(j);
  }
  EpisodeConfig cfg = short_chain();
  ReactivePolicy reactive;
  PolicyDecider d(reactive);
  for (const int limit : {0, 1}) {
    ClusterSpec c = cluster16();
    c.user_limits.max_running_jobs = limit;
    EpisodeStarts starts(t, c, cfg, EpisodeStartMode::kForkReplay);
    const auto r = run_episode(starts.at(kT0 + kHour), d, cfg);
    ASSERT_EQ(r.boundaries.size(), 1u);
    const auto& b = r.boundaries[0];
    if (limit == 0)
      EXPECT_EQ(b.successor_start, b.successor_submit);  // an idle machine: it starts at once
    else
      EXPECT_EQ(b.successor_start, b.predecessor_end);  // only when its own job has ended
  }
}

// Two-segment 4-node chains of 6 h, sampled every 12 h over days 3 to 6 of busy_trace.
ReactiveWhatIfConfig four_node_what_if() {
  ReactiveWhatIfConfig w;
  w.nodes = 4;
  w.time_limit = 6 * kHour;
  w.from = kT0 + 3 * kDay;
  w.to = kT0 + 6 * kDay;
  w.every = 12 * kHour;
  w.near = kDay;
  return w;
}

// The what-if check compares the successors' simulated waits with the real waits of the jobs of
// their size submitted near them, and with nothing else.
TEST(Episode, ReactiveWhatIfComparesWithRealJobsOfItsSizeNearIt) {
  Trace t = busy_trace(5);
  for (Job& j : t.jobs) j.start = j.submit + (j.nodes == 4 ? 2 * kHour : 0);  // the yardstick
  const ReactiveWhatIfConfig w = four_node_what_if();
  const ReactiveWhatIf r = check_reactive_what_if(t, cluster16(), w);
  EXPECT_EQ(r.successors, 6u);
  // Successors are submitted a segment after each sample, so within [from + 6 h, to + 6 h + wait).
  std::size_t near = 0;
  for (const Job& j : t.jobs)
    near += j.nodes == 4 && j.submit >= w.from + 6 * kHour - w.near &&
            j.submit <= w.to + 6 * kHour + 2 * kDay;
  EXPECT_GT(r.real_jobs, 0u);
  EXPECT_LE(r.real_jobs, near);
  EXPECT_DOUBLE_EQ(r.real_mean_wait_s, 2.0 * kHour);
  EXPECT_DOUBLE_EQ(r.real_over_1h, 1.0);
  EXPECT_DOUBLE_EQ(r.ratio, r.sim_mean_wait_s / (2.0 * kHour));
}

// Each successor is held against the real jobs near it, every successor weighing the same: a
// crowd of quick starts near three successors does not outweigh the one long wait near the other
// three, as pooling the whole span would let it.
TEST(Episode, ReactiveWhatIfWeighsEverySuccessorTheSameHoweverManyRealJobsAreNearIt) {
  Trace t;
  t.machine_nodes = 16;
  auto add = [&](Seconds submit, Seconds wait) {
    Job j;
    j.id = static_cast<JobId>(t.jobs.size() + 1);
    j.nodes = 4;
    j.submit = submit;
    j.time_limit = 6 * kHour;
    j.start = submit + wait;
    j.end = j.start + kMinute;
    t.jobs.push_back(j);
  };
  for (int k = 0; k < 30; ++k) add(kT0 + 3 * kDay + 12 * kHour, 0);  // near 3.25, 3.75, 4.25 d
  add(kT0 + 5 * kDay + 12 * kHour, 10 * kHour);                      // near 4.75, 5.25, 5.75 d
  add(kT0 + 10 * kDay, 0);  // the log goes on past every successor's allowance
  t.jobs.back().nodes = 1;
  // Successors a segment after each sample: about 3.25, 3.75, ... 5.75 days.
  const ReactiveWhatIf r = check_reactive_what_if(t, cluster16(), four_node_what_if());
  EXPECT_EQ(r.successors, 6u);
  EXPECT_EQ(r.compared, 6u);
  EXPECT_EQ(r.real_jobs, 31u);
  EXPECT_DOUBLE_EQ(r.real_mean_wait_s, 5.0 * kHour);  // pooled: 10 h / 31
  EXPECT_DOUBLE_EQ(r.real_over_1h, 0.5);
  // Half the weight on the quick starts, half on the long wait: the median between them, as an
  // even number of simulated waits has its median between the two middle ones.
  EXPECT_DOUBLE_EQ(r.real_median_wait_s, 5.0 * kHour);
  // Without the lone long wait, the three successors near it have nothing to be held against.
  t.jobs.erase(t.jobs.begin() + 30);
  const ReactiveWhatIf crowd = check_reactive_what_if(t, cluster16(), four_node_what_if());
  EXPECT_EQ(crowd.compared, 3u);
  EXPECT_EQ(crowd.real_jobs, 30u);
  EXPECT_DOUBLE_EQ(crowd.real_mean_wait_s, 0.0);
}

TEST(Episode, ReactiveWhatIfIsAlsoHeldAgainstTheLoneJobsOfItsSize) {
  Trace t = busy_trace(5);
  // The 4-node jobs are one user's: one submitted while another of theirs still pended waited
  // 10 h, a lone one 1 h (a per-user queue the log does not name).
  Seconds pending_until = 0;
  for (Job& j : t.jobs) {
    if (j.nodes != 4) continue;
    j.user = "a";
    j.start = j.submit + (pending_until > j.submit ? 10 * kHour : kHour);
    pending_until = std::max(pending_until, j.start);
  }
  const ReactiveWhatIfConfig w = four_node_what_if();
  const ReactiveWhatIf r = check_reactive_what_if(t, cluster16(), w);
  ASSERT_GT(r.lone_jobs, 0u);
  EXPECT_LT(r.lone_jobs, r.real_jobs);
  EXPECT_DOUBLE_EQ(r.lone_mean_wait_s, 1.0 * kHour);
  EXPECT_GT(r.real_mean_wait_s, r.lone_mean_wait_s);
  EXPECT_DOUBLE_EQ(r.lone_ratio, r.sim_mean_wait_s / kHour);
  for (Job& j : t.jobs) j.user.clear();  // a log naming no users: no lone yardstick
  EXPECT_EQ(check_reactive_what_if(t, cluster16(), w).lone_jobs, 0u);
}

// The log's own jobs of the what-if's size, chained: each followed, a minute before its replayed
// end, by a successor of its user, whom the cluster's limits hold as they hold anyone.
TEST(Episode, ReactiveWhatIfAlsoChainsTheLogsOwnJobsOfItsSizeAsTheirUsers) {
  Trace t;
  t.machine_nodes = 16;
  for (int k = 0; k < 6; ++k) {
    Job j;
    j.id = static_cast<JobId>(k + 1);
    j.user = "u" + std::to_string(k);
    j.nodes = 4;
    j.submit = kT0 + k * 12 * kHour;
    j.time_limit = 6 * kHour;
    j.start = j.submit + kHour;  // the yardstick: every real 4-node job waited an hour
    j.end = j.start + j.time_limit;
    t.jobs.push_back(j);
  }
  Job last;  // the log goes on long enough for every successor
  last.id = 7;
  last.submit = last.start = kT0 + 10 * kDay;
  last.end = last.start + kHour;
  last.time_limit = kHour;
  t.jobs.push_back(last);
  ClusterSpec c = cluster16();
  c.user_limits.max_running_jobs = 1;  // a user's successor waits for their predecessor's end
  ReactiveWhatIfConfig w = four_node_what_if();
  w.from = kT0;
  w.to = kT0 + 3 * kDay;
  const ReactiveWhatIf r = check_reactive_what_if(t, c, w);
  EXPECT_EQ(r.log_successors, 6u);
  EXPECT_EQ(r.log_compared, 6u);
  EXPECT_EQ(r.log_truncated, 0u);
  EXPECT_DOUBLE_EQ(r.log_sim_mean_wait_s, 60.0);  // the minute before its predecessor's end
  EXPECT_EQ(r.log_real_jobs, 6u);
  EXPECT_DOUBLE_EQ(r.log_real_mean_wait_s, 1.0 * kHour);
  EXPECT_DOUBLE_EQ(r.log_ratio, 60.0 / kHour);
  // Held only against real jobs within an hour of them, the successors (about 6 h after each
  // real job's submission and 6 h before the next) have none: all left out of both sides.
  ReactiveWhatIfConfig close = w;
  close.near = kHour;
  const ReactiveWhatIf none_near = check_reactive_what_if(t, c, close);
  EXPECT_EQ(none_near.log_successors, 6u);
  EXPECT_EQ(none_near.log_compared, 0u);
  EXPECT_EQ(none_near.log_real_jobs, 0u);
  w.log_predecessors = 4;  // evenly spread over the six
  EXPECT_EQ(check_reactive_what_if(t, c, w).log_successors, 4u);
  c.user_limits.max_running_jobs = 0;  // nobody's limit: they start as they arrive
  EXPECT_DOUBLE_EQ(check_reactive_what_if(t, c, w).log_sim_mean_wait_s, 0.0);
  w.log_predecessors = 0;
  EXPECT_EQ(check_reactive_what_if(t, c, w).log_successors, 0u);
  // Without the later job the log ends with the sixth 4-node job: only the first is far enough
  // from that end for its successor's whole allowance (6 h + 2 days); the rest are left out,
  // not counted at the cut.
  t.jobs.pop_back();
  w.log_predecessors = 200;
  const ReactiveWhatIf cut = check_reactive_what_if(t, c, w);
  EXPECT_EQ(cut.log_successors, 1u);
  EXPECT_EQ(cut.log_dropped, 5u);
  EXPECT_EQ(cut.log_truncated, 0u);
}

TEST(Episode, OracleIsNeverWorseThanTheBaselinesOnAnySample) {
  const Trace t = busy_trace(3);
  EvalConfig c;
  c.cluster = cluster16();
  c.episode = short_chain(6);
  c.from = kT0 + 3 * kDay;
  c.to = kT0 + 10 * kDay;
  c.every = 8 * kHour;
  c.policies = {"reactive", "average", "oracle"};
  c.threads = 2;
  const EvalReport r = evaluate(t, c);
  ASSERT_GE(r.sample_times.size(), 15u);
  const auto& oracle = r.outcomes.at("oracle");
  for (const std::string name : {"reactive", "average"}) {
    const auto& other = r.outcomes.at(name);
    for (std::size_t i = 0; i < oracle.size(); ++i)
      EXPECT_LE(std::llabs(oracle[i].episode.boundaries[0].gap()),
                std::llabs(other[i].episode.boundaries[0].gap()))
          << name << " sample " << i;
  }
  EXPECT_LE(r.metrics.at("oracle").overall.mean_interruption_h,
            r.metrics.at("reactive").overall.mean_interruption_h);
  // Reactive interrupts somewhere on this busy machine, so the comparison means something.
  EXPECT_GT(r.metrics.at("reactive").overall.mean_interruption_h, 0.0);
}

TEST(Episode, OracleKeepsWhatEveryInstantItTriedWouldHaveGiven) {
  const Trace t = busy_trace(3);
  EvalConfig c;
  c.cluster = cluster16();
  c.episode = short_chain(6);
  c.episode.chain.segments = 3;
  c.from = kT0 + 3 * kDay;
  c.to = kT0 + 8 * kDay;
  c.every = 8 * kHour;
  c.policies = {"average", "oracle"};
  const EvalReport r = evaluate(t, c);
  const auto& oracle = r.outcomes.at("oracle");
  const auto& average = r.outcomes.at("average");
  std::size_t matched = 0;
  for (std::size_t i = 0; i < oracle.size(); ++i) {
    EXPECT_TRUE(average[i].what_ifs.empty());
    const auto& boundaries = oracle[i].episode.boundaries;
    for (std::size_t k = 0; k < boundaries.size(); ++k) {
      std::vector<WhatIfSubmission> tried;
      for (const auto& w : oracle[i].what_ifs)
        if (w.boundary == static_cast<int>(k)) tried.push_back(w);
      ASSERT_FALSE(tried.empty()) << "sample " << i << " boundary " << k;
      // What it did is what its instant promised, and nothing it tried came closer.
      bool found = false;
      for (const auto& w : tried) {
        EXPECT_GE(std::llabs(w.gap), std::llabs(boundaries[k].gap()));
        if (w.submit == boundaries[k].successor_submit) {
          EXPECT_EQ(w.gap, boundaries[k].gap());
          found = true;
        }
      }
      EXPECT_TRUE(found) << "sample " << i << " boundary " << k;
    }
    // A policy that submitted at one of those instants got what the fork said (first boundary:
    // the later ones follow different predecessors).
    const BoundaryOutcome& a = average[i].episode.boundaries[0];
    for (const auto& w : oracle[i].what_ifs)
      if (w.boundary == 0 && w.submit == a.successor_submit) {
        EXPECT_EQ(w.gap, a.gap()) << "sample " << i;
        ++matched;
      }
  }
  EXPECT_GT(matched, oracle.size() / 2);
}

TEST(Episode, SamplesPastTheHorizonAreDroppedAndCounted) {
  const Trace t = busy_trace(4, 10);
  EvalConfig c;
  c.cluster = cluster16();
  c.episode = short_chain();
  c.from = kT0 + 5 * kDay;
  c.to = kT0 + 10 * kDay;  // the log ends at day 10; the horizon is 6 h + 1 day
  c.every = 12 * kHour;
  c.policies = {"reactive"};
  const EvalReport r = evaluate(t, c);
  EXPECT_EQ(r.sample_times.size() + r.dropped_past_horizon, 10u);
  EXPECT_GE(r.dropped_past_horizon, 2u);
  const Seconds last_submit = t.jobs.back().submit;
  for (Seconds s : r.sample_times) EXPECT_LE(s + c.episode.horizon(), last_submit);
}

TEST(Episode, ProbeFeaturesAreExactlyWhatThePolicySaw) {
  const Trace t = busy_trace(5);
  EpisodeConfig cfg = short_chain();
  const Seconds sample = kT0 + 6 * kDay;
  EpisodeStarts s1(t, cluster16(), cfg, EpisodeStartMode::kForkReplay);
  const ProbedEpisode probed = probe_episode(s1.at(sample), cfg);
  EpisodeStarts s2(t, cluster16(), cfg, EpisodeStartMode::kForkReplay);
  RecordingDecider rec;
  run_episode(s2.at(sample), rec, cfg);
  ASSERT_EQ(probed.decisions.size(), rec.seen.size());
  ASSERT_GT(probed.decisions.size(), 30u);
  for (std::size_t k = 0; k < rec.seen.size(); ++k)
    ASSERT_EQ(probed.features(k), FeatureEncoder::encode(rec.seen[k])) << k;
}

TEST(Episode, ProbeGapsMatchEpisodesThatSubmitAtThatInstant) {
  const Trace t = busy_trace(6);
  EpisodeConfig cfg = short_chain(8);
  const Seconds sample = kT0 + 7 * kDay;
  EpisodeStarts starts(t, cluster16(), cfg, EpisodeStartMode::kForkReplay);
  const EpisodeStart start = starts.at(sample);
  const ProbedEpisode probed =
      probe_episode(EpisodeStart{start.sample_time, start.sim.fork(), start.history, start.deadline,
                                 start.next_snapshot},
                    cfg);
  for (std::size_t k : {std::size_t{0}, probed.decisions.size() / 2, probed.decisions.size() - 1}) {
    FixedDecider d(probed.decisions[k].time);
    const auto r = run_episode(EpisodeStart{start.sample_time, start.sim.fork(), start.history,
                                            start.deadline, start.next_snapshot},
                               d, cfg);
    EXPECT_EQ(r.boundaries[0].successor_submit, probed.decisions[k].time);
    EXPECT_EQ(r.boundaries[0].gap(), probed.decisions[k].gap_if_submitted) << k;
  }
}

TEST(Episode, HandoffStopsThePredecessorSoonAfterTheSuccessorStarts) {
  const Trace t = busy_trace(7);
  EpisodeConfig cfg = short_chain(2);
  cfg.chain.overlap = OverlapMode::kHandoff;
  cfg.chain.segments = 3;
  EpisodeStarts starts(t, cluster16(), cfg, EpisodeStartMode::kForkReplay);
  FixedDecider early(0);  // submit at the first decision instant: the successor starts early
  const auto r = run_episode(starts.at(kT0 + 3 * kDay), early, cfg);
  ASSERT_EQ(r.boundaries.size(), 2u);
  for (const auto& b : r.boundaries) {
    EXPECT_LE(b.overlap(cfg.chain), cfg.chain.handoff_grace);
    if (b.gap() < 0) {
      EXPECT_EQ(b.overlap(cfg.chain), cfg.chain.handoff_grace);
    }
  }
}

TEST(Episode, LongerChainsReportOneOutcomePerBoundaryInOrder) {
  const Trace t = busy_trace(8);
  EpisodeConfig cfg = short_chain();
  cfg.chain.segments = 4;
  EpisodeStarts starts(t, cluster16(), cfg, EpisodeStartMode::kForkReplay);
  ReactivePolicy reactive;
  PolicyDecider d(reactive);
  const auto r = run_episode(starts.at(kT0 + 2 * kDay), d, cfg);
  ASSERT_EQ(r.boundaries.size(), 3u);
  for (std::size_t k = 1; k < r.boundaries.size(); ++k) {
    EXPECT_EQ(r.boundaries[k].predecessor_start, r.boundaries[k - 1].successor_start);
    EXPECT_EQ(r.boundaries[k].predecessor_submit, r.boundaries[k - 1].successor_submit);
  }
}

TEST(Episode, GpuGranularChainsRun) {
  Trace t = busy_trace(9);
  for (Job& j : t.jobs) j.gpus_per_node = 1 + static_cast<int>(j.id % 4);
  ClusterSpec c = cluster16();
  c.gpus_per_node = 4;
  c.allocation = AllocationMode::kGpuGranular;
  EpisodeConfig cfg = short_chain(2);
  cfg.chain.gpus_per_node = 2;
  EpisodeStarts starts(t, c, cfg, EpisodeStartMode::kForkReplay);
  ReactivePolicy reactive;
  PolicyDecider d(reactive);
  const auto r = run_episode(starts.at(kT0 + 4 * kDay), d, cfg);
  ASSERT_EQ(r.boundaries.size(), 1u);
  EXPECT_FALSE(r.truncated());
}

TEST(Episode, PeerModeStartsFromAnEmptyClusterAfterTwoDaysOfWarmUp) {
  const Trace t = busy_trace(10);
  EpisodeConfig cfg = short_chain();
  EpisodeStarts starts(t, cluster16(), cfg, EpisodeStartMode::kPeerWarmup);
  const EpisodeStart s = starts.at(kT0 + 2 * kDay);
  EXPECT_EQ(s.sim.now(), kT0 + 4 * kDay);
  EXPECT_EQ(s.sim.trace_size() > 0, true);
  for (SimJobIndex j = 0; j < s.sim.trace_size(); ++j) {
    EXPECT_GE(s.sim.job(j).submit, kT0 + 2 * kDay);
    EXPECT_LT(s.sim.job(j).submit, kT0 + 7 * kDay);
  }
}

// ---- metrics and baselines -----------------------------------------------------------------

SampleOutcome outcome(Seconds gap, const std::string& bucket) {
  SampleOutcome o;
  o.bucket = bucket;
  BoundaryOutcome b;
  b.predecessor_end = 100000;
  b.successor_start = b.predecessor_end + gap;
  o.episode.boundaries.push_back(b);
  return o;
}

TEST(Metrics, InterruptionOverlapZeroShareAndReductionByBucket) {
  ChainSpec chain;
  const std::vector<SampleOutcome> reactive = {outcome(3600, "low"), outcome(7200, "low"),
                                               outcome(10 * 3600, "medium")};
  const std::vector<SampleOutcome> policy = {outcome(0, "low"), outcome(-1800, "low"),
                                             outcome(5 * 3600, "medium")};
  const PolicyMetrics m = compute_metrics(policy, reactive, chain);
  EXPECT_EQ(m.overall.samples, 3u);
  EXPECT_DOUBLE_EQ(m.overall.mean_interruption_h, 5.0 / 3);
  EXPECT_DOUBLE_EQ(m.overall.zero_interruption_share, 2.0 / 3);
  EXPECT_DOUBLE_EQ(m.overall.mean_overlap_h, 0.5 / 3);
  EXPECT_DOUBLE_EQ(m.overall.interruption_reduction, 1 - (5.0 / 3) / (13.0 / 3));
  ASSERT_EQ(m.buckets.count("low"), 1u);
  EXPECT_EQ(m.buckets.at("low").samples, 2u);
  EXPECT_DOUBLE_EQ(m.buckets.at("low").interruption_reduction, 1.0);
  EXPECT_DOUBLE_EQ(m.buckets.at("medium").mean_interruption_h, 5.0);
  EXPECT_EQ(m.buckets.count("heavy"), 0u);
}

// A boundary the log's end or --max-wait cut off is no outcome: neither an interruption of the
// cut-off's length nor an overlap; it is counted apart with its lower bound.
TEST(Metrics, CensoredBoundariesAreCountedApartNotScored) {
  ChainSpec chain;
  SampleOutcome cut = outcome(-3 * 3600, "low");  // "started" 3 h early: the clamped cut-off
  cut.episode.boundaries[0].truncated = true;
  SampleOutcome waiting = outcome(20 * 3600, "low");
  waiting.episode.boundaries[0].truncated = true;
  const std::vector<SampleOutcome> reactive = {outcome(3600, "low"), cut, waiting};
  const std::vector<SampleOutcome> policy = reactive;
  const PolicyMetrics m = compute_metrics(policy, reactive, chain);
  EXPECT_EQ(m.overall.samples, 3u);
  EXPECT_EQ(m.overall.boundaries, 1u);
  EXPECT_EQ(m.overall.censored, 2u);
  EXPECT_DOUBLE_EQ(m.overall.mean_interruption_h, 1.0);
  EXPECT_DOUBLE_EQ(m.overall.mean_overlap_h, 0.0) << "a censored boundary scored as overlap";
  EXPECT_DOUBLE_EQ(m.overall.zero_interruption_share, 0.0);
  EXPECT_DOUBLE_EQ(m.overall.censored_min_interruption_h, 10.0);  // (0 + 20) / 2: at least
  EXPECT_DOUBLE_EQ(m.overall.interruption_reduction, 0.0);
}

// On a log that ends while chains still wait: no row starts before it was submitted, censored or
// not, and reactive never overlaps by more than its lead.
TEST(Evaluation, NoSuccessorStartsBeforeItsSubmissionAndReactiveOverlapsAtMostItsLead) {
  const Trace t = busy_trace(4, 10);
  EvalConfig c;
  c.cluster = cluster16();
  c.episode = short_chain();
  c.episode.chain.segments = 3;
  c.episode.max_wait = 3 * kHour;  // short: many successors are still waiting at the cut-off
  c.from = kT0 + 2 * kDay;
  c.to = kT0 + 9 * kDay;
  c.every = 2 * kHour;
  c.policies = {"reactive", "average", "static@2h"};
  c.threads = 2;
  const EvalReport r = evaluate(t, c);
  std::size_t censored = 0;
  for (const auto& [name, outs] : r.outcomes)
    for (const auto& o : outs)
      for (const auto& b : o.episode.boundaries) {
        censored += b.truncated;
        EXPECT_GE(b.successor_start, b.successor_submit) << name << " at " << o.sample_time;
        EXPECT_GE(b.predecessor_start, b.predecessor_submit) << name << " at " << o.sample_time;
        if (name == "reactive" && !b.truncated) {
          EXPECT_LE(b.overlap(c.episode.chain), c.episode.reactive_lead) << o.sample_time;
        }
      }
  EXPECT_GT(r.sample_times.size(), 0u);
  EXPECT_GT(censored, 0u) << "the log's end should cut some chains off";
}

TEST(Metrics, LoadBucketsFollowReactivesInterruption) {
  EXPECT_EQ(load_bucket(0), "low");
  EXPECT_EQ(load_bucket(2 * kHour), "low");
  EXPECT_EQ(load_bucket(2 * kHour + 1), "medium");
  EXPECT_EQ(load_bucket(12 * kHour), "medium");
  EXPECT_EQ(load_bucket(12 * kHour + 1), "heavy");
}

TEST(Baselines, AverageSubmitsOnceRemainingTimeFallsBelowTheRecentMeanWait) {
  AveragePolicy average;
  Observation obs;
  obs.latest.recent_starts = 100;
  obs.latest.recent_mean_wait_s = 3 * kHour;
  obs.campaign.predecessor_running = true;
  obs.campaign.predecessor_limit = 48 * kHour;
  obs.campaign.predecessor_run = 44 * kHour;
  EXPECT_EQ(average.decide(obs).action, Action::kWait);
  obs.campaign.predecessor_run = 45 * kHour;
  const Decision go = average.decide(obs);
  EXPECT_EQ(go.action, Action::kSubmitNow);
  EXPECT_EQ(go.reason, "predecessor ends in 3h; the last 100 jobs to start waited 3h on average");
  obs.campaign.predecessor_running = false;
  EXPECT_EQ(average.decide(obs).action, Action::kWait);
}

TEST(Baselines, ForecastSubmitsOnceTheSuccessorsPlannedStartReachesThePredecessorsEnd) {
  ForecastPolicy forecast;
  Observation obs;
  obs.latest.total_nodes = 4;
  // The machine is full for 6 h more (the predecessor is not in this queue view).
  obs.latest.running = {{10 * kHour, 4, 0, 0, 4 * kHour}};
  obs.campaign.predecessor_running = true;
  obs.campaign.predecessor_limit = 48 * kHour;
  obs.campaign.successor_nodes = 2;
  obs.campaign.successor_limit = 48 * kHour;
  obs.campaign.predecessor_run = 41 * kHour;  // 7 h left > 6 h planned wait
  EXPECT_EQ(forecast.decide(obs).action, Action::kWait);
  obs.campaign.predecessor_run = 42 * kHour;  // 6 h left
  const Decision go = forecast.decide(obs);
  EXPECT_EQ(go.action, Action::kSubmitNow);
  EXPECT_EQ(go.reason, "predecessor ends in 6h; 2-node wait estimated 6h");
  obs.campaign.predecessor_running = false;
  EXPECT_EQ(forecast.decide(obs).action, Action::kWait);
  // Recently ended jobs ran half of their limits: the running job has 1 h more, not 6 h, so
  // forecast-recent waits until the predecessor has 1 h left.
  obs.campaign.predecessor_running = true;
  obs.latest.recent_runtime_shares.assign(RuntimeGuess::kMinRecentEnds, 0.5f);
  ForecastPolicy recent(RuntimeGuess::recent_ends());
  EXPECT_EQ(recent.decide(obs).action, Action::kWait);
  obs.campaign.predecessor_run = 47 * kHour;
  EXPECT_EQ(recent.decide(obs).action, Action::kSubmitNow);
}

// Slurm's own estimate of the successor's wait against the predecessor's remaining time, less
// the lead; without an estimate it leaves the boundary to the fallback.
TEST(Baselines, SlurmEstimateSubmitsOnceSlurmsEstimatedWaitReachesThePredecessorsEnd) {
  SlurmEstimatePolicy estimate;
  Observation obs;
  obs.campaign.predecessor_running = true;
  obs.campaign.predecessor_limit = 48 * kHour;
  obs.campaign.predecessor_run = 40 * kHour;  // 8 h left
  obs.campaign.successor_nodes = 8;
  EXPECT_TRUE(estimate.reads_slurm_estimate());
  EXPECT_EQ(estimate.decide(obs).action, Action::kWait);  // no estimate
  obs.campaign.slurm_estimated_wait = 7 * kHour;
  EXPECT_EQ(estimate.decide(obs).action, Action::kWait);
  obs.campaign.slurm_estimated_wait = 8 * kHour;
  const Decision go = estimate.decide(obs);
  EXPECT_EQ(go.action, Action::kSubmitNow);
  EXPECT_EQ(go.reason, "predecessor ends in 8h; Slurm estimates a 8-node wait of 8h");
  obs.campaign.slurm_estimated_wait = 7 * kHour;
  EXPECT_EQ(SlurmEstimatePolicy(kHour).decide(obs).action, Action::kSubmitNow);
  EXPECT_EQ(make_policy("slurm-estimate@2h")->name(), "slurm-estimate@2h");
  EXPECT_FALSE(ForecastPolicy().reads_slurm_estimate());
}

// In simulation a policy that reads Slurm's estimate gets the simulator's will-run plan of the
// successor, at the decision instant; others get none (it costs a plan of the queue).
TEST(Episode, APolicyReadingSlurmsEstimateGetsTheSimulatorsPlan) {
  struct Recording final : Policy {
    bool reads = true;
    Seconds seen = -2;
    std::string name() const override { return "recording"; }
    Decision decide(const Observation& obs) override {
      seen = obs.campaign.slurm_estimated_wait;
      return Decision::wait();
    }
    bool reads_slurm_estimate() const override { return reads; }
  };
  const Trace t = busy_trace(2);
  Simulator sim(cluster16(), std::make_shared<const std::vector<SimJobSpec>>(to_sim_jobs(t.jobs)));
  sim.run_until(kT0 + 4 * kDay);
  Observation obs;
  obs.campaign = CampaignView::running_chain(8, 0, 12 * kHour, 0, kHour);
  Recording policy;
  PolicyDecider decider(policy);
  decider.submit_now(sim, obs, 0, 0);
  SimJobSpec successor;
  successor.nodes = 8;
  successor.time_limit = 12 * kHour;
  successor.user = kCampaignUser;
  const Seconds planned = sim.planned_start(successor);
  ASSERT_NE(planned, kUnknownTime);
  EXPECT_EQ(policy.seen, planned - sim.now());
  policy.reads = false;
  decider.submit_now(sim, obs, 0, 0);
  EXPECT_EQ(policy.seen, -1);
}

TEST(Baselines, ReactiveAlwaysWaitsForTheFallback) {
  ReactivePolicy reactive;
  Observation obs;
  obs.campaign.predecessor_running = true;
  obs.campaign.predecessor_limit = 100;
  obs.campaign.predecessor_run = 99;
  EXPECT_EQ(reactive.decide(obs).action, Action::kWait);
}

// ---- one risk knob per policy: a lead --------------------------------------------------------

Observation running_predecessor(Seconds run) {
  Observation obs;
  obs.latest.recent_starts = 100;
  obs.latest.recent_mean_wait_s = 3 * kHour;
  obs.campaign.predecessor_running = true;
  obs.campaign.predecessor_limit = 48 * kHour;
  obs.campaign.predecessor_run = run;
  return obs;
}

TEST(RiskKnob, AverageWithALeadSubmitsThatMuchEarlierAndANegativeOneLater) {
  // `average` submits at 3 h left (the mean wait); with 2 h of lead at 5 h, with -1 h at 2 h.
  for (const auto& [name, left] : std::vector<std::pair<std::string, Seconds>>{
           {"average", 3 * kHour}, {"average@2h", 5 * kHour}, {"average@-1h", 2 * kHour}}) {
    auto p = make_policy(name);
    EXPECT_EQ(p->name(), name);
    EXPECT_EQ(p->decide(running_predecessor(48 * kHour - left - 60)).action, Action::kWait) << name;
    EXPECT_EQ(p->decide(running_predecessor(48 * kHour - left)).action, Action::kSubmitNow) << name;
  }
}

TEST(RiskKnob, StaticSubmitsAtAFixedLeadWhateverTheQueue) {
  auto p = make_policy("static@6h");
  EXPECT_EQ(p->name(), "static@6h");
  Observation obs = running_predecessor(42 * kHour - 60);
  obs.latest.recent_mean_wait_s = 40 * kHour;  // the queue says nothing to it
  EXPECT_EQ(p->decide(obs).action, Action::kWait);
  obs.campaign.predecessor_run = 42 * kHour;
  const Decision go = p->decide(obs);
  EXPECT_EQ(go.action, Action::kSubmitNow);
  EXPECT_EQ(go.reason, "predecessor ends in 6h, within the lead of 6h");
  // Alone, an hour's lead; at 0, the fallback's own instant: reactive.
  EXPECT_EQ(make_policy("static")->name(), "static@1h");
  EXPECT_EQ(make_policy("static@0")->decide(running_predecessor(48 * kHour - 60)).action,
            Action::kWait);
}

TEST(RiskKnob, ForecastsLeadIsAMarginOnThePlannedWait) {
  Observation obs = running_predecessor(0);
  obs.latest.total_nodes = 4;
  obs.latest.running = {{10 * kHour, 4, 0, 0, 4 * kHour}};  // full for 6 h more
  obs.campaign.successor_nodes = 2;
  obs.campaign.successor_limit = 48 * kHour;
  auto p = make_policy("forecast@1h");
  EXPECT_EQ(p->name(), "forecast@1h");
  obs.campaign.predecessor_run = 41 * kHour - 60;  // 7 h and a minute left > 6 h + 1 h
  EXPECT_EQ(p->decide(obs).action, Action::kWait);
  obs.campaign.predecessor_run = 41 * kHour;
  EXPECT_EQ(p->decide(obs).action, Action::kSubmitNow);
}

TEST(RiskKnob, ALeadOnAPolicyWithoutOneOrOutOfItsRangeIsRefusedByName) {
  const auto message = [](const std::string& name) {
    try {
      make_policy(name);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("reactive@1h").find("'reactive' has no risk knob"), std::string::npos);
  EXPECT_NE(message("static@-1h").find("the lead of 'static@-1h' is out of range (0 to 7d)"),
            std::string::npos);
  EXPECT_NE(message("average@9d").find("out of range (-2d to 7d)"), std::string::npos);
  EXPECT_FALSE(is_known_policy("average@9d"));
  EXPECT_TRUE(is_known_policy("forecast-recent@-2h"));
  // A model file's path may hold an '@': only a lead after the last one is read as a knob.
  EXPECT_EQ(parse_policy_spec("runs/a@b.mirage-model").family, "runs/a@b.mirage-model");
  EXPECT_EQ(parse_policy_spec("average@90m").lead, std::optional<Seconds>(90 * kMinute));
}

TEST(Evaluation, APolicyThatSubmitsExactlyAsAnEarlierOneIsNamedAsSuch) {
  const Trace t = busy_trace(4);
  EvalConfig c;
  c.cluster = cluster16();
  c.episode = short_chain();
  c.from = kT0 + 2 * kDay;
  c.to = kT0 + 6 * kDay;
  c.every = 6 * kHour;
  // static at no lead is the fallback's instant: reactive's, at every boundary.
  c.policies = {"average", "static@0", "average@0"};
  c.threads = 2;
  const EvalReport r = evaluate(t, c);
  EXPECT_EQ(r.decides_as.at("static@0"), "reactive");
  EXPECT_EQ(r.decides_as.at("average@0"), "average");
  EXPECT_EQ(r.decides_as.count("average"), 0u);
  EXPECT_EQ(r.decides_as.count("reactive"), 0u);
}

TEST(RiskKnob, EachFamilyWithAKnobSweepsFromLeastToMostOverlap) {
  for (const std::string family :
       {"average", "forecast", "forecast-recent", "slurm-estimate", "static"}) {
    const auto names = risk_sweep(family);
    ASSERT_GE(names.size(), 5u) << family;
    std::vector<Seconds> leads;
    for (const auto& n : names) {
      const PolicySpec spec = parse_policy_spec(n);
      EXPECT_EQ(spec.family, family);
      ASSERT_TRUE(spec.lead) << n;
      leads.push_back(*spec.lead);
      EXPECT_TRUE(is_known_policy(n)) << n;
    }
    EXPECT_TRUE(std::is_sorted(leads.begin(), leads.end())) << family;
  }
  EXPECT_TRUE(risk_sweep("reactive").empty());
  // A model's decision threshold, from high (late) to low (early); a lead is not one.
  const auto model = risk_sweep("agent.mirage-model");
  ASSERT_GE(model.size(), 5u);
  EXPECT_EQ(parse_policy_spec(model.front()).threshold, std::optional<double>(4.0));
  EXPECT_EQ(parse_policy_spec(model.back()).threshold, std::optional<double>(-1.0));
  EXPECT_EQ(parse_policy_spec("agent.mirage-model@-0.5").threshold, std::optional<double>(-0.5));
  EXPECT_EQ(parse_policy_spec("agent.mirage-model@2h").family, "agent.mirage-model@2h");
}

TEST(PolicyRegistry, CreatesBaselinesByNameAndNamesTheKnownOnesOnError) {
  EXPECT_EQ(make_policy("reactive")->name(), "reactive");
  EXPECT_EQ(make_policy("average")->name(), "average");
  EXPECT_EQ(make_policy("forecast")->name(), "forecast");
  EXPECT_EQ(make_policy("forecast-recent")->name(), "forecast-recent");
  try {
    make_policy("nope");
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "reactive, average, forecast, forecast-recent, slurm-estimate, static, quantile, "
                  "oracle"),
              std::string::npos);
  }
}

// ---- the one encoder -----------------------------------------------------------------------

TEST(FeatureEncoder, NormalisesTimesCountsAndSizes) {
  EXPECT_FLOAT_EQ(FeatureEncoder::time_feature(0), 0.f);
  EXPECT_FLOAT_EQ(FeatureEncoder::time_feature(48 * kHour), 1.f);
  QueueSnapshot q;
  q.total_nodes = 10;
  q.pending = {{kHour, 2, 0, 600}, {2 * kHour, 4, 0, 1200}};
  q.running = {{48 * kHour, 5, 0, 0, 3600}};
  const auto f = FeatureEncoder::encode_snapshot(q);
  EXPECT_FLOAT_EQ(f[0], 0.2f);                                     // 2 pending / 10 nodes
  EXPECT_FLOAT_EQ(f[1], 0.6f);                                     // 6 pending nodes / 10
  EXPECT_FLOAT_EQ(f[2], FeatureEncoder::time_feature(kHour));      // pending limit p0
  EXPECT_FLOAT_EQ(f[6], FeatureEncoder::time_feature(2 * kHour));  // pending limit p100
  EXPECT_FLOAT_EQ(f[12], 0.1f);                                    // 1 running / 10
  EXPECT_FLOAT_EQ(f[13], 0.5f);
  EXPECT_FLOAT_EQ(f[14], 1.f);                                 // running limit 48 h
  EXPECT_FLOAT_EQ(f[28], FeatureEncoder::time_feature(3600));  // running time run p100
}

// The five percentiles are the sorted list's entries at 0, 1/4, 1/2, 3/4 and the end, rounded to
// the nearest place: on lists of every length up to 40, with repeats.
TEST(FeatureEncoder, PercentilesAreTheSortedListsQuarterPoints) {
  std::mt19937 rng(3);
  for (std::size_t n = 1; n <= 40; ++n) {
    QueueSnapshot q;
    q.total_nodes = 10;
    std::vector<Seconds> waits;
    for (std::size_t i = 0; i < n; ++i) {
      waits.push_back(static_cast<Seconds>(rng() % 12) * 1800);
      q.pending.push_back({kHour, 1, 0, waits.back()});
    }
    std::sort(waits.begin(), waits.end());
    const auto f = FeatureEncoder::encode_snapshot(q);
    for (std::size_t k = 0; k <= 4; ++k)
      EXPECT_FLOAT_EQ(f[7 + k], FeatureEncoder::time_feature(waits[((n - 1) * k + 2) / 4]))
          << n << " waits, percentile " << 25 * k;
  }
}

// A policy that reads no window chains exactly as it would with one; its observations carry the
// same queue, and no window.
TEST(Episode, APolicyThatReadsNoWindowDecidesAsWithOne) {
  class WithWindow final : public Policy {
   public:
    std::string name() const override { return "forecast, window kept"; }
    Decision decide(const Observation& obs) override {
      EXPECT_EQ(obs.window.size(),
                static_cast<std::size_t>(FeatureEncoder::kWindow * FeatureEncoder::kPerSnapshot));
      return inner.decide(obs);
    }
    ForecastPolicy inner;
  };
  const Trace t = busy_trace(5);
  EpisodeConfig cfg = short_chain();
  cfg.chain.segments = 3;
  EpisodeStarts starts(t, cluster16(), cfg, EpisodeStartMode::kForkReplay);
  ForecastPolicy plain;
  WithWindow kept;
  ASSERT_FALSE(plain.reads_window());
  ASSERT_TRUE(kept.reads_window());
  for (Seconds sample : {kT0 + 3 * kDay, kT0 + 4 * kDay, kT0 + 5 * kDay}) {
    PolicyDecider a(plain), b(kept);
    const auto ra = run_episode(starts.at(sample), a, cfg);
    const auto rb = run_episode(starts.at(sample), b, cfg);
    ASSERT_EQ(ra.boundaries.size(), rb.boundaries.size());
    ASSERT_FALSE(ra.boundaries.empty());
    for (std::size_t k = 0; k < ra.boundaries.size(); ++k) {
      EXPECT_EQ(ra.boundaries[k].successor_submit, rb.boundaries[k].successor_submit);
      EXPECT_EQ(ra.boundaries[k].successor_start, rb.boundaries[k].successor_start);
    }
  }
  ObservationBuilder without;
  without.add(QueueSnapshot{});
  without.drop_window();
  without.add(QueueSnapshot{});
  const Observation o = without.build(CampaignView{});
  EXPECT_TRUE(o.window.empty());
  EXPECT_EQ(o.window_filled, 2);
}

TEST(FeatureEncoder, ObservationsHaveAFixedSizeAndZeroPadShortHistory) {
  ObservationBuilder b;
  QueueSnapshot q;
  q.total_nodes = 4;
  q.pending = {{kHour, 1, 0, 60}};
  b.add(q);
  const Observation o = b.build(CampaignView{});
  EXPECT_EQ(o.window_filled, 1);
  EXPECT_EQ(o.encoder_version, FeatureEncoder::kVersion);
  const auto x = FeatureEncoder::encode(o);
  ASSERT_EQ(x.size(), static_cast<std::size_t>(FeatureEncoder::kInputSize));
  for (int i = 0; i < (FeatureEncoder::kWindow - 1) * FeatureEncoder::kPerSnapshot; ++i)
    ASSERT_EQ(x[static_cast<std::size_t>(i)], 0.f);
  EXPECT_FLOAT_EQ(x[(FeatureEncoder::kWindow - 1) * FeatureEncoder::kPerSnapshot], 0.25f);
}

}  // namespace
}  // namespace mirage

// Chaining episodes, the oracle and the probes: what a policy sees and what its submission gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>

#include "EpisodeFixtures.h"
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
using test::cluster16;
using test::expect_same_observation;
using test::FixedDecider;
using test::kT0;
using test::observe;
using test::RecordingDecider;
using test::short_chain;

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

// Deciders that share a start (an evaluation's policies) each get what their own episode gives:
// the same boundaries, the same observations, the same what-ifs, whoever submits first.
TEST(Episode, DecidersSharingAStartEachGetWhatTheirOwnEpisodeGives) {
  const Trace t = busy_trace(6);
  EpisodeConfig cfg = short_chain();
  cfg.chain.segments = 3;
  EpisodeStarts starts(t, cluster16(), cfg, EpisodeStartMode::kForkReplay);
  std::size_t parted_early = 0;
  for (Seconds sample : {kT0 + 3 * kDay, kT0 + 4 * kDay, kT0 + 5 * kDay}) {
    ReactivePolicy reactive;
    AveragePolicy average;
    ForecastPolicy forecast;
    // Deciders of each kind, twice: once together, once alone.
    auto make = [&](std::vector<std::unique_ptr<Decider>>& out, RecordingDecider*& recording,
                    OracleDecider*& oracle) {
      out.clear();
      out.push_back(std::make_unique<PolicyDecider>(reactive));
      out.push_back(std::make_unique<PolicyDecider>(average));
      out.push_back(std::make_unique<PolicyDecider>(forecast));
      out.push_back(std::make_unique<FixedDecider>(sample + kHour));  // parts in the first wait
      auto r = std::make_unique<RecordingDecider>();  // reads the window, never submits
      recording = r.get();
      out.push_back(std::move(r));
      auto o = std::make_unique<OracleDecider>(cfg);
      oracle = o.get();
      out.push_back(std::move(o));
    };
    std::vector<std::unique_ptr<Decider>> together, alone;
    RecordingDecider *rec_together = nullptr, *rec_alone = nullptr;
    OracleDecider *oracle_together = nullptr, *oracle_alone = nullptr;
    make(together, rec_together, oracle_together);
    std::vector<Decider*> each;
    for (const auto& d : together) each.push_back(d.get());
    const std::vector<EpisodeResult> shared = run_episodes(starts.at(sample), each, cfg);
    make(alone, rec_alone, oracle_alone);
    ASSERT_EQ(shared.size(), alone.size());
    for (std::size_t i = 0; i < alone.size(); ++i) {
      const EpisodeResult own = run_episode(starts.at(sample), *alone[i], cfg);
      ASSERT_EQ(shared[i].boundaries.size(), own.boundaries.size()) << "decider " << i;
      for (std::size_t k = 0; k < own.boundaries.size(); ++k) {
        const BoundaryOutcome &a = shared[i].boundaries[k], &b = own.boundaries[k];
        EXPECT_EQ(a.predecessor_submit, b.predecessor_submit);
        EXPECT_EQ(a.predecessor_start, b.predecessor_start);
        EXPECT_EQ(a.successor_submit, b.successor_submit) << "decider " << i << " boundary " << k;
        EXPECT_EQ(a.successor_start, b.successor_start) << "decider " << i << " boundary " << k;
        EXPECT_EQ(a.truncated, b.truncated);
      }
    }
    ASSERT_EQ(rec_together->seen.size(), rec_alone->seen.size());
    for (std::size_t k = 0; k < rec_alone->seen.size(); ++k)
      expect_same_observation(rec_together->seen[k], rec_alone->seen[k]);
    ASSERT_EQ(oracle_together->tried().size(), oracle_alone->tried().size());
    for (std::size_t k = 0; k < oracle_alone->tried().size(); ++k)
      EXPECT_EQ(oracle_together->tried()[k].gap, oracle_alone->tried()[k].gap);
    // The fixed decider submitted while the others waited: the replays did part.
    const auto& fixed = shared[3].boundaries;
    const auto& reactive_b = shared[0].boundaries;
    if (!fixed.empty() && !reactive_b.empty() &&
        fixed[0].successor_submit < reactive_b[0].successor_submit)
      ++parted_early;
  }
  EXPECT_GT(parted_early, 0u);
}

// A decider that reads no queue is shown snapshots without its jobs and every figure else as
// one that reads it sees them, and a policy deciding from those figures chains the same.
TEST(Episode, ADeciderThatReadsNoQueueSeesTheSameFiguresWithoutTheJobs) {
  class Recording final : public Decider {
   public:
    explicit Recording(bool reads_queue) : reads_queue_(reads_queue) {}
    std::vector<Observation> seen;
    bool submit_now(const Simulator&, const Observation& obs, SimJobIndex, Seconds) override {
      seen.push_back(obs);
      return average_.decide(obs).action == Action::kSubmitNow;
    }
    void begin_boundary() override { average_.reset(); }
    bool reads_window() const override { return false; }
    bool reads_queue() const override { return reads_queue_; }

   private:
    bool reads_queue_;
    AveragePolicy average_{2 * kHour};
  };
  const Trace t = busy_trace(7);
  EpisodeConfig cfg = short_chain();
  cfg.chain.segments = 3;
  EpisodeStarts starts(t, cluster16(), cfg, EpisodeStartMode::kForkReplay);
  std::size_t with_jobs = 0;
  for (Seconds sample : {kT0 + 3 * kDay, kT0 + 4 * kDay, kT0 + 5 * kDay}) {
    Recording blind(false), reading(true);
    const auto rb = run_episode(starts.at(sample), blind, cfg);
    const auto rr = run_episode(starts.at(sample), reading, cfg);
    ASSERT_EQ(rb.boundaries.size(), rr.boundaries.size());
    for (std::size_t k = 0; k < rb.boundaries.size(); ++k) {
      EXPECT_EQ(rb.boundaries[k].successor_submit, rr.boundaries[k].successor_submit);
      EXPECT_EQ(rb.boundaries[k].successor_start, rr.boundaries[k].successor_start);
    }
    ASSERT_EQ(blind.seen.size(), reading.seen.size());
    ASSERT_FALSE(blind.seen.empty());
    for (std::size_t i = 0; i < blind.seen.size(); ++i) {
      const QueueSnapshot &b = blind.seen[i].latest, &r = reading.seen[i].latest;
      EXPECT_EQ(b.time, r.time);
      EXPECT_TRUE(b.pending.empty());
      EXPECT_TRUE(b.running.empty());
      with_jobs += r.pending.size() + r.running.size();
      EXPECT_EQ(b.unavailable_nodes, r.unavailable_nodes);
      EXPECT_EQ(b.recent_starts, r.recent_starts);
      EXPECT_EQ(b.recent_mean_wait_s, r.recent_mean_wait_s);
      EXPECT_EQ(b.recent_runtime_shares, r.recent_runtime_shares);
      EXPECT_EQ(b.reservations.size(), r.reservations.size());
      EXPECT_EQ(blind.seen[i].campaign.predecessor_run, reading.seen[i].campaign.predecessor_run);
    }
  }
  EXPECT_GT(with_jobs, 0u);  // the reading decider was shown a queue
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

// Starts that carry no window (for deciders none of which reads one) give the same episodes and
// show every decision the same observation as starts that carry it, less the window: a decision
// reads its episode's own snapshots, and of the start's only their count.
TEST(Episode, StartsWithoutAWindowGiveTheSameEpisodes) {
  const Trace t = busy_trace(3);
  EpisodeConfig cfg = short_chain();
  cfg.chain.segments = 3;
  EpisodeStarts kept(t, cluster16(), cfg, EpisodeStartMode::kForkReplay);
  EpisodeStarts dropped(t, cluster16(), cfg, EpisodeStartMode::kForkReplay);
  dropped.drop_window();
  std::size_t decisions = 0;
  for (Seconds sample : {kT0 + 3 * kDay, kT0 + 3 * kDay + 4 * kHour, kT0 + 5 * kDay}) {
    const EpisodeStart a = kept.at(sample);
    const EpisodeStart b = dropped.at(sample);
    EXPECT_EQ(a.next_snapshot, b.next_snapshot);
    RecordingDecider da, db;
    const auto ra = run_episode(a, da, cfg);
    const auto rb = run_episode(b, db, cfg);
    ASSERT_EQ(ra.boundaries.size(), rb.boundaries.size());
    for (std::size_t k = 0; k < ra.boundaries.size(); ++k) {
      EXPECT_EQ(ra.boundaries[k].successor_submit, rb.boundaries[k].successor_submit);
      EXPECT_EQ(ra.boundaries[k].successor_start, rb.boundaries[k].successor_start);
    }
    ASSERT_EQ(da.seen.size(), db.seen.size());
    for (std::size_t i = 0; i < da.seen.size(); ++i) {
      EXPECT_FALSE(da.seen[i].window.empty());
      EXPECT_TRUE(db.seen[i].window.empty());
      EXPECT_EQ(da.seen[i].window_filled, db.seen[i].window_filled);
      Observation without = da.seen[i];
      without.window.clear();
      expect_same_observation(without, db.seen[i]);
    }
    decisions += da.seen.size();
  }
  EXPECT_GT(decisions, 0u);
}

}  // namespace
}  // namespace mirage

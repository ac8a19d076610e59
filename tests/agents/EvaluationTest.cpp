// The metrics of an evaluation: interruption, overlap, censored boundaries, load buckets, policy
// names.
#include <gtest/gtest.h>

#include <algorithm>
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
using test::kT0;
using test::short_chain;

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

}  // namespace
}  // namespace mirage

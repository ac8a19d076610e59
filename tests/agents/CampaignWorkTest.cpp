// Whole campaigns (eval --work): the account of what a campaign's segments did and cost.
#include <gtest/gtest.h>

#include "mirage/agents/Baselines.h"
#include "mirage/agents/CampaignWork.h"
#include "mirage/agents/Evaluation.h"
#include "support/BusyTrace.h"

namespace mirage {
namespace {

using test::busy_trace;
using test::kT0;

CampaignWork work_of(Seconds work) {
  CampaignWork w;
  w.work = work;
  w.checkpoint_every = 30 * kMinute;
  w.restart_overhead = 10 * kMinute;
  return w;
}

TEST(CampaignWork, SegmentsNeededCountTheRestartOfEverySegmentAfterTheFirst) {
  ChainSpec chain;
  chain.runtime = chain.time_limit = 6 * kHour;
  EXPECT_EQ(work_of(6 * kHour).segments_needed(chain), 1);
  EXPECT_EQ(work_of(12 * kHour).segments_needed(chain), 3);  // 6 h, then 5 h 50 m, then 10 m
  EXPECT_EQ(work_of(11 * kHour + 50 * kMinute).segments_needed(chain), 2);
  EXPECT_EQ(CampaignWork{}.segments_needed(chain), 0);
}

TEST(CampaignLedger, AHandOffKeepsThePredecessorsWorkToItsLastCheckpointAndTheRestIsDoneAgain) {
  CampaignLedger ledger(work_of(10 * kHour), 6 * kHour);
  EXPECT_FALSE(ledger.started(0, std::nullopt));
  // Cut 4 h 35 m in: checkpoints every 30 min kept 4 h 30 m; 5 min are done again.
  ledger.stopped(4 * kHour + 35 * kMinute, true);
  EXPECT_EQ(ledger.outcome().redo, 5 * kMinute);
  // The successor started 5 min before the cut; it works from the cut plus its restart, and
  // 5 h 30 m of work remain: it finishes then.
  const auto finish = ledger.started(4 * kHour + 30 * kMinute, 4 * kHour + 35 * kMinute);
  ASSERT_TRUE(finish);
  EXPECT_EQ(*finish, 4 * kHour + 45 * kMinute + 5 * kHour + 30 * kMinute);
  ledger.finished(*finish);
  const CampaignOutcome& c = ledger.outcome();
  EXPECT_TRUE(c.complete);
  EXPECT_EQ(c.segments, 2);
  EXPECT_EQ(c.restart, 10 * kMinute);
  // Charged: the first segment's 4 h 35 m and the second's 5 h 45 m.
  EXPECT_EQ(c.charged, 4 * kHour + 35 * kMinute + 5 * kHour + 45 * kMinute);
}

TEST(CampaignLedger, WithoutPeriodicCheckpointsTheHandOffItselfSavesTheWork) {
  CampaignWork w = work_of(10 * kHour);
  w.checkpoint_every = 0;
  CampaignLedger ledger(w, 6 * kHour);
  ledger.started(0, std::nullopt);
  ledger.stopped(4 * kHour + 35 * kMinute, true);
  EXPECT_EQ(ledger.outcome().redo, 0);
}

EvalConfig campaign_eval(OverlapMode overlap) {
  EvalConfig c;
  c.cluster.nodes = 16;
  c.episode.chain.nodes = 4;
  c.episode.chain.time_limit = c.episode.chain.runtime = 6 * kHour;
  c.episode.chain.overlap = overlap;
  c.episode.max_wait = kDay;
  c.episode.campaign = work_of(15 * kHour);
  c.from = kT0 + 2 * kDay;
  c.to = kT0 + 8 * kDay;
  c.every = 12 * kHour;
  c.policies = {"reactive", "average", "forecast"};
  c.threads = 2;
  return c;
}

// Whatever the policy and the overlap mode, a segment's allocation is spent on the work, on
// holding nodes beside the other segment, on restarts, or on work done again: nothing else.
TEST(CampaignEval, TheChargedTimeIsTheWorkPlusOverlapRestartsAndRedo) {
  const Trace t = busy_trace(3, 20);
  for (const OverlapMode mode : {OverlapMode::kConcurrent, OverlapMode::kHandoff}) {
    const EvalConfig c = campaign_eval(mode);
    const EvalReport r = evaluate(t, c);
    ASSERT_EQ(r.campaign.size(), 3u);
    std::size_t complete = 0;
    for (const auto& [name, outs] : r.outcomes)
      for (const SampleOutcome& o : outs) {
        ASSERT_TRUE(o.episode.campaign) << name;
        const CampaignOutcome& k = *o.episode.campaign;
        if (!k.complete) continue;
        ++complete;
        EXPECT_EQ(k.charged, c.episode.campaign.work + k.overlap + k.restart + k.redo) << name;
        EXPECT_EQ(k.restart, (k.segments - 1) * c.episode.campaign.restart_overhead) << name;
        EXPECT_EQ(k.segments, static_cast<int>(o.episode.boundaries.size()) + 1) << name;
        // From the first submission: the first wait, the work, the gaps and the restarts.
        EXPECT_GE(k.finish - o.sample_time, c.episode.campaign.work + k.interruption + k.restart)
            << name;
        if (mode == OverlapMode::kConcurrent) {
          EXPECT_EQ(k.redo, 0) << name;
        }
      }
    EXPECT_GT(complete, 10u);
  }
}

// On an empty machine every successor starts as soon as it is submitted: the reactive chain's
// segments overlap by the fallback lead, and each after the first works from its predecessor's
// end plus its restart.
TEST(CampaignEval, OnAnEmptyMachineTheReactiveCampaignEndsAtItsWorkPlusRestartsAfterItsStart) {
  Trace t;
  t.source = "one job";
  t.machine_nodes = 16;
  Job j;
  j.id = 1;
  j.submit = kT0;
  j.nodes = 1;
  j.time_limit = kHour;
  j.start = kT0;
  j.end = kT0 + 60;
  t.jobs.push_back(j);
  Job last = j;
  last.id = 2;
  last.submit = kT0 + 30 * kDay;
  last.start = last.submit;
  last.end = last.submit + 60;
  t.jobs.push_back(last);
  EvalConfig c = campaign_eval(OverlapMode::kConcurrent);
  c.policies = {"reactive"};
  c.to = c.from + 1;
  const EvalReport r = evaluate(t, c);
  ASSERT_EQ(r.sample_times.size(), 1u);
  const SampleOutcome& o = r.outcomes.at("reactive")[0];
  ASSERT_EQ(o.episode.boundaries.size(), 2u);
  const CampaignOutcome& k = *o.episode.campaign;
  ASSERT_TRUE(k.complete);
  const Seconds start = o.episode.boundaries[0].predecessor_start;
  EXPECT_EQ(k.finish, start + c.episode.campaign.work + 2 * c.episode.campaign.restart_overhead);
  EXPECT_EQ(k.overlap, 2 * c.episode.reactive_lead);
  EXPECT_EQ(k.interruption, 0);
  const CampaignMetrics& m = r.campaign.at("reactive");
  EXPECT_EQ(m.compared, 1u);
  EXPECT_EQ(r.gpus_per_segment, 4);  // GPUs per node unknown: its nodes
  EXPECT_FALSE(r.gpus_known);
  EXPECT_DOUBLE_EQ(m.charged_gpu_h, static_cast<double>(k.charged) * 4 / kHour);
  EXPECT_DOUBLE_EQ(m.stretch, m.makespan_h * kHour / static_cast<double>(c.episode.campaign.work));
}

// A campaign the end of the log cuts off does not finish: it is counted, and the policies are
// compared on the start times where all of them finished. (A short max_wait lets start times
// come close to the end; a campaign's successors wait past it all the same.)
TEST(CampaignEval, UnfinishedCampaignsAreCountedAndLeftOutOfTheComparison) {
  const Trace t = busy_trace(3, 20);
  EvalConfig c = campaign_eval(OverlapMode::kConcurrent);
  c.episode.max_wait = 20 * kMinute;
  c.to = kT0 + 20 * kDay;
  c.every = 6 * kHour;
  const EvalReport r = evaluate(t, c);
  std::size_t all_finished = 0;
  for (std::size_t i = 0; i < r.sample_times.size(); ++i) {
    bool every = true;
    for (const auto& [name, outs] : r.outcomes) every = every && outs[i].episode.campaign->complete;
    all_finished += every ? 1 : 0;
  }
  for (const auto& [name, m] : r.campaign) {
    EXPECT_EQ(m.compared, all_finished) << name;
    std::size_t unfinished = 0;
    for (const auto& o : r.outcomes.at(name)) unfinished += o.episode.campaign->complete ? 0 : 1;
    EXPECT_EQ(m.incomplete, unfinished) << name;
  }
  EXPECT_GT(r.campaign.at("reactive").incomplete, 0u);
  EXPECT_LT(all_finished, r.sample_times.size());
}

}  // namespace
}  // namespace mirage

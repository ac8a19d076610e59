// The verdict: the least waited-plus-held-twice a boundary, on the samples every policy finished.
#include <gtest/gtest.h>

#include "mirage/agents/Verdict.h"

namespace mirage {
namespace {

// A sample of one boundary whose successor starts `gap` seconds after the predecessor's end
// (negative: overlap); `cut` censors it.
SampleOutcome sample(Seconds gap, bool cut = false) {
  SampleOutcome o;
  BoundaryOutcome b;
  b.predecessor_end = 100 * kHour;
  b.successor_start = b.predecessor_end + gap;
  b.truncated = cut;
  o.episode.boundaries.push_back(b);
  return o;
}

TEST(Verdict, ChoosesTheLeastWaitedPlusHeldTwiceOnTheSamplesEveryPolicyFinished) {
  EvalReport r;
  r.outcomes["reactive"] = {sample(6 * kHour), sample(2 * kHour), sample(40 * kHour, true)};
  r.outcomes["forecast"] = {sample(-1 * kHour), sample(-1 * kHour), sample(-1 * kHour)};
  r.outcomes["average"] = {sample(3 * kHour), sample(3 * kHour), sample(3 * kHour)};
  r.outcomes["oracle"] = {sample(0), sample(0), sample(0)};  // a bound, never the choice
  const Verdict v = choose_policy(r, ChainSpec{});
  EXPECT_EQ(v.policy, "forecast");
  EXPECT_EQ(v.samples, 2u);  // the third was cut off for reactive
  EXPECT_EQ(v.of, 3u);
  EXPECT_DOUBLE_EQ(v.interruption_h, 0);
  EXPECT_DOUBLE_EQ(v.overlap_h, 1);
  EXPECT_DOUBLE_EQ(v.reactive_interruption_h, 4);
  // What it saves and costs against reactive, and on how few samples the figures stand.
  EXPECT_EQ(
      describe(v, "replay"),
      "verdict (replay): use forecast: it waits 0.00 h a boundary where reactive waits 4.00 h, "
      "and holds 1.00 h twice (reactive 0.00 h), on the 2 of 3 samples every policy "
      "finished (chosen on them, in hindsight)");
}

TEST(Verdict, ReactiveWhenNothingSavesMoreThanItChargesTwice) {
  EvalReport r;
  r.outcomes["reactive"] = {sample(1 * kHour)};
  r.outcomes["forecast"] = {sample(-5 * kHour)};
  EXPECT_EQ(choose_policy(r, ChainSpec{}).policy, "reactive");
}

// eval --work: a campaign that did not do its work is no outcome, however its boundaries went, so
// the verdict judges only the start times where every policy's campaign finished.
TEST(Verdict, AnUnfinishedCampaignIsNoOutcome) {
  const auto campaign = [](Seconds gap, bool complete) {
    SampleOutcome o = sample(gap);
    o.episode.campaign = CampaignOutcome{};
    o.episode.campaign->complete = complete;
    return o;
  };
  EvalReport r;
  r.outcomes["reactive"] = {campaign(6 * kHour, true), campaign(2 * kHour, true)};
  r.outcomes["forecast"] = {campaign(0, false), campaign(-3 * kHour, true)};
  const Verdict v = choose_policy(r, ChainSpec{});
  EXPECT_EQ(v.samples, 1u);  // forecast's first campaign ran out of segments
  EXPECT_EQ(v.policy, "reactive");
  EXPECT_DOUBLE_EQ(v.reactive_interruption_h, 2);
  r.outcomes["forecast"][1].episode.campaign->complete = false;
  EXPECT_TRUE(choose_policy(r, ChainSpec{}).policy.empty());
}

TEST(Verdict, NoneWhereNoSampleFinishedForEveryPolicy) {
  EvalReport r;
  r.outcomes["reactive"] = {sample(1 * kHour, true)};
  r.outcomes["forecast"] = {sample(0)};
  const Verdict v = choose_policy(r, ChainSpec{});
  EXPECT_TRUE(v.policy.empty());
  EXPECT_NE(describe(v, "logged").find("none"), std::string::npos);
}

}  // namespace
}  // namespace mirage

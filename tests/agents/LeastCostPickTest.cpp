// The least-cost pick: equal prices for an hour waited and an hour charged twice, per boundary or
// per campaign, and the window a forward pick is made on.
#include <gtest/gtest.h>

#include "mirage/agents/LeastCostPick.h"

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

CampaignMetrics campaign(double makespan_h, double charged) {
  CampaignMetrics m;
  m.compared = 3;
  m.makespan_h = makespan_h;
  m.charged_gpu_h = charged;
  return m;
}

TEST(LeastCostPick, PerBoundaryPricesAnHourWaitedAsAnHourHeldTwiceOnSamplesEveryPolicyFinished) {
  EvalReport r;
  r.outcomes["reactive"] = {sample(6 * kHour), sample(2 * kHour), sample(40 * kHour, true)};
  r.outcomes["forecast@2h"] = {sample(-1 * kHour), sample(-1 * kHour), sample(-30 * kHour)};
  r.outcomes["average"] = {sample(3 * kHour), sample(1 * kHour), sample(0)};
  r.outcomes["oracle"] = {sample(0), sample(0), sample(0)};  // a bound, never picked
  const auto costs = point_costs(r, ChainSpec{}, 0);
  ASSERT_EQ(costs.size(), 3u);
  // The third sample, cut off for reactive, is judged for none: forecast's 30 h there don't count.
  EXPECT_DOUBLE_EQ(find_cost(costs, "forecast@2h")->cost, 1);
  EXPECT_DOUBLE_EQ(find_cost(costs, "reactive")->cost, 4);
  EXPECT_DOUBLE_EQ(find_cost(costs, "average")->first, 2);
  EXPECT_EQ(find_cost(costs, "oracle"), nullptr);
  EXPECT_EQ(least_cost(costs)->policy, "forecast@2h");
}

TEST(LeastCostPick, WholeCampaignsCostTheirLateHoursAndTheirChargeBeyondTheWork) {
  EvalReport r;
  r.gpus_per_segment = 8;
  r.campaign["reactive"] = campaign(380, 2688);     // 44 h late x 8 + 0
  r.campaign["forecast@8h"] = campaign(350, 2760);  // 14 x 8 + 72 = 184
  r.campaign["static@1d"] = campaign(340, 2900);    // 4 x 8 + 212 = 244
  r.campaign["oracle"] = campaign(336, 2688);
  const auto costs = point_costs(r, ChainSpec{}, 336);
  EXPECT_DOUBLE_EQ(find_cost(costs, "reactive")->cost, 352);
  EXPECT_DOUBLE_EQ(find_cost(costs, "forecast@8h")->cost, 184);
  EXPECT_DOUBLE_EQ(find_cost(costs, "static@1d")->second, 2900);
  EXPECT_EQ(least_cost(costs)->policy, "forecast@8h");
}

TEST(LeastCostPick, TiesGoToReactiveThenToTheLeastChargedTwice) {
  EXPECT_EQ(least_cost({{"average@1h", 2, 0, 2}, {"reactive", 2, 2, 0}})->policy, "reactive");
  EXPECT_EQ(least_cost({{"static@4h", 2, 0, 2}, {"forecast@1h", 2, 1, 1}})->policy, "forecast@1h");
  EXPECT_FALSE(least_cost({}).has_value());
}

TEST(LeastCostPick, NothingToPickWhereNoSampleFinishedForEveryPolicy) {
  EvalReport r;
  r.outcomes["reactive"] = {sample(1 * kHour, true)};
  r.outcomes["forecast"] = {sample(0)};
  EXPECT_TRUE(point_costs(r, ChainSpec{}, 0).empty());
  r.gpus_per_segment = 1;
  r.campaign["reactive"].compared = 0;
  EXPECT_TRUE(point_costs(r, ChainSpec{}, 336).empty());
}

// forecast@12h is cut off on every sample: the others are priced without it, and it is named.
TEST(LeastCostPick, APointCutOffOnEverySampleIsLeftOutAndTheRestArePriced) {
  EvalReport r;
  r.outcomes["reactive"] = {sample(6 * kHour), sample(2 * kHour), sample(40 * kHour, true)};
  r.outcomes["average"] = {sample(3 * kHour), sample(1 * kHour), sample(0)};
  r.outcomes["forecast@12h"] = {sample(kHour, true), sample(kHour, true), sample(kHour, true)};
  r.outcomes["oracle"] = {sample(0, true), sample(0, true), sample(0, true)};  // no point
  ASSERT_TRUE(point_costs(r, ChainSpec{}, 0).empty());
  const PricedPoints p = price_points(r, ChainSpec{}, 0);
  EXPECT_EQ(p.left_out, std::vector<std::string>{"forecast@12h"});
  ASSERT_EQ(p.costs.size(), 2u);
  EXPECT_DOUBLE_EQ(find_cost(p.costs, "reactive")->cost, 4) << "on the two both finished";
  EXPECT_EQ(least_cost(p.costs)->policy, "average");

  // Where every point is cut off everywhere nothing is priced, and nothing said left out.
  for (auto& [name, outs] : r.outcomes)
    for (auto& o : outs) o.episode.boundaries.front().truncated = true;
  const PricedPoints none = price_points(r, ChainSpec{}, 0);
  EXPECT_TRUE(none.costs.empty());
  EXPECT_TRUE(none.left_out.empty());
}

TEST(LeastCostPick, ACampaignNeverCompletedIsLeftOutAndTheRestArePricedOnTheirCampaigns) {
  const auto run = [](bool complete, Seconds makespan) {
    SampleOutcome o;
    o.episode.boundaries.emplace_back();
    CampaignOutcome c;
    c.complete = complete;
    c.finish = makespan;  // the sample time is 0
    c.charged = 400 * kHour;
    o.episode.campaign = c;
    return o;
  };
  EvalReport r;
  r.gpus_per_segment = 1;
  r.outcomes["reactive"] = {run(true, 380 * kHour), run(true, 390 * kHour)};
  r.outcomes["forecast@8h"] = {run(false, 0), run(false, 0)};
  r.outcomes["average"] = {run(true, 360 * kHour), run(false, 0)};
  r.campaign = compute_campaign_metrics(r.outcomes, 336 * kHour, 1);
  ASSERT_TRUE(point_costs(r, ChainSpec{}, 336).empty());
  const PricedPoints p = price_points(r, ChainSpec{}, 336);
  EXPECT_EQ(p.left_out, std::vector<std::string>{"forecast@8h"});
  ASSERT_EQ(p.costs.size(), 2u);
  // The first start time, the only one both completed: (360 - 336) + (400 - 336).
  EXPECT_DOUBLE_EQ(find_cost(p.costs, "average")->cost, 24 + 64);
}

TEST(LeastCostPick, ForwardWindowsEpisodesAllEndBeforeTheJudgedWindowBegins) {
  EvalConfig c;
  c.from = 1000 * kDay;
  c.episode.chain.segments = 2;
  c.episode.chain.time_limit = 48 * kHour;
  c.episode.max_wait = 2 * kDay;
  c.logged_window = 3 * kDay;
  const PickWindow replay = forward_pick_window(c, 28 * kDay, false);
  EXPECT_EQ(replay.to, c.from - 4 * kDay);  // one boundary: the limit and the longest wait
  EXPECT_EQ(replay.from, replay.to - 28 * kDay);
  EXPECT_LE(replay.to + c.episode.horizon(), c.from);
  // The logged world reads real jobs up to its window after a submission.
  EXPECT_EQ(forward_pick_window(c, 28 * kDay, true).to, c.from - 7 * kDay);
}

}  // namespace
}  // namespace mirage

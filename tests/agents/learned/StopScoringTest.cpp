// How a rule is scored on validation probes: the overlap cap and its confidence.
#include "LearnedFixtures.h"

namespace mirage::learned {
namespace {

class StopScoringTest : public LearnedTest {};

TEST_F(StopScoringTest, TheOverlapCapIsAveragesOverlapOnValidationAndTheCostObjectiveHasNone) {
  const Trace trace = busy_trace(11, 12);
  TrainConfig c = tiny(AgentKind::kDqn, path("capped.mirage-model"), 2, 10);
  c.hp.max_epochs = 1;
  c.hp.val_blocks = 2;
  const TrainSummary capped = train_agent(trace, c);
  ASSERT_TRUE(capped.overlap_cap.has_value());
  EXPECT_DOUBLE_EQ(*capped.overlap_cap, capped.average.mean_overlap_h);
  EXPECT_LE(capped.agent.mean_overlap_h, *capped.overlap_cap + 1e-9);

  c.hp.objective = Objective::kCost;
  c.out = path("cost.mirage-model");
  EXPECT_FALSE(train_agent(trace, c).overlap_cap.has_value());
}

TEST_F(StopScoringTest, ARuleWithinTheCapOnlyThanksToOneHeavyDayIsRefusedAtHighConfidence) {
  // Ten validation days, one episode each. `average` overlaps 1 h every day. Decision 0 of each
  // episode overlaps 0.9 h every day; decision 1 overlaps nothing on nine days and 9.5 h on the
  // last: 0.95 h in the mean, within the cap, but only while a resample draws the heavy day no
  // more than once (probability 0.9^10 + 10 x 0.1 x 0.9^9 = 0.74).
  ProbeSet data;
  Split split;
  split.blocks = 1;
  for (int d = 0; d < 10; ++d) {
    ProbeSet::Episode e;
    e.sample_time = d * kDay + kHour;
    e.first = data.decisions();
    e.count = 2;
    e.fallback_gap = -kHour;
    e.average_stop = -1;
    data.episodes.push_back(e);
    data.gap.push_back(-9 * kHour / 10);
    data.gap.push_back(d == 9 ? -19 * kHour / 2 : 0);
    data.submit_flags.insert(data.submit_flags.end(), 2, 0);
    split.val.push_back(static_cast<std::size_t>(d));
  }
  const CostModel cost;
  const std::vector<int> steady(10, 0), spiky(10, 1);
  const OverlapCap means = make_overlap_cap(data, split, cost, 0, 1);
  ASSERT_TRUE(means.cap.has_value());
  EXPECT_DOUBLE_EQ(*means.cap, 1.0);
  EXPECT_TRUE(means.holds(data, split.val, steady, cost));
  EXPECT_TRUE(means.holds(data, split.val, spiky, cost));

  const OverlapCap confident = make_overlap_cap(data, split, cost, 0.9, 1);
  EXPECT_EQ(confident.days, 10);
  EXPECT_TRUE(confident.holds(data, split.val, steady, cost));
  EXPECT_FALSE(confident.holds(data, split.val, spiky, cost));
  EXPECT_TRUE(confident.holds(data, split.val, std::vector<int>(10, -1), cost));  // `average`
  // Below that chance, the spiky rule passes again.
  EXPECT_TRUE(make_overlap_cap(data, split, cost, 0.6, 1).holds(data, split.val, spiky, cost));
}

}  // namespace
}  // namespace mirage::learned

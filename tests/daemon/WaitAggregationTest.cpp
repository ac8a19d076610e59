// The live aggregation of a wait model file's quantiles with its binned distribution: the expert
// nearer the recent waits takes a level over, a discount forgets an old lead, and a log's stream
// learns each wait only at its job's start.
#include <gtest/gtest.h>

#include "mirage/daemon/campaigns/WaitAggregation.h"

namespace mirage::daemon {
namespace {

// Every level at `s` seconds.
WaitQuantiles flat(Seconds s) {
  WaitQuantiles w{};
  w.fill(s);
  return w;
}

TEST(WaitAggregation, BeforeAnyWaitEachExpertHasHalfOfEveryLevel) {
  const WaitAggregation a;
  for (const double w : a.model_shares()) EXPECT_DOUBLE_EQ(w, 0.5);
  EXPECT_EQ(a.combine(flat(2 * kHour), flat(4 * kHour)), flat(3 * kHour));
}

TEST(WaitAggregation, TheExpertNearerTheWaitsTakesEveryLevelOver) {
  WaitAggregation a;
  for (int i = 0; i < 50; ++i) a.add(flat(10 * kHour), flat(kHour), kHour);
  for (const double w : a.model_shares()) EXPECT_LT(w, 0.01);
  // At rate 0 the average stays even, whatever the waits.
  WaitAggregation even(0);
  for (int i = 0; i < 50; ++i) even.add(flat(10 * kHour), flat(kHour), kHour);
  for (const double w : even.model_shares()) EXPECT_DOUBLE_EQ(w, 0.5);
}

TEST(WaitAggregation, ADiscountForgetsAnOldLead) {
  // The binned distribution is right for 300 jobs, then the model for 100.
  WaitAggregation forgetting(1, 0.98), remembering(1, 1);
  for (WaitAggregation* a : {&forgetting, &remembering}) {
    for (int i = 0; i < 300; ++i) a->add(flat(10 * kHour), flat(kHour), kHour);
    for (int i = 0; i < 100; ++i) a->add(flat(10 * kHour), flat(kHour), 10 * kHour);
  }
  EXPECT_GT(forgetting.model_shares()[3], 0.99);
  EXPECT_LT(remembering.model_shares()[3], 0.01);
}

TEST(WaitAggregation, TheAggregateNeverDecreasesAcrossLevels) {
  WaitAggregation a;
  // The model is right at the low levels, the binned distribution at the high ones: the shares
  // differ by level, and the two experts cross.
  const WaitQuantiles model{60, 120, 600, 1800, 3600, 7200, 9000};
  const WaitQuantiles binned{0, 0, 0, 0, 100000, 200000, 400000};
  for (int i = 0; i < 200; ++i) a.add(model, binned, i % 2 ? 60 : 300000);
  const WaitQuantiles w = a.combine(model, binned);
  for (std::size_t k = 1; k < w.size(); ++k) EXPECT_LE(w[k - 1], w[k]) << k;
}

TEST(WaitAggregation, ALogsStreamLearnsEachWaitOnlyAtItsJobsStart) {
  // A job an hour, each waiting 5 hours where the model says 10 and the binned distribution 5.
  std::vector<StreamJob> jobs;
  std::vector<std::optional<WaitQuantiles>> binned;
  for (int i = 0; i < 200; ++i) {
    jobs.push_back({i * kHour, i * kHour + 5 * kHour, 1, flat(10 * kHour)});
    binned.push_back(flat(5 * kHour));
  }
  const auto live = recalibrated_aggregated(jobs, binned);
  // The first five jobs are submitted before any start: the even average, uncorrected; the sixth
  // is submitted as the first starts.
  for (std::size_t k = 0; k < 5; ++k) EXPECT_EQ(live[k], flat(7 * kHour + kHour / 2)) << k;
  EXPECT_LT(live[5][3], live[0][3]);
  // Later, the binned distribution has taken over and the recalibration has nothing to correct.
  EXPECT_NEAR(static_cast<double>(live.back()[3]), 5.0 * kHour, 0.05 * kHour);
  // A class without a binned distribution keeps the model's quantiles, recalibrated.
  binned.assign(jobs.size(), std::nullopt);
  const auto model_only = recalibrated_aggregated(jobs, binned);
  EXPECT_EQ(model_only[0], flat(10 * kHour));
  EXPECT_NEAR(static_cast<double>(model_only.back()[3]), 5.0 * kHour, 0.05 * kHour);
}

}  // namespace
}  // namespace mirage::daemon

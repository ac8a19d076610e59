// Capacity steps as the background jobs the replay runs (HiddenWork.h).
#include <gtest/gtest.h>

#include "mirage/simulator/HiddenWork.h"

namespace mirage {
namespace {

// 3 nodes from 0, 5 from 100, 1 from 200, none from 300: the 2 added at 100 end first, then 2 of
// the first 3 (split off), and the last one at 300.
TEST(HiddenWork, EachRiseIsAJobAndEachFallEndsTheLatestBegunFirst) {
  const auto jobs = hidden_work({{0, 3}, {100, 5}, {200, 1}, {300, 0}});
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].submit, 0);
  EXPECT_EQ(jobs[0].nodes, 2);
  EXPECT_EQ(jobs[0].runtime, 200);
  EXPECT_EQ(jobs[1].submit, 0);
  EXPECT_EQ(jobs[1].nodes, 1);
  EXPECT_EQ(jobs[1].runtime, 300);
  EXPECT_EQ(jobs[2].submit, 100);
  EXPECT_EQ(jobs[2].nodes, 2);
  EXPECT_EQ(jobs[2].runtime, 100);
  for (const SimJobSpec& j : jobs) {
    EXPECT_EQ(j.time_limit, j.runtime);  // its end is known to the plan
    EXPECT_EQ(j.user, 0u);               // nobody's: no user limit holds it
  }
}

TEST(HiddenWork, WorkStillHeldAfterTheLastStepIsHeldToTheEnd) {
  const auto jobs = hidden_work({{50, 2}});
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].nodes, 2);
  EXPECT_EQ(jobs[0].runtime, kHiddenWorkOpenEnded);
  EXPECT_TRUE(hidden_work({}).empty());
}

}  // namespace
}  // namespace mirage

// The queue as the log says it was, rebuilt at moments: what a predictor fitted on the log sees.
#include <gtest/gtest.h>

#include "mirage/traces/LoggedQueue.h"

namespace mirage {
namespace {

Job job(JobId id, Seconds submit, Seconds start, Seconds end, Seconds limit = 100) {
  Job j;
  j.id = id;
  j.submit = submit;
  j.start = start;
  j.end = end;
  j.time_limit = limit;
  return j;
}

TEST(LoggedQueue, PendingAndRunningAreWhatTheLogSaysAtEachMoment) {
  std::vector<Job> jobs = {job(1, 0, 10, 100), job(2, 5, 50, 200),
                           job(3, 20, kUnknownTime, kUnknownTime),  // never started: left out
                           job(4, 30, 30, 40, 20)};
  std::vector<QueueSnapshot> seen;
  for_each_logged_queue(jobs, {30, 60}, 16, 4, PriorityParameters::unweighted(),
                        [&](std::size_t i, const QueueSnapshot& q) {
                          EXPECT_EQ(i, seen.size());
                          seen.push_back(q);
                        });
  ASSERT_EQ(seen.size(), 2u);
  // At 30: job 2 pends (25 s so far), job 1 runs; job 4, submitted at that very moment, is not in
  // its own queue.
  const QueueSnapshot& a = seen[0];
  EXPECT_EQ(a.time, 30);
  EXPECT_EQ(a.total_nodes, 16);
  EXPECT_EQ(a.gpus_per_node, 4);
  ASSERT_EQ(a.pending.size(), 1u);
  EXPECT_EQ(a.pending[0].waited, 25);
  ASSERT_EQ(a.running.size(), 1u);
  EXPECT_EQ(a.running[0].waited, 10);
  EXPECT_EQ(a.running[0].run, 20);
  EXPECT_EQ(a.recent_starts, 1);
  EXPECT_DOUBLE_EQ(a.recent_mean_wait_s, 10);
  EXPECT_TRUE(a.recent_runtime_shares.empty());
  // At 60: job 4 came and went (half its limit), job 2 started after 45 s.
  const QueueSnapshot& b = seen[1];
  EXPECT_TRUE(b.pending.empty());
  EXPECT_EQ(b.running.size(), 2u);
  EXPECT_EQ(b.recent_starts, 3);
  EXPECT_DOUBLE_EQ(b.recent_mean_wait_s, (10.0 + 0.0 + 45.0) / 3);
  ASSERT_EQ(b.recent_runtime_shares.size(), 1u);
  EXPECT_FLOAT_EQ(b.recent_runtime_shares[0], 0.5f);
}

// A job may be submitted, start and end in the same second (real logs hold jobs that failed at
// once); it must not stay in the queue after that second.
TEST(LoggedQueue, AJobThatStartsAndEndsInOneSecondLeavesNoTrace) {
  const std::vector<Job> jobs = {job(1, 10, 10, 10), job(2, 12, 15, 15)};
  std::vector<QueueSnapshot> seen;
  for_each_logged_queue(jobs, {20}, 16, 0, PriorityParameters::unweighted(),
                        [&](std::size_t, const QueueSnapshot& q) { seen.push_back(q); });
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0].pending.empty());
  EXPECT_TRUE(seen[0].running.empty());
  EXPECT_EQ(seen[0].recent_starts, 2);
  EXPECT_EQ(seen[0].recent_runtime_shares.size(), 2u);
}

TEST(LoggedQueue, MomentsOutOfOrderAreRefused) {
  EXPECT_THROW(for_each_logged_queue({}, {60, 30}, 16, 0, PriorityParameters::unweighted(),
                                     [](std::size_t, const QueueSnapshot&) {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace mirage

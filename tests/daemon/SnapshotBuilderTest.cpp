// Live job lists into QueueSnapshots, and the recent-start waits across restarts.
#include <gtest/gtest.h>

#include "mirage/daemon/slurm/SnapshotBuilder.h"

namespace mirage::daemon {
namespace {

SlurmJob job(JobId id, SlurmJobState state, Seconds submit, Seconds start, int nodes = 1,
             const char* partition = "gpu") {
  SlurmJob j;
  j.id = id;
  j.state = state;
  j.submit = submit;
  j.start = start;
  j.nodes = nodes;
  j.gpus_per_node = 4;
  j.time_limit = 3600;
  j.partition = partition;
  return j;
}

// What slurmctld reports of each job rides along: a pending job's priority, the age it accrued
// (from accrue_time, not from its submission) and why it waits; a running job's priority.
TEST(SnapshotBuilder, ReportedPrioritiesReasonsAndAccrualAreKept) {
  SnapshotBuilder b("gpu");
  b.set_machine(8, 4);
  SlurmJob waiting = job(1, SlurmJobState::kPending, 100, kUnknownTime);
  waiting.priority = 4200;
  waiting.reason = "Priority";
  waiting.accrue = 150;  // released from a dependency then
  waiting.qos = "long";
  SlurmJob limited = job(2, SlurmJobState::kPending, 100, kUnknownTime);
  limited.priority = 3000;
  limited.reason = "QOSMaxNodePerUserLimit";
  SlurmJob held = job(3, SlurmJobState::kPending, 100, kUnknownTime);
  held.priority = 0;
  held.reason = "JobHeldUser";
  SlurmJob running = job(4, SlurmJobState::kRunning, 50, 80);
  running.priority = 5100;
  SlurmJob unreported = job(5, SlurmJobState::kPending, 120, kUnknownTime);
  const QueueSnapshot q = b.build({waiting, limited, held, running, unreported}, 200);
  ASSERT_EQ(q.pending.size(), 4u);
  EXPECT_EQ(q.pending[0].priority, 4200);
  EXPECT_EQ(q.pending[0].state, PendingState::kEligible);
  EXPECT_EQ(q.pending[0].waited, 100);
  EXPECT_EQ(q.pending[0].accrued, 50);
  EXPECT_EQ(q.pending[0].qos, "long");
  EXPECT_EQ(q.pending[1].state, PendingState::kLimit);
  EXPECT_EQ(q.pending[1].accrued, 0);  // reported, but accruing nothing yet
  EXPECT_EQ(q.pending[2].state, PendingState::kHeld);
  // A source that reports nothing: unknown priority, aged from its submission.
  EXPECT_EQ(q.pending[3].priority, kUnknownPriority);
  EXPECT_EQ(q.pending[3].state, PendingState::kEligible);
  EXPECT_EQ(q.pending[3].accrued, 80);
  ASSERT_EQ(q.running.size(), 1u);
  EXPECT_EQ(q.running[0].priority, 5100);
}

// The node states and the user's limits ride along; the daemon's user's running jobs are marked
// theirs, as the forecast counts them against those limits.
TEST(SnapshotBuilder, UnavailableNodesLimitsAndTheOwnersJobs) {
  SnapshotBuilder b("gpu");
  b.set_machine(8, 4);
  b.set_unavailable_nodes(2);
  b.set_user_limits({0, 4}, {{"long", {0, 16}}});
  b.set_owner(1000);
  b.set_reservations({{150, 300, 4}, {250, 400, 2}});  // the first began by the snapshot
  SlurmJob mine = job(1, SlurmJobState::kRunning, 50, 80);
  mine.user_id = 1000;
  SlurmJob theirs = job(2, SlurmJobState::kRunning, 50, 80);
  theirs.user_id = 1001;
  const QueueSnapshot q = b.build({mine, theirs}, 200);
  EXPECT_EQ(q.unavailable_nodes, 2);
  EXPECT_EQ(q.user_limits.max_running_nodes, 4);
  ASSERT_EQ(q.user_limits_by_qos.size(), 1u);
  EXPECT_EQ(q.user_limits_by_qos[0].second.max_running_nodes, 16);
  ASSERT_EQ(q.reservations.size(), 1u);
  EXPECT_EQ(q.reservations[0].start, 250);
  ASSERT_EQ(q.running.size(), 2u);
  EXPECT_TRUE(q.running[0].own);
  EXPECT_FALSE(q.running[1].own);
}

TEST(SnapshotBuilder, PendingAndRunningOfThePartition) {
  SnapshotBuilder b("gpu");
  b.set_machine(8, 4);
  const std::vector<SlurmJob> jobs = {
      job(1, SlurmJobState::kPending, 100, kUnknownTime, 2),
      job(2, SlurmJobState::kRunning, 50, 80, 3),
      job(3, SlurmJobState::kPending, 100, kUnknownTime, 1, "cpu"),
      job(4, SlurmJobState::kPending, 150, kUnknownTime, 1, "cpu,gpu"),
      job(5, SlurmJobState::kCompleted, 10, 20),
  };
  const QueueSnapshot q = b.build(jobs, 200);
  EXPECT_EQ(q.time, 200);
  EXPECT_EQ(q.total_nodes, 8);
  EXPECT_EQ(q.gpus_per_node, 4);
  ASSERT_EQ(q.pending.size(), 2u);
  EXPECT_EQ(q.pending[0].waited, 100);
  EXPECT_EQ(q.pending[0].nodes, 2);
  EXPECT_EQ(q.pending[1].waited, 50);
  ASSERT_EQ(q.running.size(), 1u);
  EXPECT_EQ(q.running[0].waited, 30);
  EXPECT_EQ(q.running[0].run, 120);
  EXPECT_EQ(q.running[0].time_limit, 3600);
  EXPECT_EQ(q.priority.weight_job_size, 0);  // none known yet: by age alone
  b.set_priority({1000, 500, 3 * kDay, false});
  const QueueSnapshot weighted = b.build(jobs, 200);
  EXPECT_EQ(weighted.priority.weight_age, 1000);
  EXPECT_EQ(weighted.priority.weight_job_size, 500);
  EXPECT_EQ(weighted.priority.max_age, 3 * kDay);
}

TEST(SnapshotBuilder, RecentStartsAreTheLastHundredWaits) {
  SnapshotBuilder b("gpu");
  std::vector<SlurmJob> jobs;
  for (int i = 0; i < 150; ++i)
    jobs.push_back(job(i + 1, SlurmJobState::kRunning, 0, i < 50 ? 10 : 100 + i));
  EXPECT_TRUE(b.observe(jobs));
  EXPECT_EQ(b.recent_count(), 100);
  // The last 100 started are jobs 51..150 (waits 150..249): mean 199.5.
  EXPECT_DOUBLE_EQ(b.recent_mean_wait(), 199.5);
  EXPECT_FALSE(b.observe(jobs));  // nothing new
}

TEST(SnapshotBuilder, ARestartNeitherForgetsNorCountsTwice) {
  SnapshotBuilder b("gpu");
  std::vector<SlurmJob> jobs = {job(1, SlurmJobState::kRunning, 0, 100),
                                job(2, SlurmJobState::kRunning, 0, 300)};
  b.observe(jobs);
  const std::string saved = b.save_recent();
  SnapshotBuilder after("gpu");
  after.restore_recent(saved);
  EXPECT_EQ(after.recent_count(), 2);
  EXPECT_DOUBLE_EQ(after.recent_mean_wait(), 200);
  jobs.push_back(job(3, SlurmJobState::kRunning, 300, 300));
  EXPECT_TRUE(after.observe(jobs));
  EXPECT_EQ(after.recent_count(), 3);
  EXPECT_DOUBLE_EQ(after.recent_mean_wait(), 400.0 / 3);
  after.restore_recent("not json at all");
  EXPECT_EQ(after.recent_count(), 0);
}

TEST(SnapshotBuilder, RecentEndsAreRuntimesAgainstLimitsAndSurviveARestart) {
  SnapshotBuilder b("gpu");
  auto ended = [](JobId id, SlurmJobState state, Seconds start, Seconds end) {
    SlurmJob j = job(id, state, 0, start);
    j.end = end;
    return j;
  };
  std::vector<SlurmJob> jobs = {
      ended(1, SlurmJobState::kCompleted, 100, 1000),  // a quarter of its hour
      ended(2, SlurmJobState::kTimeout, 0, 3700),      // past its limit: 1
      ended(3, SlurmJobState::kCancelled, 500, 500),   // cancelled before it started
      job(4, SlurmJobState::kRunning, 0, 100),
  };
  jobs[1].time_limit = 3600;
  EXPECT_TRUE(b.observe(jobs));
  EXPECT_EQ(b.recent_runtime_shares(), (std::vector<float>{0.25f, 1.f}));  // in order of ends
  EXPECT_EQ(b.build(jobs, 4000).recent_runtime_shares, b.recent_runtime_shares());
  SnapshotBuilder after("gpu");
  after.restore_recent(b.save_recent());
  EXPECT_EQ(after.recent_runtime_shares(), b.recent_runtime_shares());
  EXPECT_FALSE(after.observe(jobs));  // nothing new
  jobs.push_back(ended(5, SlurmJobState::kFailed, 3600, 3600 + 360));
  EXPECT_TRUE(after.observe(jobs));
  EXPECT_EQ(after.recent_runtime_shares(), (std::vector<float>{0.25f, 1.f, 0.1f}));
  // Saved before the ends were kept: the starts alone.
  after.restore_recent(R"({"watermark": 100, "starts": [[4, 100, 100]]})");
  EXPECT_EQ(after.recent_count(), 1);
  EXPECT_TRUE(after.recent_runtime_shares().empty());
}

}  // namespace
}  // namespace mirage::daemon

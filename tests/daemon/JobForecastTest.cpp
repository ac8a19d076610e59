// `mirage forecast`'s plan of one pending job from a job dump (daemon/JobForecast.h).
#include <gtest/gtest.h>

#include "mirage/daemon/slurm/JobForecast.h"

namespace mirage::daemon {
namespace {

constexpr Seconds kNow = 1'700'000'000;

SlurmJob job(JobId id, SlurmJobState state, int nodes, Seconds limit, double priority,
             std::uint32_t user = 2000) {
  SlurmJob j;
  j.id = id;
  j.state = state;
  j.partition = "gpu";
  j.nodes = nodes;
  j.time_limit = limit;
  j.priority = priority;
  j.user_id = user;
  j.submit = kNow - 10 * kMinute;
  if (state == SlurmJobState::kRunning) j.start = kNow - 5 * kMinute;
  if (state == SlurmJobState::kPending) {
    j.reason = "Priority";
    j.accrue = j.submit;
  }
  return j;
}

PartitionInfo partition() {
  PartitionInfo p;
  p.name = "gpu";
  p.total_nodes = 4;
  p.is_default = true;
  p.priority = {1000, 0, kHour, false};  // age alone, by the weights
  return p;
}

// Fair share puts a job submitted later ahead of the probe: the reported priorities see it, the
// weights (age alone) do not.
TEST(JobForecast, ReportedPrioritiesAgainstTheWeightsAlone) {
  SlurmJob younger = job(2, SlurmJobState::kPending, 4, 30 * kMinute, 9000);
  younger.accrue = kNow - kMinute;
  const std::vector<SlurmJob> jobs{job(1, SlurmJobState::kRunning, 4, 15 * kMinute, 100), younger,
                                   job(3, SlurmJobState::kPending, 4, kHour, 500)};
  const auto f = forecast_job(jobs, partition(), 3, kNow, 1000);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->state, PendingState::kEligible);
  EXPECT_EQ(f->accrued, 10 * kMinute);
  EXPECT_EQ(f->reported_start, kNow + 40 * kMinute);             // behind the younger job
  EXPECT_EQ(f->recomputed_start, kNow + 10 * kMinute);           // the older first
  EXPECT_FALSE(forecast_job(jobs, partition(), 1, kNow, 1000));  // running: nothing to forecast
  EXPECT_FALSE(forecast_job(jobs, partition(), 9, kNow, 1000));
}

TEST(JobForecast, AJobHeldByItsUsersLimitWaitsForTheirRunningJob) {
  SlurmJob limited = job(3, SlurmJobState::kPending, 1, kHour, 500, 1000);
  limited.reason = "QOSMaxNodePerUserLimit";
  const std::vector<SlurmJob> jobs{job(1, SlurmJobState::kRunning, 1, 25 * kMinute, 100, 1000),
                                   limited};
  const auto f = forecast_job(jobs, partition(), 3, kNow, 1000);
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->held_by_limit);
  EXPECT_EQ(f->reported_start, kNow + 20 * kMinute);  // three nodes free, but held till then
  SlurmJob held = limited;
  held.reason = "JobHeldUser";
  held.priority = 0;
  const auto h = forecast_job({held}, partition(), 3, kNow, 1000);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->state, PendingState::kHeld);
  EXPECT_EQ(h->reported_start, kUnknownTime);
}

}  // namespace
}  // namespace mirage::daemon

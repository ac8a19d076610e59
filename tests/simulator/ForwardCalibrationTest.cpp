// A calibration carried past the days it was fitted on: what it assumes for the later days.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "mirage/simulator/ForwardCalibration.h"
#include "support/BusyTrace.h"

namespace mirage {
namespace {

TEST(ForwardCalibration, LaterWeeksRepeatTheLastFourFittedWeeksRoomAndForeseeNoDownWindow) {
  const Seconds week = 7 * kDay;
  const Seconds until = 10 * week;
  Calibration c;
  // 12 unavailable until five weeks before the cut, 3 from then, 7 in its last week; a step past
  // the cut (a fitted day the fit should not have seen) is dropped.
  c.unavailable = {{0, 12}, {until - 5 * week, 3}, {until - week, 7}, {until + kDay, 40}};
  c.down = {{kDay, 2 * kDay}, {until - kDay, until + kDay}, {until + 2 * kDay, until + 3 * kDay}};
  carry_past_fit(c, until, until + 6 * week);
  const std::vector<CapacityStep> room = {{0, 12},
                                          {until - 5 * week, 3},
                                          {until - week, 7},
                                          {until, 3},
                                          {until + 3 * week, 7},
                                          {until + 4 * week, 3},
                                          {until + 7 * week - week, 7}};
  ASSERT_EQ(c.unavailable.size(), room.size() - 1);  // the last lies past the horizon
  for (std::size_t i = 0; i + 1 < room.size(); ++i) {
    EXPECT_EQ(c.unavailable[i].from, room[i].from) << i;
    EXPECT_EQ(c.unavailable[i].unavailable_nodes, room[i].unavailable_nodes) << i;
  }
  const std::vector<DownWindow> down = {{kDay, 2 * kDay}, {until - kDay, until}};
  EXPECT_EQ(c.down, down);
}

TEST(ForwardCalibration, IsFittedOnTheEarlierJobsAlone) {
  const Trace t = test::busy_trace(7, 14);
  ClusterSpec spec;
  spec.nodes = t.machine_nodes > 0 ? t.machine_nodes : 16;
  const Seconds until = test::kT0 + 7 * kDay;
  std::vector<Job> before;
  for (const Job& j : t.jobs)
    if (j.submit < until) before.push_back(j);
  const Calibration earlier = infer_calibration(before, spec);
  const Calibration forward = infer_calibration_before(t.jobs, until, spec);
  EXPECT_EQ(forward.user_limits, earlier.user_limits);
  EXPECT_EQ(forward.windows, earlier.windows);
  EXPECT_EQ(forward.congested_windows, earlier.congested_windows);
  for (const CapacityStep& s : forward.unavailable) EXPECT_LE(s.from, until);
  for (const DownWindow& d : forward.down) EXPECT_LE(d.to, until);
}

// A quarter of a 64-node machine busy with jobs that name no user (so no limit is read off
// them), and from a day after `until` on a user's chain of 20 jobs, each submitted 2 h after the
// one before started and started, with room free, as that one ended 8 h in: links that stand out
// from chance, all of them after the cut.
std::vector<Job> links_after(Seconds until) {
  std::vector<Job> jobs = test::busy_trace(5, 21).jobs;
  Seconds start = until + kDay;
  for (JobId i = 0; i < 20; ++i) {
    Job j;
    j.id = 100000 + i;
    j.user = "chain";
    j.nodes = 2;
    j.time_limit = 10 * kHour;
    j.submit = i == 0 ? start : start - 6 * kHour;
    j.start = start;
    j.end = start + 8 * kHour;
    start = j.end;
    jobs.push_back(j);
  }
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const Job& a, const Job& b) { return a.submit < b.submit; });
  return jobs;
}

TEST(ForwardCalibration, KeepsTheFittedMonthsVerdictOnLinksAgainstChance) {
  const Seconds until = test::kT0 + 10 * kDay;
  const std::vector<Job> jobs = links_after(until);
  ClusterSpec spec;
  spec.nodes = 64;
  const Calibration whole = infer_calibration(jobs, spec);
  ASSERT_TRUE(whole.links_told_apart)
      << "the chain stands out in sample: " << whole.describe_links();
  ASSERT_GE(whole.dependencies.size(), 15u) << whole.describe_links();

  std::vector<Job> before;
  for (const Job& j : jobs)
    if (j.submit < until) before.push_back(j);
  const Calibration earlier = infer_calibration(before, spec);
  ASSERT_FALSE(earlier.links_told_apart) << earlier.describe_links();
  const Calibration forward = infer_calibration_before(jobs, until, spec);
  EXPECT_EQ(forward.links_told_apart, earlier.links_told_apart);
  EXPECT_EQ(forward.links_seen, earlier.links_seen);
  EXPECT_EQ(forward.links_by_chance, earlier.links_by_chance);
  EXPECT_TRUE(forward.dependencies.empty())
      << forward.dependencies.size() << " links kept on the judged days' evidence";
}

// Feedback the fit kept is applied to the later jobs, not switched off by the flags' default.
TEST(ForwardCalibration, AppliesTheFittedFeedbackToLaterJobs) {
  const Seconds until = test::kT0 + 10 * kDay;
  std::vector<Job> jobs = links_after(until);
  // Submitted 5 min after the chain's last job ended.
  Job follower =
      *std::find_if(jobs.begin(), jobs.end(), [](const Job& j) { return j.id == 100019; });
  follower.id = 200000;
  follower.submit = follower.start = follower.end + 5 * kMinute;
  follower.end = follower.start + kHour;
  jobs.push_back(follower);
  ClusterSpec spec;
  spec.nodes = 64;
  Calibration c;
  c.feedback = true;
  apply_fitted_dependencies(jobs, spec, CalibrationSettings{}, c);
  EXPECT_TRUE(c.feedback);
  EXPECT_FALSE(c.followers.empty());
  c.feedback = false;
  apply_fitted_dependencies(jobs, spec, CalibrationSettings{}, c);
  EXPECT_TRUE(c.followers.empty());
}

}  // namespace
}  // namespace mirage

// A calibration carried past the days it was fitted on: what it assumes for the later days.
#include <gtest/gtest.h>

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
  const std::vector<CapacityStep> room = {{0, 12},           {until - 5 * week, 3},
                                          {until - week, 7}, {until, 3},
                                          {until + 3 * week, 7}, {until + 4 * week, 3},
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

}  // namespace
}  // namespace mirage

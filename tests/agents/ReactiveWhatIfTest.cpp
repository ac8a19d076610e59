// The reactive what-if check: the successors' simulated waits held against the log's real jobs of
// their size.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "EpisodeFixtures.h"
#include "mirage/agents/Baselines.h"
#include "mirage/agents/Evaluation.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/agents/Probe.h"
#include "mirage/agents/ReactiveWhatIf.h"
#include "mirage/core/Error.h"
#include "support/BusyTrace.h"

namespace mirage {
namespace {

using test::busy_trace;
using test::cluster16;
using test::kT0;

// Two-segment 4-node chains of 6 h, sampled every 12 h over days 3 to 6 of busy_trace.
ReactiveWhatIfConfig four_node_what_if() {
  ReactiveWhatIfConfig w;
  w.nodes = 4;
  w.time_limit = 6 * kHour;
  w.from = kT0 + 3 * kDay;
  w.to = kT0 + 6 * kDay;
  w.every = 12 * kHour;
  w.near = kDay;
  return w;
}

// The what-if check compares the successors' simulated waits with the real waits of the jobs of
// their size submitted near them, and with nothing else.
TEST(ReactiveWhatIf, ComparesWithRealJobsOfItsSizeNearIt) {
  Trace t = busy_trace(5);
  for (Job& j : t.jobs) j.start = j.submit + (j.nodes == 4 ? 2 * kHour : 0);  // the yardstick
  const ReactiveWhatIfConfig w = four_node_what_if();
  const ReactiveWhatIf r = check_reactive_what_if(t, cluster16(), w);
  EXPECT_EQ(r.successors, 6u);
  // Successors are submitted a segment after each sample, so within [from + 6 h, to + 6 h + wait).
  std::size_t near = 0;
  for (const Job& j : t.jobs)
    near += j.nodes == 4 && j.submit >= w.from + 6 * kHour - w.near &&
            j.submit <= w.to + 6 * kHour + 2 * kDay;
  EXPECT_GT(r.real_jobs, 0u);
  EXPECT_LE(r.real_jobs, near);
  EXPECT_DOUBLE_EQ(r.real_mean_wait_s, 2.0 * kHour);
  EXPECT_DOUBLE_EQ(r.real_over_1h, 1.0);
  EXPECT_DOUBLE_EQ(r.ratio, r.sim_mean_wait_s / (2.0 * kHour));
}

// Each successor is held against the real jobs near it, every successor weighing the same: a
// crowd of quick starts near three successors does not outweigh the one long wait near the other
// three, as pooling the whole span would let it.
TEST(ReactiveWhatIf, WeighsEverySuccessorTheSameHoweverManyRealJobsAreNearIt) {
  Trace t;
  t.machine_nodes = 16;
  auto add = [&](Seconds submit, Seconds wait) {
    Job j;
    j.id = static_cast<JobId>(t.jobs.size() + 1);
    j.nodes = 4;
    j.submit = submit;
    j.time_limit = 6 * kHour;
    j.start = submit + wait;
    j.end = j.start + kMinute;
    t.jobs.push_back(j);
  };
  for (int k = 0; k < 30; ++k) add(kT0 + 3 * kDay + 12 * kHour, 0);  // near 3.25, 3.75, 4.25 d
  add(kT0 + 5 * kDay + 12 * kHour, 10 * kHour);                      // near 4.75, 5.25, 5.75 d
  add(kT0 + 10 * kDay, 0);  // the log goes on past every successor's allowance
  t.jobs.back().nodes = 1;
  // Successors a segment after each sample: about 3.25, 3.75, ... 5.75 days.
  const ReactiveWhatIf r = check_reactive_what_if(t, cluster16(), four_node_what_if());
  EXPECT_EQ(r.successors, 6u);
  EXPECT_EQ(r.compared, 6u);
  EXPECT_EQ(r.real_jobs, 31u);
  EXPECT_DOUBLE_EQ(r.real_mean_wait_s, 5.0 * kHour);  // pooled: 10 h / 31
  EXPECT_DOUBLE_EQ(r.real_over_1h, 0.5);
  // Half the weight on the quick starts, half on the long wait: the median between them, as an
  // even number of simulated waits has its median between the two middle ones.
  EXPECT_DOUBLE_EQ(r.real_median_wait_s, 5.0 * kHour);
  // Without the lone long wait, the three successors near it have nothing to be held against.
  t.jobs.erase(t.jobs.begin() + 30);
  const ReactiveWhatIf crowd = check_reactive_what_if(t, cluster16(), four_node_what_if());
  EXPECT_EQ(crowd.compared, 3u);
  EXPECT_EQ(crowd.real_jobs, 30u);
  EXPECT_DOUBLE_EQ(crowd.real_mean_wait_s, 0.0);
}

TEST(ReactiveWhatIf, IsAlsoHeldAgainstTheLoneJobsOfItsSize) {
  Trace t = busy_trace(5);
  // The 4-node jobs are one user's: one submitted while another of theirs still pended waited
  // 10 h, a lone one 1 h (a per-user queue the log does not name).
  Seconds pending_until = 0;
  for (Job& j : t.jobs) {
    if (j.nodes != 4) continue;
    j.user = "a";
    j.start = j.submit + (pending_until > j.submit ? 10 * kHour : kHour);
    pending_until = std::max(pending_until, j.start);
  }
  const ReactiveWhatIfConfig w = four_node_what_if();
  const ReactiveWhatIf r = check_reactive_what_if(t, cluster16(), w);
  ASSERT_GT(r.lone_jobs, 0u);
  EXPECT_LT(r.lone_jobs, r.real_jobs);
  EXPECT_DOUBLE_EQ(r.lone_mean_wait_s, 1.0 * kHour);
  EXPECT_GT(r.real_mean_wait_s, r.lone_mean_wait_s);
  EXPECT_DOUBLE_EQ(r.lone_ratio, r.sim_mean_wait_s / kHour);
  for (Job& j : t.jobs) j.user.clear();  // a log naming no users: no lone yardstick
  EXPECT_EQ(check_reactive_what_if(t, cluster16(), w).lone_jobs, 0u);
}

// The log's own jobs of the what-if's size, chained: each followed, a minute before its replayed
// end, by a successor of its user, whom the cluster's limits hold as they hold anyone.
TEST(ReactiveWhatIf, AlsoChainsTheLogsOwnJobsOfItsSizeAsTheirUsers) {
  Trace t;
  t.machine_nodes = 16;
  for (int k = 0; k < 6; ++k) {
    Job j;
    j.id = static_cast<JobId>(k + 1);
    j.user = "u" + std::to_string(k);
    j.nodes = 4;
    j.submit = kT0 + k * 12 * kHour;
    j.time_limit = 6 * kHour;
    j.start = j.submit + kHour;  // the yardstick: every real 4-node job waited an hour
    j.end = j.start + j.time_limit;
    t.jobs.push_back(j);
  }
  Job last;  // the log goes on long enough for every successor
  last.id = 7;
  last.submit = last.start = kT0 + 10 * kDay;
  last.end = last.start + kHour;
  last.time_limit = kHour;
  t.jobs.push_back(last);
  ClusterSpec c = cluster16();
  c.user_limits.max_running_jobs = 1;  // a user's successor waits for their predecessor's end
  ReactiveWhatIfConfig w = four_node_what_if();
  w.from = kT0;
  w.to = kT0 + 3 * kDay;
  const ReactiveWhatIf r = check_reactive_what_if(t, c, w);
  EXPECT_EQ(r.log_successors, 6u);
  EXPECT_EQ(r.log_compared, 6u);
  EXPECT_EQ(r.log_truncated, 0u);
  EXPECT_DOUBLE_EQ(r.log_sim_mean_wait_s, 60.0);  // the minute before its predecessor's end
  EXPECT_EQ(r.log_real_jobs, 6u);
  EXPECT_DOUBLE_EQ(r.log_real_mean_wait_s, 1.0 * kHour);
  EXPECT_DOUBLE_EQ(r.log_ratio, 60.0 / kHour);
  // Held only against real jobs within an hour of them, the successors (about 6 h after each
  // real job's submission and 6 h before the next) have none: all left out of both sides.
  ReactiveWhatIfConfig close = w;
  close.near = kHour;
  const ReactiveWhatIf none_near = check_reactive_what_if(t, c, close);
  EXPECT_EQ(none_near.log_successors, 6u);
  EXPECT_EQ(none_near.log_compared, 0u);
  EXPECT_EQ(none_near.log_real_jobs, 0u);
  w.log_predecessors = 4;  // evenly spread over the six
  EXPECT_EQ(check_reactive_what_if(t, c, w).log_successors, 4u);
  c.user_limits.max_running_jobs = 0;  // nobody's limit: they start as they arrive
  EXPECT_DOUBLE_EQ(check_reactive_what_if(t, c, w).log_sim_mean_wait_s, 0.0);
  w.log_predecessors = 0;
  EXPECT_EQ(check_reactive_what_if(t, c, w).log_successors, 0u);
  // Without the later job the log ends with the sixth 4-node job: only the first is far enough
  // from that end for its successor's whole allowance (6 h + 2 days); the rest are left out,
  // not counted at the cut.
  t.jobs.pop_back();
  w.log_predecessors = 200;
  const ReactiveWhatIf cut = check_reactive_what_if(t, c, w);
  EXPECT_EQ(cut.log_successors, 1u);
  EXPECT_EQ(cut.log_dropped, 5u);
  EXPECT_EQ(cut.log_truncated, 0u);
}

}  // namespace
}  // namespace mirage

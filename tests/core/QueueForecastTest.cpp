// The queue forecast behind the planned-wait features (core/src/QueueForecast.cpp): each test
// pins one rule of the plan.
#include <gtest/gtest.h>

#include "mirage/core/FeatureEncoder.h"
#include "mirage/core/QueueForecast.h"

namespace mirage {
namespace {

// A 10-node machine; views are {limit, nodes, gpus_per_node, waited(, run)}.
QueueSnapshot machine(int nodes = 10) {
  QueueSnapshot q;
  q.total_nodes = nodes;
  return q;
}

TEST(QueueForecast, AnIdleMachineStartsAJobAtOnce) {
  const PlannedStart p = QueueForecast::plan(machine(), 4, 0, 2 * kHour);
  EXPECT_EQ(p.wait, 0);
  EXPECT_EQ(p.wait_running, 0);
}

TEST(QueueForecast, RunningJobsHoldTheirNodesUntilTheirLimits) {
  QueueSnapshot q = machine();
  q.running = {{10 * kHour, 6, 0, 0, 4 * kHour},  // ends in 6 h
               {5 * kHour, 4, 0, 0, 3 * kHour}};  // ends in 2 h
  EXPECT_EQ(QueueForecast::plan(q, 4, 0, kHour).wait, 2 * kHour);
  EXPECT_EQ(QueueForecast::plan(q, 5, 0, kHour).wait, 6 * kHour);
}

TEST(QueueForecast, PendingJobsAheadTakeTheirTurnOldestFirst) {
  QueueSnapshot q = machine();
  q.running = {{4 * kHour, 10, 0, 0, 2 * kHour}};  // the whole machine for 2 h more
  // The oldest takes all 10 nodes for 3 h from 2 h on; the younger one runs after it.
  q.pending = {{kHour, 10, 0, 10 * kMinute}, {3 * kHour, 10, 0, 5 * kHour}};
  const PlannedStart p = QueueForecast::plan(q, 2, 0, kHour);
  EXPECT_EQ(p.wait, 6 * kHour);  // 2 h running + 3 h + 1 h
  EXPECT_EQ(p.wait_running, 2 * kHour);
}

TEST(QueueForecast, PendingJobsTheNewJobOutranksDoNotDelayIt) {
  QueueSnapshot q = machine();
  q.running = {{4 * kHour, 10, 0, 0, 2 * kHour}};  // the whole machine for 2 h more
  q.pending = {{10 * kHour, 5, 0, 30 * kMinute}};
  // By age alone (no weights) it goes first: 5 nodes for 10 h from 2 h on.
  EXPECT_EQ(QueueForecast::plan(q, 6, 0, kHour).wait, 12 * kHour);
  // Weighted as slurm.conf says, with an hour of age worth 100 and a node 100, it has 550 and
  // a new 6-node job 600: it is planned after the new job, which cannot be delayed by it.
  q.priority = {1000, 1000, 10 * kHour, false};
  EXPECT_EQ(QueueForecast::plan(q, 6, 0, kHour).wait, 2 * kHour);
  q.pending[0].accrued = kHour;  // 600: a tie, and the queued job goes first
  EXPECT_EQ(QueueForecast::plan(q, 6, 0, kHour).wait, 12 * kHour);
  q.priority.favor_small = true;  // now the smaller queued job outranks the new one
  q.pending[0].accrued = 0;
  EXPECT_EQ(QueueForecast::plan(q, 6, 0, kHour).wait, 12 * kHour);
}

TEST(QueueForecast, ARuntimeSharePlansOtherJobsShorter) {
  QueueSnapshot q = machine();
  q.running = {{10 * kHour, 10, 0, 0, 2 * kHour}};  // 8 h left of its limit
  q.pending = {{4 * kHour, 10, 0, kHour}};
  EXPECT_EQ(QueueForecast::plan(q, 2, 0, kHour).wait, 12 * kHour);
  EXPECT_EQ(QueueForecast::plan(q, 2, 0, kHour, RuntimeGuess::share_of_limits(0.5)).wait,
            6 * kHour);  // 4 h + 2 h
  EXPECT_EQ(QueueForecast::plan(q, 2, 0, kHour, RuntimeGuess::share_of_limits(0.5)).wait_running,
            4 * kHour);
  EXPECT_EQ(QueueForecast::plan(q, 2, 0, kHour, RuntimeGuess::share_of_limits(0.25)).wait,
            3 * kHour);
}

TEST(QueueForecast, RecentEndsPlanJobsAsThoseThatOutlivedThem) {
  QueueSnapshot q = machine();
  q.running = {{8 * kHour, 10, 0, 0, 4 * kHour}};  // half its limit run
  q.pending = {{4 * kHour, 10, 0, kHour}};
  // Half the recent jobs ran a quarter of their limits, half three quarters.
  q.recent_runtime_shares.assign(10, 0.25f);
  q.recent_runtime_shares.resize(20, 0.75f);
  const RuntimeGuess recent = RuntimeGuess::recent_ends();
  // Running: as those that outlived half their limits, to 3/4 of 8 h (2 h more); pending: as
  // all of them, half of 4 h.
  EXPECT_EQ(QueueForecast::plan(q, 2, 0, kHour, recent).wait_running, 2 * kHour);
  EXPECT_EQ(QueueForecast::plan(q, 2, 0, kHour, recent).wait, 4 * kHour);
  // A job that outlived every recent one runs to its limit.
  q.running[0].run = 7 * kHour;
  EXPECT_EQ(QueueForecast::plan(q, 2, 0, kHour, recent).wait_running, kHour);
  // Too few ends to go by: the limits.
  q.recent_runtime_shares.resize(RuntimeGuess::kMinRecentEnds - 1);
  q.running[0].run = 4 * kHour;
  EXPECT_EQ(QueueForecast::plan(q, 2, 0, kHour, recent).wait, 8 * kHour);
}

TEST(QueueForecast, ASmallJobBackfillsBeforeALaterReservation) {
  QueueSnapshot q = machine();
  q.running = {{10 * kHour, 6, 0, 0, 0}};                      // 6 nodes for 10 h: 4 free now
  q.pending = {{kHour, 10, 0, kHour}};                         // reserved from 10 h on
  EXPECT_EQ(QueueForecast::plan(q, 4, 0, 9 * kHour).wait, 0);  // fits before it
  EXPECT_EQ(QueueForecast::plan(q, 4, 0, 11 * kHour).wait, 11 * kHour);  // must wait past it
}

TEST(QueueForecast, ALaterSubmissionSeesTheWindowThatAReservationCloses) {
  QueueSnapshot q = machine();
  q.running = {{10 * kHour, 6, 0, 0, 0}};  // 6 nodes for 10 h: 4 free now
  q.pending = {{kHour, 10, 0, kHour}};     // reserved from 10 h on, for 1 h
  // Submitted now, a 9-hour job fits before the reservation; submitted in 2 h it no longer
  // does and waits until the reservation ends at 11 h: 9 h after its submission.
  const PlannedStart p = QueueForecast::plan(q, 4, 0, 9 * kHour, RuntimeGuess::limits(), 2 * kHour);
  EXPECT_EQ(p.wait, 0);
  EXPECT_EQ(p.wait_after_delay, 9 * kHour);
  // Within the window the later submission starts at once; without a delay it is `wait`.
  EXPECT_EQ(QueueForecast::plan(q, 4, 0, 9 * kHour, RuntimeGuess::limits(), 30 * kMinute)
                .wait_after_delay,
            0);
  EXPECT_EQ(QueueForecast::plan(q, 4, 0, 11 * kHour).wait_after_delay, 11 * kHour);
}

TEST(QueueForecast, ALaterSubmissionFindsTheNodesTakenBySmallJobsItWouldHaveOutranked) {
  QueueSnapshot q = machine();
  q.priority = PriorityParameters{};       // age and job size weighted
  q.running = {{20 * kHour, 6, 0, 0, 0}};  // 6 nodes for 20 h: 4 free now
  // Four 1-node jobs of 20 h that a 4-node job outranks on size.
  q.pending.assign(4, PendingJobView{20 * kHour, 1, 0, kHour});
  // Submitted now it goes first and starts at once; submitted in 2 h it finds the small jobs
  // started on the 4 free nodes meanwhile and waits for the 20 h ones to end.
  const PlannedStart p = QueueForecast::plan(q, 4, 0, 9 * kHour, RuntimeGuess::limits(), 2 * kHour);
  EXPECT_EQ(p.wait, 0);
  EXPECT_EQ(p.wait_after_delay, 18 * kHour);
}

TEST(QueueForecast, JobsThatAgePastALaterSubmissionGoAheadOfIt) {
  QueueSnapshot q = machine();
  q.priority = PriorityParameters{};
  q.running = {{4 * kHour, 10, 0, 0, 0}};  // the whole machine for 4 h
  // A 5-node job outranks a 6-node successor now only if it has waited long enough: 1000 x
  // (6 - 5) / 10 = 100 points of size are 100/1000 of a week of age, 16.8 h.
  q.pending = {{10 * kHour, 5, 0, 0}};
  // Now: the successor goes first, at 4 h. Submitted in 3 h (before the machine frees, so the
  // 5-node job cannot have started), the 5-node job has aged 3 h: still behind.
  EXPECT_EQ(QueueForecast::plan(q, 6, 0, kHour).wait, 4 * kHour);
  EXPECT_EQ(QueueForecast::plan(q, 6, 0, kHour, RuntimeGuess::limits(), 3 * kHour).wait_after_delay,
            kHour);
  // Had it accrued 15 h of age already, 3 h more put it ahead: the successor waits for its 10 h
  // too.
  q.pending[0].accrued = 15 * kHour;
  EXPECT_EQ(QueueForecast::plan(q, 6, 0, kHour).wait, 4 * kHour);
  EXPECT_EQ(QueueForecast::plan(q, 6, 0, kHour, RuntimeGuess::limits(), 3 * kHour).wait_after_delay,
            11 * kHour);
}

TEST(QueueForecast, AJobLargerThanTheMachineNeverStarts) {
  EXPECT_EQ(QueueForecast::plan(machine(), 11, 0, kHour).wait, QueueForecast::kHorizon);
  // and such a pending job blocks nobody
  QueueSnapshot q = machine();
  q.pending = {{kHour, 40, 0, kDay}};
  EXPECT_EQ(QueueForecast::plan(q, 10, 0, kHour).wait, 0);
}

TEST(QueueForecast, GpuMachinesCountGpusSoJobsShareNodes) {
  QueueSnapshot q = machine(2);
  q.gpus_per_node = 4;
  q.running = {{8 * kHour, 2, 2, 0, 0}};  // half of each node's GPUs for 8 h
  EXPECT_EQ(QueueForecast::plan(q, 2, 2, kHour).wait, 0);
  EXPECT_EQ(QueueForecast::plan(q, 2, 4, kHour).wait, 8 * kHour);
  EXPECT_EQ(QueueForecast::plan(q, 1, 0, kHour).wait, 0);  // a whole node: 4 GPUs are free
}

// A pending job as slurmctld reports it: {limit, nodes, reported priority, age accrued}.
PendingJobView reported(Seconds limit, int nodes, double priority, Seconds accrued = 0,
                        PendingState state = PendingState::kEligible) {
  PendingJobView p{limit, nodes, 0, accrued};
  p.priority = priority;
  p.accrued = accrued;
  p.state = state;
  return p;
}

TEST(QueueForecast, ReportedPrioritiesOrderTheQueueNotTheWeightsAlone) {
  QueueSnapshot q = machine();
  q.priority = {1000, 0, 10 * kHour, false};       // age alone, by the weights
  q.running = {{4 * kHour, 10, 0, 0, 2 * kHour}};  // the whole machine for 2 h more
  // The older job has the lower reported priority (its user's fair share is spent): the new
  // job, at 500 on submission, goes ahead of it and behind the younger one.
  q.pending = {reported(10 * kHour, 10, 300, 9 * kHour), reported(3 * kHour, 10, 800, kMinute)};
  EXPECT_EQ(QueueForecast::plan(q, ForecastJob{2, 0, kHour, 500}).wait, 5 * kHour);
  // Recomputed from the weights (nothing reported), the older job (900) goes first and the
  // younger one (2) behind.
  for (PendingJobView& p : q.pending) p.priority = kUnknownPriority;
  EXPECT_EQ(QueueForecast::plan(q, ForecastJob{2, 0, kHour, 500}).wait, 12 * kHour);
}

TEST(QueueForecast, AReportedPriorityGrowsWithAgeUntilPriorityMaxAge) {
  QueueSnapshot q = machine();
  q.priority = {1000, 0, 10 * kHour, false};  // 100 points an hour, for 10 h
  q.running = {{4 * kHour, 10, 0, 0, 0}};     // the whole machine for 4 h
  // 450 now; submitted 1 h from now the new job (500) finds it at 550, ahead of it.
  q.pending = {reported(5 * kHour, 10, 450, 2 * kHour)};
  const ForecastJob next{2, 0, kHour, 500};
  EXPECT_EQ(QueueForecast::plan(q, next).wait, 4 * kHour);
  EXPECT_EQ(QueueForecast::plan(q, next, RuntimeGuess::limits(), kHour).wait_after_delay,
            8 * kHour);
  // Already at PriorityMaxAge: its priority stays 450, behind the new job whenever it comes.
  q.pending[0].accrued = 10 * kHour;
  EXPECT_EQ(QueueForecast::plan(q, next, RuntimeGuess::limits(), kHour).wait_after_delay,
            3 * kHour);
}

TEST(QueueForecast, JobsThatCannotRunAreSetAside) {
  QueueSnapshot q = machine();
  q.running = {{4 * kHour, 10, 0, 0, 2 * kHour}};  // the whole machine for 2 h more
  for (PendingState s : {PendingState::kHeld, PendingState::kDependency, PendingState::kLimit,
                         PendingState::kNotYetEligible, PendingState::kNever})
    q.pending.push_back(reported(20 * kHour, 10, 900, kHour, s));
  EXPECT_EQ(QueueForecast::plan(q, ForecastJob{2, 0, kHour, 100}).wait, 2 * kHour);
  q.pending.push_back(reported(20 * kHour, 10, 900, kHour));  // one that competes
  EXPECT_EQ(QueueForecast::plan(q, ForecastJob{2, 0, kHour, 100}).wait, 22 * kHour);
}

TEST(QueueForecast, DownDrainedAndReservedNodesAreOutOfThePlan) {
  QueueSnapshot q = machine();
  q.running = {{10 * kHour, 4, 0, 0, 0}};
  EXPECT_EQ(QueueForecast::plan(q, 6, 0, kHour).wait, 0);
  q.unavailable_nodes = 3;  // 7 nodes up: 3 free now, 7 once the running job ends
  EXPECT_EQ(QueueForecast::plan(q, 6, 0, kHour).wait, 10 * kHour);
  EXPECT_EQ(QueueForecast::plan(q, 8, 0, kHour).wait, QueueForecast::kHorizon);
}

TEST(QueueForecast, NoJobIsPlannedAcrossAReservationForOthers) {
  QueueSnapshot q = machine();
  q.time = 1000;
  // Six nodes reserved from 2 h to 6 h from now: a 3-hour 6-node job cannot start before it ends,
  // a 4-node one fits beside it, a 1-hour 6-node one fits before it.
  q.reservations = {{1000 + 2 * kHour, 1000 + 6 * kHour, 6}};
  EXPECT_EQ(QueueForecast::plan(q, 6, 0, 3 * kHour).wait, 6 * kHour);
  EXPECT_EQ(QueueForecast::plan(q, 4, 0, 3 * kHour).wait, 0);
  EXPECT_EQ(QueueForecast::plan(q, 6, 0, kHour).wait, 0);
}

TEST(QueueForecast, TheWholeQueueIsPlannedNotAPrefix) {
  QueueSnapshot q = machine(1);
  // 300 one-hour jobs ahead of it on a one-node machine: 300 h, past any bf_max_job_test.
  for (int k = 0; k < 300; ++k) q.pending.push_back(reported(kHour, 1, 1000 - k, kHour));
  EXPECT_EQ(QueueForecast::plan(q, ForecastJob{1, 0, kHour, 1}).wait, 300 * kHour);
}

TEST(QueueForecast, TheSuccessorTakesThePriorityItsPredecessorStartedWith) {
  Observation o;
  o.latest = machine();
  o.latest.priority = {1000, 1000, 10 * kHour, false};
  o.campaign = CampaignView::running_chain(5, 0, 10 * kHour, 2 * kHour, kHour);
  // Started at 2 h of age (200) and 5 of 10 nodes (500), with 150 of fair share and QOS: the
  // successor, of the same size, has 650 on submission.
  o.campaign.predecessor_priority = 850;
  EXPECT_DOUBLE_EQ(QueueForecast::successor(o).priority, 650);
  EXPECT_EQ(QueueForecast::successor(o).held_for, 0);
  o.campaign.predecessor_priority = kUnknownPriority;  // from the weights alone: 500
  EXPECT_DOUBLE_EQ(QueueForecast::successor(o).priority, kUnknownPriority);
}

TEST(QueueForecast, ASuccessorOverItsUsersLimitIsHeldUntilThePredecessorEnds) {
  Observation o;
  o.latest = machine();
  o.latest.running = {{10 * kHour, 5, 0, 0, kHour}};
  o.latest.running[0].own = true;  // the predecessor: 9 h left
  o.campaign = CampaignView::running_chain(5, 0, 10 * kHour, 0, kHour);
  // Room for it now, but the user may run 8 nodes at most: held until the predecessor ends.
  EXPECT_EQ(QueueForecast::plan_successor(o).wait, 0);
  o.latest.user_limits.max_running_nodes = 8;
  EXPECT_EQ(QueueForecast::successor(o).held_for, 9 * kHour);
  const PlannedStart p = QueueForecast::plan_successor(o);
  EXPECT_TRUE(p.held_by_limit);
  EXPECT_EQ(p.wait, 9 * kHour);
  EXPECT_EQ(p.wait_running, 9 * kHour);
  EXPECT_EQ(p.wait_after_delay, 0);  // submitted at the predecessor's end it is not held
  // One running job per user, the same; ten nodes, free.
  o.latest.user_limits = {1, 0};
  EXPECT_TRUE(QueueForecast::plan_successor(o).held_by_limit);
  o.latest.user_limits = {0, 10};
  EXPECT_FALSE(QueueForecast::plan_successor(o).held_by_limit);
  // Submitted under a QOS of its own, that QOS's limits hold it instead.
  o.latest.user_limits = {0, 8};
  o.latest.user_limits_by_qos = {{"long", {0, 16}}};
  o.campaign.qos = "long";
  EXPECT_FALSE(QueueForecast::plan_successor(o).held_by_limit);
  o.campaign.qos = "";
  EXPECT_TRUE(QueueForecast::plan_successor(o).held_by_limit);
  o.latest.user_limits_by_qos.clear();
  // Larger than the limit on its own: it never starts.
  o.latest.user_limits = {0, 4};
  EXPECT_EQ(QueueForecast::plan_successor(o).wait, QueueForecast::kHorizon);
}

TEST(QueueForecast, AHeldSuccessorAccruesAgeWhileItWaits) {
  Observation o;
  o.latest = machine();
  o.latest.priority = {1000, 0, 10 * kHour, false};  // 100 points an hour
  o.latest.user_limits.max_running_jobs = 1;
  o.latest.running = {{10 * kHour, 5, 0, 0, 6 * kHour}};  // the predecessor: 4 h left
  o.latest.running[0].own = true;
  // A 5-node job of 10 h, at 250 now, accrues 400 by the predecessor's end; the successor
  // (0 on submission) accrues 400 too while held: the older job stays ahead and takes the five
  // nodes the predecessor frees, so the successor waits for it.
  o.latest.running.push_back({20 * kHour, 5, 0, 0, 0});  // someone else's, 20 h left
  o.latest.pending = {reported(10 * kHour, 5, 250, 2 * kHour + 30 * kMinute)};
  o.campaign = CampaignView::running_chain(5, 0, 10 * kHour, 0, 6 * kHour);
  o.campaign.predecessor_priority = 0;
  EXPECT_EQ(QueueForecast::plan_successor(o).wait, 14 * kHour);
  // At 300 on submission (more fair share than the queued job's owner) it passes ahead.
  o.campaign.predecessor_priority = 300;
  EXPECT_EQ(QueueForecast::plan_successor(o).wait, 4 * kHour);
}

TEST(FeatureEncoder, CampaignFeaturesSayWhetherALimitHoldsTheSuccessorAndWhatIsDown) {
  Observation o;
  o.latest = machine();
  o.campaign = CampaignView::running_chain(4, 0, 10 * kHour, 0, kHour);
  auto c = FeatureEncoder::encode_campaign(o);
  EXPECT_EQ(c[FeatureEncoder::kSuccessorHeldByLimit], 0.f);
  EXPECT_EQ(c[FeatureEncoder::kUnavailableNodes], 0.f);
  o.latest.user_limits.max_running_nodes = 6;  // the predecessor's 4 and 4 more are over it
  o.latest.unavailable_nodes = 2;
  c = FeatureEncoder::encode_campaign(o);
  EXPECT_EQ(c[FeatureEncoder::kSuccessorHeldByLimit], 1.f);
  EXPECT_FLOAT_EQ(c[FeatureEncoder::kUnavailableNodes], 0.2f);
}

TEST(FeatureEncoder, CampaignFeaturesCarryTheSuccessorsPlannedWaits) {
  Observation o;
  o.latest = machine();
  o.latest.running = {{10 * kHour, 10, 0, 0, 7 * kHour}};  // full for 3 h more
  o.latest.pending = {{2 * kHour, 10, 0, kHour}};
  o.campaign.successor_nodes = 2;
  o.campaign.successor_limit = 48 * kHour;
  const auto c = FeatureEncoder::encode_campaign(o);
  EXPECT_FLOAT_EQ(c[FeatureEncoder::kPlannedWait], FeatureEncoder::time_feature(5 * kHour));
  EXPECT_FLOAT_EQ(c[FeatureEncoder::kPlannedWaitRunningOnly],
                  FeatureEncoder::time_feature(3 * kHour));
  // Other jobs running half of what their limits leave.
  EXPECT_FLOAT_EQ(c[FeatureEncoder::kPlannedWaitHalfRuntimes],
                  FeatureEncoder::time_feature(90 * kMinute + kHour));
  // Submitted at the predecessor's end, 4 h from now (it started 44 h ago): the queue has
  // cleared by then in both plans.
  o.campaign.predecessor_limit = 48 * kHour;
  o.campaign.predecessor_run = 44 * kHour;
  o.campaign.predecessor_running = true;
  const auto later = FeatureEncoder::encode_campaign(o);
  EXPECT_FLOAT_EQ(later[FeatureEncoder::kPlannedWaitAtEnd], FeatureEncoder::time_feature(kHour));
  EXPECT_FLOAT_EQ(later[FeatureEncoder::kPlannedWaitAtEndHalfRuntimes], 0.f);
  // Too few ended jobs known: the recent-runtime plan is the limits' plan.
  EXPECT_FLOAT_EQ(later[FeatureEncoder::kPlannedWaitRecentRuntimes],
                  later[FeatureEncoder::kPlannedWait]);
  EXPECT_FLOAT_EQ(later[FeatureEncoder::kPlannedWaitAtEndRecentRuntimes],
                  later[FeatureEncoder::kPlannedWaitAtEnd]);
  // Jobs that ended ran 9/10 of their limits: the running one to 9 h (2 h more), the pending
  // one 1.8 h after it; at the predecessor's end the queue has cleared.
  o.latest.recent_runtime_shares.assign(RuntimeGuess::kMinRecentEnds, 0.9f);
  const auto recent = FeatureEncoder::encode_campaign(o);
  EXPECT_FLOAT_EQ(recent[FeatureEncoder::kPlannedWaitRecentRuntimes],
                  FeatureEncoder::time_feature(3 * kHour + 48 * kMinute));
  EXPECT_FLOAT_EQ(recent[FeatureEncoder::kPlannedWaitAtEndRecentRuntimes], 0.f);
}

}  // namespace
}  // namespace mirage

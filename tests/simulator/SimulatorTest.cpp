// Behaviour of the event-driven simulator: each test pins one scheduling rule on a tiny machine.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "mirage/simulator/SimulationSummary.h"
#include "mirage/simulator/Simulator.h"

namespace mirage {
namespace {

SimJobSpec make_job(Seconds submit, int nodes, Seconds limit, Seconds runtime, int gpus = 0) {
  SimJobSpec s;
  s.submit = submit;
  s.nodes = nodes;
  s.time_limit = limit;
  s.runtime = runtime;
  s.gpus_per_node = gpus;
  return s;
}

ClusterSpec machine(int nodes, BackfillMode bf = BackfillMode::kSlurm) {
  ClusterSpec c;
  c.nodes = nodes;
  c.scheduler.backfill = bf;
  c.scheduler.bf_interval = 10;
  c.scheduler.bf_resolution = 1;
  c.scheduler.bf_window = 1000000;
  return c;
}

Simulator run(const ClusterSpec& c, std::vector<SimJobSpec> jobs) {
  Simulator sim(c, std::make_shared<const std::vector<SimJobSpec>>(std::move(jobs)));
  sim.run_to_completion();
  return sim;
}

TEST(Simulator, StartsJobsAtSubmitWhenTheyFit) {
  auto sim = run(machine(4), {make_job(0, 2, 100, 50), make_job(5, 2, 100, 70)});
  EXPECT_EQ(sim.start_time(0), 0);
  EXPECT_EQ(sim.end_time(0), 50);
  EXPECT_EQ(sim.start_time(1), 5);
  EXPECT_EQ(sim.end_time(1), 75);
}

TEST(Simulator, JobsEndAtTheirTimeLimit) {
  auto sim = run(machine(1), {make_job(0, 1, 60, 500)});
  EXPECT_EQ(sim.end_time(0), 60);
}

// The scenario behind the backfill tests: A holds 3 of 4 nodes until 100; B needs all 4.
std::vector<SimJobSpec> blocked_top_job() {
  return {make_job(0, 3, 100, 100),   // A
          make_job(1, 4, 100, 100),   // B: top job, reserved at 100
          make_job(2, 1, 50, 50),     // C: ends before B's reservation: backfillable
          make_job(3, 1, 200, 200)};  // D: would delay B: must wait
}

TEST(Simulator, MainSchedulerStopsAtFirstJobThatDoesNotFit) {
  auto sim = run(machine(4, BackfillMode::kNone), blocked_top_job());
  EXPECT_EQ(sim.start_time(1), 100);
  EXPECT_EQ(sim.start_time(2), 200);  // C waits behind B without backfill
  EXPECT_EQ(sim.start_time(3), 200);
}

TEST(Simulator, BackfillStartsShortJobOnNextBackfillTick) {
  for (auto mode : {BackfillMode::kEasy, BackfillMode::kSlurm}) {
    auto sim = run(machine(4, mode), blocked_top_job());
    EXPECT_EQ(sim.start_time(2), 10) << to_string(mode);   // first bf_interval tick after submit
    EXPECT_EQ(sim.start_time(1), 100) << to_string(mode);  // B not delayed
    EXPECT_EQ(sim.start_time(3), 200) << to_string(mode);  // D would have crossed B's start
  }
}

TEST(Simulator, BackfillPlansWithTimeLimitsNotRuntimes) {
  // C really runs 10 s, but its 150 s limit crosses B's reservation, so backfill must not start it.
  auto jobs = blocked_top_job();
  jobs[2] = make_job(2, 1, 150, 10);
  auto sim = run(machine(4, BackfillMode::kSlurm), jobs);
  EXPECT_EQ(sim.start_time(1), 100);
  EXPECT_GE(sim.start_time(2), 200);
}

TEST(Simulator, SlurmStyleReservesForEveryTestedJobEasyOnlyForTheTop) {
  // A (2 nodes) runs to 100, A2 (1 node) to 50: one node free now. B (4 nodes) is reserved at
  // 100. C (2 nodes, 40 s) fits in [50, 90). D (1 node, 80 s) fits now under EASY, but under
  // Slurm-style it would take a node C's reservation needs at 50.
  std::vector<SimJobSpec> jobs = {make_job(0, 2, 100, 100), make_job(0, 1, 50, 50),
                                  make_job(1, 4, 100, 100), make_job(2, 2, 40, 40),
                                  make_job(3, 1, 80, 80)};
  auto easy = run(machine(4, BackfillMode::kEasy), jobs);
  auto slurm = run(machine(4, BackfillMode::kSlurm), jobs);
  EXPECT_EQ(easy.start_time(4), 10);
  EXPECT_EQ(slurm.start_time(3), 50);
  EXPECT_GE(slurm.start_time(4), 200);
  EXPECT_EQ(easy.start_time(2), 100);
  EXPECT_EQ(slurm.start_time(2), 100);
}

// Two nodes, busy until 200. X (1 node) waits since 10, Y (2 nodes) since 20; age weighs 1000
// over 1000 s, size 10.
std::vector<SimJobSpec> age_against_size_jobs() {
  return {make_job(0, 2, 200, 200), make_job(10, 1, 50, 50), make_job(20, 2, 50, 50)};
}
ClusterSpec age_against_size_machine() {
  ClusterSpec c = machine(2, BackfillMode::kNone);
  c.priority.weight_age = 1000;
  c.priority.max_age = 1000;
  c.priority.weight_job_size = 10;
  return c;
}

TEST(Simulator, AgeCanOutweighSize) {
  // With a strong age weight X goes first; with none, Y's size wins.
  ClusterSpec c = age_against_size_machine();
  auto aged = run(c, age_against_size_jobs());
  EXPECT_EQ(aged.start_time(1), 200);
  EXPECT_EQ(aged.start_time(2), 250);
  c.priority.weight_age = 0;
  auto sized = run(c, age_against_size_jobs());
  EXPECT_EQ(sized.start_time(2), 200);
  EXPECT_EQ(sized.start_time(1), 250);
}

// slurmctld recomputes priorities once a PriorityCalcPeriod: at 200 the priorities in force are
// those of 0, where neither X (eligible at 10) nor Y (at 20) had aged, so Y's size wins.
TEST(Simulator, PrioritiesAreThoseOfTheLastPriorityCalcPeriodsStart) {
  ClusterSpec c = age_against_size_machine();
  c.scheduler.priority_calc_period = 300;
  auto periodic = run(c, age_against_size_jobs());
  EXPECT_EQ(periodic.start_time(2), 200);
  EXPECT_EQ(periodic.start_time(1), 250);
  c.scheduler.priority_calc_period = 100;  // at 200 both have aged since the period's start
  auto recomputed = run(c, age_against_size_jobs());
  EXPECT_EQ(recomputed.start_time(1), 200);
  EXPECT_EQ(recomputed.start_time(2), 250);
}

TEST(Simulator, AJobThatOvertakesTheLastPassesBlockerStartsAtTheNextPass) {
  // A holds 3 of 4 nodes until 1000. B (4 nodes, since 0) tops the queue and blocks C (1 node,
  // since 90): each arrival's pass starts nothing. B's age stops at 100 s, C's goes on, and C
  // outranks B from 182.5 s: the pass at 200 (E's arrival) starts it.
  ClusterSpec c = machine(4, BackfillMode::kNone);
  c.priority.weight_age = 1000;
  c.priority.max_age = 100;
  c.priority.weight_job_size = 100;
  c.priority.favor_small = true;
  auto sim = run(c, {make_job(0, 3, 1000, 1000), make_job(0, 4, 100, 100), make_job(90, 1, 50, 50),
                     make_job(120, 4, 10, 10), make_job(150, 4, 10, 10), make_job(200, 4, 10, 10)});
  EXPECT_EQ(sim.start_time(2), 200);
  EXPECT_EQ(sim.start_time(1), 1000);
}

TEST(Simulator, RejectsJobsNotSortedBySubmit) {
  EXPECT_THROW(Simulator(machine(1), std::make_shared<const std::vector<SimJobSpec>>(std::vector{
                                         make_job(20, 1, 1, 1), make_job(10, 1, 1, 1)})),
               std::invalid_argument);
}

TEST(Simulator, LargerJobsGetHigherPriorityBySize) {
  ClusterSpec c = machine(4, BackfillMode::kNone);
  c.priority.weight_age = 0;
  auto sim = run(c, {make_job(0, 4, 100, 100), make_job(10, 1, 50, 50), make_job(20, 4, 50, 50)});
  EXPECT_EQ(sim.start_time(2), 100);  // the 4-node job overtakes the older 1-node job
  EXPECT_EQ(sim.start_time(1), 150);
}

TEST(Simulator, AgeIsFrozenWhileADependencyHoldsTheJob) {
  // One node. A runs 0..100. H (afterany A) was submitted at 5, Z at 50. When A ends, H has aged
  // nothing while held, so Z (eligible since 50) goes first.
  ClusterSpec c = machine(1, BackfillMode::kNone);
  c.priority.weight_job_size = 0;
  Simulator sim(
      c, std::make_shared<const std::vector<SimJobSpec>>(std::vector{make_job(0, 1, 100, 100)}));
  sim.run_until(5);
  SimJobSpec h = make_job(0, 1, 30, 30);
  h.after_any = 0;
  const SimJobIndex hi = sim.submit(h);
  sim.run_until(50);
  const SimJobIndex zi = sim.submit(make_job(0, 1, 30, 30));
  sim.run_to_completion();
  EXPECT_EQ(sim.start_time(zi), 100);
  EXPECT_EQ(sim.start_time(hi), 130);
}

TEST(Simulator, AReleasedJobAgesFromItsReleaseAndGoesFirstOnATie) {
  // As measured on Slurm (daemon/bench/released_vs_fresh.sh): H, held behind A since 5 and
  // released at 50, ages from 50 like F submitted then, and the older job wins the tie.
  ClusterSpec c = machine(1, BackfillMode::kNone);
  c.priority.weight_job_size = 0;
  Simulator sim(
      c, std::make_shared<const std::vector<SimJobSpec>>(std::vector{make_job(0, 1, 100, 100)}));
  sim.run_until(5);
  SimJobSpec h = make_job(0, 1, 30, 30);
  h.after_any = 0;
  const SimJobIndex hi = sim.submit(h);
  sim.run_until(20);
  const SimJobIndex early = sim.submit(make_job(0, 1, 30, 30));  // not held: ages from 20
  sim.run_until(50);
  sim.release_dependency(hi);
  const SimJobIndex fi = sim.submit(make_job(0, 1, 30, 30));
  sim.release_dependency(fi);  // not held: nothing changes
  sim.run_to_completion();
  EXPECT_EQ(sim.start_time(early), 100);
  EXPECT_EQ(sim.start_time(hi), 130);
  EXPECT_EQ(sim.start_time(fi), 160);
}

TEST(Simulator, AfterAnyWaitsForThePredecessorToEnd) {
  Simulator sim(machine(4), std::make_shared<const std::vector<SimJobSpec>>(
                                std::vector{make_job(0, 1, 100, 80)}));
  SimJobSpec s = make_job(0, 1, 100, 10);
  s.after_any = 0;
  const SimJobIndex j = sim.submit(s);
  sim.run_to_completion();
  EXPECT_EQ(sim.start_time(j), 80);
}

// A QOS-like limit holds a user's job back without holding anyone else's.
TEST(Simulator, UserJobLimitHoldsAJobWithoutBlockingOthers) {
  ClusterSpec c = machine(4, BackfillMode::kNone);
  c.user_limits.max_running_jobs = 1;
  auto a1 = make_job(0, 1, 100, 100), a2 = make_job(1, 1, 100, 100), b = make_job(2, 1, 100, 100);
  a1.user = a2.user = 1;
  b.user = 2;
  auto sim = run(c, {a1, a2, b});
  EXPECT_EQ(sim.start_time(0), 0);
  EXPECT_EQ(sim.start_time(1), 100);  // its user's first job must end
  EXPECT_EQ(sim.start_time(2), 2);    // another user's job passes it
}

TEST(Simulator, UserNodeLimitHoldsAJobInBackfillToo) {
  ClusterSpec c = machine(8);
  c.user_limits.max_running_nodes = 3;
  auto a1 = make_job(0, 2, 100, 100), a2 = make_job(1, 2, 50, 50);
  a1.user = a2.user = 7;
  auto sim = run(c, {a1, a2});
  EXPECT_EQ(sim.start_time(1), 100);  // 2 + 2 nodes would pass the user's 3
}

// bf_max_job_user: backfill looks at no more of one user's jobs per pass; past them, a short job
// that would fit in a hole is not even tried.
TEST(Simulator, BfMaxJobUserSkipsAUsersLaterJobsInBackfill) {
  for (const int per_user : {0, 1}) {
    ClusterSpec c = machine(3);
    c.priority = PriorityParameters::unweighted();  // submission order
    c.scheduler.bf_max_job_user = per_user;
    auto hold = make_job(0, 2, 1000, 1000), big = make_job(1, 3, 100, 100);
    auto a1 = make_job(2, 1, 2000, 2000), a2 = make_job(3, 1, 100, 100);
    hold.user = 1;
    big.user = 2;
    a1.user = a2.user = 3;
    auto sim = run(c, {hold, big, a1, a2});
    EXPECT_EQ(sim.start_time(1), 1000);  // the big job's reservation holds either way
    if (per_user == 0)
      EXPECT_LT(sim.start_time(3), 100);  // fits in the hole before the reservation
    else
      EXPECT_GE(sim.start_time(3), 1000);  // its user's first job used the pass's one look
  }
}

// Nodes taken by work the log does not show, replayed as a job: it waits for room like the others
// (running jobs keep their nodes), and new jobs find less room while it runs.
TEST(Simulator, CapacityStepsTakeAndGiveBackNodes) {
  ClusterSpec c = machine(4, BackfillMode::kNone);
  c.unavailable = std::make_shared<const std::vector<CapacityStep>>(
      std::vector<CapacityStep>{{50, 3}, {1000, 0}});
  auto sim = run(c, {make_job(0, 2, 200, 200), make_job(60, 1, 100, 100),
                     make_job(300, 1, 100, 100), make_job(310, 1, 100, 100)});
  EXPECT_EQ(sim.start_time(0), 0);    // before the step
  EXPECT_EQ(sim.start_time(1), 200);  // 4 - 3 hidden - 2 running < 1 until job 0 ends
  EXPECT_EQ(sim.start_time(2), 300);  // job 1 ended: the one usable node is free
  EXPECT_EQ(sim.start_time(3), 400);  // one node usable until the step at 1000... job 2 ends
}

// The hidden work of a step is a job of lower priority than one that has a reservation: it may
// not delay that job, as another partition's job on shared nodes may not. Before it starts, and
// once it ends, its nodes are the trace's; it is in neither the outcomes nor the queue snapshot.
TEST(Simulator, HiddenWorkWaitsBehindAReservationLikeAnyLowerPriorityJob) {
  ClusterSpec c = machine(4);
  c.unavailable = std::make_shared<const std::vector<CapacityStep>>(
      std::vector<CapacityStep>{{20, 2}, {5000, 0}});
  Simulator sim(c, std::make_shared<const std::vector<SimJobSpec>>(
                       std::vector{make_job(0, 2, 1000, 1000), make_job(10, 4, 100, 100)}));
  sim.run_until(500);
  EXPECT_EQ(sim.unavailable_nodes(), 0);  // 2 nodes free, but taking them would delay job 1
  const QueueSnapshot q = sim.snapshot();
  EXPECT_EQ(q.pending.size(), 1u);  // job 1 alone: hidden work is not the partition's queue
  EXPECT_EQ(q.running.size(), 1u);
  sim.run_until(1200);
  EXPECT_EQ(sim.start_time(1), 1000);     // its reservation held
  EXPECT_EQ(sim.unavailable_nodes(), 2);  // as job 1 ended at 1100
  EXPECT_EQ(sim.snapshot().running.size(), 0u);
  EXPECT_TRUE(sim.hidden(2));
  EXPECT_EQ(sim.next_submit_index(), 3u);
  sim.run_to_completion();
  EXPECT_EQ(sim.outcomes().size(), 2u);
  EXPECT_EQ(sim.now(), 1200);  // nothing but hidden work left: the replay is over
}

// A weekly boundary (here at 1000 s, second 0 being a Thursday 00:00 UTC): a job whose limit would
// run across it waits for it and starts as it passes; a shorter one is backfilled before it;
// hidden work ignores it.
TEST(Simulator, AJobWaitsForAWeeklyBoundaryItsLimitWouldRunAcross) {
  ClusterSpec c = machine(4);
  c.boundaries = std::make_shared<const std::vector<WeeklyBoundaries>>(
      std::vector<WeeklyBoundaries>{{0, 10 * kWeek, {3 * kDay + 1000}}});
  c.unavailable = std::make_shared<const std::vector<CapacityStep>>(
      std::vector<CapacityStep>{{30, 1}, {5000, 0}});
  auto sim =
      run(c, {make_job(0, 2, 2000, 100), make_job(5, 1, 500, 500), make_job(20, 1, 1500, 1500)});
  EXPECT_EQ(sim.start_time(0), 1000);  // as the boundary passes
  EXPECT_EQ(sim.start_time(1), 10);    // ends before it: the next backfill tick
  EXPECT_EQ(sim.start_time(2), 1000);
  ASSERT_TRUE(sim.hidden(3));
  EXPECT_EQ(sim.start_time(3), 30);  // hidden work, its limit across the boundary: at once
}

// A job a weekly boundary holds is reported as slurmctld reports one a recurring reservation
// holds: not eligible yet (it does not compete for the nodes before the boundary), where a job
// waiting for room is; and the boundaries to come are announced as that reservation's instants,
// a second of every node each, as far as the forecast plans.
TEST(Simulator, AJobABoundaryHoldsIsReportedNotYetEligibleAndTheBoundaryAsAReservation) {
  ClusterSpec c = machine(2);
  c.boundaries = std::make_shared<const std::vector<WeeklyBoundaries>>(
      std::vector<WeeklyBoundaries>{{0, 10 * kWeek, {3 * kDay + 1000}}});
  Simulator sim(c, std::make_shared<const std::vector<SimJobSpec>>(std::vector<SimJobSpec>{
                       make_job(0, 1, 600, 600),     // runs until 600
                       make_job(1, 2, 2000, 100),    // would run across 1000
                       make_job(2, 2, 300, 100)}));  // fits before it, waits for room
  sim.run_until(5);
  const QueueSnapshot q = sim.snapshot();
  ASSERT_EQ(q.pending.size(), 2u);
  ASSERT_EQ(q.reservations.size(), 2u);  // 1000 s, a week later; two weeks later is past 14 days
  EXPECT_EQ(q.reservations[0].start, 1000);
  EXPECT_EQ(q.reservations[0].end, 1001);
  EXPECT_EQ(q.reservations[0].nodes, 2);
  EXPECT_EQ(q.reservations[1].start, 1000 + kWeek);
  EXPECT_EQ(sim.pending_view(1)->state, PendingState::kNotYetEligible);
  EXPECT_EQ(sim.pending_view(2)->state, PendingState::kEligible);
  sim.run_to_completion();
  EXPECT_EQ(sim.start_time(1), 1000);
}

// A down window (the partition DOWN from 100 to 1000 s): the job running through it goes on, no
// job starts in it, not even one that would end before it is up (backfill plans past it), and
// the queue starts as it ends. A job waiting in it is reported not eligible yet, as slurmctld
// reports PartitionDown.
TEST(Simulator, NoJobStartsInADownWindowAndTheQueueStartsAsItEnds) {
  ClusterSpec c = machine(4);
  c.down = std::make_shared<const std::vector<DownWindow>>(std::vector<DownWindow>{{100, 1000}});
  Simulator sim(c, std::make_shared<const std::vector<SimJobSpec>>(std::vector<SimJobSpec>{
                       make_job(0, 2, 5000, 3000),     // runs through the window
                       make_job(200, 1, 100, 50),      // short enough to end before it is up
                       make_job(300, 4, 500, 500)}));  // the whole machine, after job 0
  sim.run_until(500);
  EXPECT_EQ(sim.start_time(0), 0);
  EXPECT_EQ(sim.state(1), SimJobState::kPending);
  EXPECT_EQ(sim.pending_view(1)->state, PendingState::kNotYetEligible);
  EXPECT_TRUE(sim.held_by_down_window(1));
  EXPECT_FALSE(sim.held_by_boundary(1));
  sim.run_until(1500);
  EXPECT_EQ(sim.start_time(1), 1000);  // as the partition comes up
  EXPECT_EQ(sim.state(2), SimJobState::kPending);
  EXPECT_FALSE(sim.held_by_down_window(2));  // up again: job 2 waits for room
  sim.run_to_completion();
  EXPECT_EQ(sim.start_time(2), 3000);  // after job 0, which the window did not stop
}

// Several down windows, one after another: each holds the jobs submitted in it until it ends, and
// a job submitted between two starts at once, also where several came and went unasked (the
// windows are looked up as time goes on, each instant after the last: a cursor that must move
// past every window that ended, not one a look).
TEST(Simulator, EachOfSeveralDownWindowsHoldsTheQueueUntilItEnds) {
  ClusterSpec c = machine(4);
  c.down = std::make_shared<const std::vector<DownWindow>>(
      std::vector<DownWindow>{{100, 200}, {300, 400}, {400, 450}, {500, 600}});
  Simulator sim(c, std::make_shared<const std::vector<SimJobSpec>>(std::vector<SimJobSpec>{
                       make_job(150, 1, 10, 10), make_job(250, 1, 10, 10), make_job(350, 1, 10, 10),
                       make_job(550, 1, 10, 10)}));
  sim.run_until(150);
  EXPECT_TRUE(sim.held_by_down_window(0));
  sim.run_until(350);
  EXPECT_TRUE(sim.held_by_down_window(2));
  sim.run_until(420);  // the next window, touching the last: still down
  EXPECT_TRUE(sim.held_by_down_window(2));
  Simulator later = sim.fork();
  sim.run_to_completion();
  EXPECT_EQ(sim.start_time(0), 200);
  EXPECT_EQ(sim.start_time(1), 250);
  EXPECT_EQ(sim.start_time(2), 450);
  EXPECT_EQ(sim.start_time(3), 600);
  later.run_to_completion();  // a fork goes on from where its original was
  EXPECT_EQ(later.start_time(2), 450);
  EXPECT_EQ(later.start_time(3), 600);
  // Windows that came and went while nothing was asked: a job between two starts at once.
  c.down = std::make_shared<const std::vector<DownWindow>>(
      std::vector<DownWindow>{{100, 110}, {120, 130}, {140, 150}, {160, 170}});
  const Simulator quiet = run(c, {make_job(50, 1, 10, 10), make_job(155, 1, 10, 10)});
  EXPECT_EQ(quiet.start_time(1), 155);
}

// Backfill plans a job past a down window to come: the blocked top job (both nodes, free only
// at 600, inside the window) is planned at its end, so a long 1-node job fits before it now;
// without the window it would delay the top job, and waits.
TEST(Simulator, BackfillPlansAJobPastADownWindowToCome) {
  const std::vector<SimJobSpec> jobs = {make_job(0, 1, 600, 600),      // one node until 600
                                        make_job(10, 2, 100, 100),     // top: both nodes
                                        make_job(20, 1, 1200, 1200)};  // ends before 2000
  ClusterSpec c = machine(2);
  auto plain = run(c, jobs);
  EXPECT_EQ(plain.start_time(1), 600);
  EXPECT_GE(plain.start_time(2), 700);  // behind the top job's reservation
  c.down = std::make_shared<const std::vector<DownWindow>>(std::vector<DownWindow>{{500, 2000}});
  auto down = run(c, jobs);
  EXPECT_LT(down.start_time(2), 500);  // backfilled before the window
  EXPECT_EQ(down.start_time(1), 2000);
}

// A job its user submitted on seeing an earlier job end (SimJobSpec::think) enters the queue that
// long after the earlier job's replayed end, not at its logged submit, and its wait counts from
// then: here the earlier job is held back by another, so the follower comes later too.
TEST(Simulator, AFollowerIsSubmittedItsThinkTimeAfterTheJobItFollowsEnds) {
  std::vector<SimJobSpec> jobs = {make_job(0, 1, 100, 100),  // holds the only node
                                  make_job(10, 1, 50, 50),   // waits for it: runs 100 .. 150
                                  make_job(70, 1, 30, 30)};  // logged as submitted 10 s after 60
  jobs[2].after_any = 1;
  jobs[2].think = 10;
  auto sim = run(machine(1, BackfillMode::kNone), jobs);
  EXPECT_EQ(sim.submit_time(2), 160);  // 10 s after job 1's replayed end
  EXPECT_EQ(sim.start_time(2), 160);
  EXPECT_EQ(sim.submit_time(1), 10);
  EXPECT_EQ(sim.waits(3), (std::vector<Seconds>{0, 90, 0}));
}

// Fairshare: a user who has used the machine ranks below one who has not, whatever the order
// of submission; without the weight, submission order.
TEST(Simulator, FairshareRanksTheLighterUserFirst) {
  ClusterSpec c = machine(1, BackfillMode::kNone);
  c.priority = PriorityParameters::unweighted();
  c.priority.weight_fairshare = 1000;
  c.priority.decay_half_life = kDay;
  auto heavy1 = make_job(0, 1, 1000, 1000), heavy2 = make_job(10, 1, 100, 100),
       light = make_job(20, 1, 100, 100);
  heavy1.user = heavy2.user = 1;
  light.user = 2;
  auto sim = run(c, {heavy1, heavy2, light});
  EXPECT_EQ(sim.start_time(2), 1000);  // the light user's job passes the heavy user's
  EXPECT_EQ(sim.start_time(1), 1100);
  c.priority.weight_fairshare = 0;
  auto fifo = run(c, {heavy1, heavy2, light});
  EXPECT_EQ(fifo.start_time(1), 1000);
  EXPECT_EQ(fifo.start_time(2), 1100);
}

// The main pass's check that the last pass's blocker still outranks every job that fits reads
// each user's fairshare factor as of this instant. A and D start at 0 and B (4 nodes) blocks the
// pass with a node free; C (2 nodes) fits once D ends at 50, which gives D's user (B's) usage and
// C's user none: C outranks B, which is older, and starts then.
ClusterSpec fairshare_only(int nodes, Seconds half_life) {
  ClusterSpec c = machine(nodes, BackfillMode::kNone);
  c.priority = PriorityParameters::unweighted();
  c.priority.weight_fairshare = 1000;
  c.priority.decay_half_life = half_life;
  return c;
}
// A (user 1) and D (user 2) start at 0; B (user 2, 4 nodes) blocks; C (user 3, 2 nodes) from 10.
std::vector<SimJobSpec> blocker_and_lighter_user() {
  std::vector<SimJobSpec> jobs = {make_job(0, 2, 1000, 1000), make_job(0, 1, 50, 50),
                                  make_job(0, 4, 100, 100), make_job(10, 2, 100, 100)};
  jobs[0].user = 1;
  jobs[1].user = jobs[2].user = 2;
  jobs[3].user = 3;
  return jobs;
}

TEST(Simulator, AJobWhoseUserFairshareRoseOvertakesTheBlockerAtTheSameInstant) {
  auto sim = run(fairshare_only(4, kDay), blocker_and_lighter_user());
  EXPECT_EQ(sim.start_time(1), 0);
  EXPECT_EQ(sim.start_time(3), 50);
  EXPECT_EQ(sim.start_time(2), 1000);
}

// With a PriorityCalcPeriod a user's fairshare factor holds for the period: D's end at 50 does
// not lower B's user below C's before the next period, so C waits until A ends at 1000.
TEST(Simulator, AFairshareFactorHoldsUntilTheNextPriorityCalcPeriod) {
  ClusterSpec c = fairshare_only(4, kDay);
  c.scheduler.priority_calc_period = 300;
  auto sim = run(c, blocker_and_lighter_user());
  EXPECT_EQ(sim.start_time(3), 1000);
  EXPECT_EQ(sim.start_time(2), 1100);
}

// A snapshot lists the last kRecentEnds jobs' runtime shares oldest first, before the ring of
// them fills and after it has wrapped.
TEST(Simulator, SnapshotListsTheRecentRuntimeSharesOldestFirst) {
  constexpr int kRing = QueueSnapshot::kRecentEnds;
  std::vector<SimJobSpec> jobs;
  for (int i = 0; i < kRing + kRing / 3; ++i) jobs.push_back(make_job(0, 1, 1000, i + 1));
  const auto shares_of = [](int from, int to) {  // jobs from..to-1, one after another
    std::vector<float> s;
    for (int i = from; i < to; ++i) s.push_back(QueueSnapshot::runtime_share(i + 1, 1000));
    return s;
  };
  Simulator sim(machine(1, BackfillMode::kNone),
                std::make_shared<const std::vector<SimJobSpec>>(jobs));
  sim.run_until(static_cast<Seconds>(kRing / 2) * (kRing / 2 + 1) / 2);  // job kRing/2-1's end
  EXPECT_EQ(sim.snapshot().recent_runtime_shares, shares_of(0, kRing / 2));
  sim.run_to_completion();
  const int n = static_cast<int>(jobs.size());
  EXPECT_EQ(sim.snapshot().recent_runtime_shares, shares_of(n - kRing, n));
}

TEST(Simulator, BeginTimeDelaysEligibility) {
  Simulator sim(machine(4), std::make_shared<const std::vector<SimJobSpec>>());
  SimJobSpec s = make_job(0, 1, 100, 10);
  s.begin = 500;
  const SimJobIndex j = sim.submit(s);
  sim.run_to_completion();
  EXPECT_EQ(sim.start_time(j), 500);
}

TEST(Simulator, CancelRemovesPendingAndEndsRunningJobs) {
  Simulator sim(machine(1, BackfillMode::kNone),
                std::make_shared<const std::vector<SimJobSpec>>(
                    std::vector{make_job(0, 1, 100, 100), make_job(1, 1, 100, 100)}));
  sim.run_until(10);
  EXPECT_EQ(sim.state(1), SimJobState::kPending);
  sim.cancel(1);
  EXPECT_EQ(sim.state(1), SimJobState::kCancelled);
  sim.cancel(0);
  EXPECT_EQ(sim.end_time(0), 10);
  sim.run_to_completion();
  EXPECT_EQ(sim.start_time(1), kUnknownTime);
}

TEST(Simulator, EndEarlyShortensARunningJob) {
  Simulator sim(machine(1), std::make_shared<const std::vector<SimJobSpec>>(
                                std::vector{make_job(0, 1, 1000, 1000)}));
  sim.run_until(100);
  sim.end_early(0, 300);
  sim.run_to_completion();
  EXPECT_EQ(sim.end_time(0), 300);
}

TEST(Simulator, GpuGranularAllocationSharesNodes) {
  ClusterSpec c = machine(2);
  c.gpus_per_node = 4;
  c.allocation = AllocationMode::kGpuGranular;
  // Four 1-node 2-GPU jobs fit at once on 2 nodes x 4 GPUs; the fifth waits.
  std::vector<SimJobSpec> jobs;
  for (int i = 0; i < 5; ++i) jobs.push_back(make_job(i, 1, 100, 100, 2));
  auto sim = run(c, jobs);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(sim.start_time(i), i);
  EXPECT_EQ(sim.start_time(4), 100);
}

TEST(Simulator, GpuGranularBackfillKeepsNodeIdentity) {
  // Node 0 has 2 free GPUs until 100 and node 1 is full until 100. A 2-node job is the top job,
  // reserved at 100; a 1-node 2-GPU job ending before 100 backfills onto node 0.
  ClusterSpec c = machine(2, BackfillMode::kSlurm);
  c.gpus_per_node = 4;
  c.allocation = AllocationMode::kGpuGranular;
  auto sim = run(c, {make_job(0, 1, 100, 100, 2), make_job(0, 1, 100, 100, 4),
                     make_job(1, 2, 100, 100, 4), make_job(2, 1, 50, 50, 2)});
  EXPECT_EQ(sim.start_time(2), 100);
  // The main scheduler stops at B; backfill places it on node 0 at its first tick.
  EXPECT_EQ(sim.start_time(3), 10);
}

TEST(Simulator, RejectsAJobLargerThanTheMachine) {
  EXPECT_THROW(Simulator(machine(4), std::make_shared<const std::vector<SimJobSpec>>(
                                         std::vector{make_job(0, 5, 10, 10)})),
               std::invalid_argument);
}

TEST(Simulator, SnapshotShowsPendingAndRunningJobs) {
  Simulator sim(machine(4, BackfillMode::kNone),
                std::make_shared<const std::vector<SimJobSpec>>(blocked_top_job()));
  sim.run_until(50);
  QueueSnapshot q = sim.snapshot();
  EXPECT_EQ(q.time, 50);
  ASSERT_EQ(q.running.size(), 1u);
  EXPECT_EQ(q.running[0].run, 50);
  EXPECT_EQ(q.running[0].nodes, 3);
  ASSERT_EQ(q.pending.size(), 3u);
  Seconds waited = 0;
  for (const auto& p : q.pending) waited += p.waited;
  EXPECT_EQ(waited, 49 + 48 + 47);
}

ClusterSpec age_only(int nodes) {
  ClusterSpec c = machine(nodes, BackfillMode::kNone);
  c.priority = PriorityParameters::unweighted();
  c.priority.weight_age = 1000;
  c.priority.max_age = 1000;
  return c;
}

// The simulator says of its jobs what slurmctld says of its own: a pending job's priority now and
// the age it accrued (a dependent job accrues none until its dependency ends), why it waits (its
// user's limit, a dependency, a begin time), and a running job's priority as it started.
TEST(Simulator, SnapshotCarriesPrioritiesAccrualAndWhyJobsWait) {
  ClusterSpec c = age_only(4);
  c.user_limits.max_running_jobs = 1;
  std::vector<SimJobSpec> jobs{make_job(0, 4, 100, 100), make_job(10, 1, 100, 100),
                               make_job(20, 1, 100, 100), make_job(30, 1, 100, 100)};
  jobs[0].user = 1;
  jobs[1].user = 1;  // over its user's limit of one running job once room frees
  jobs[2].user = 2;
  jobs[2].after_any = 1;
  jobs[3].user = 3;
  jobs[3].begin = 500;
  Simulator sim(c, std::make_shared<const std::vector<SimJobSpec>>(jobs));
  sim.run_until(50);
  const QueueSnapshot q = sim.snapshot();
  ASSERT_EQ(q.running.size(), 1u);
  EXPECT_EQ(q.running[0].priority, 0);  // eligible at 0, started at once
  ASSERT_EQ(q.pending.size(), 3u);
  const auto find = [&](PendingState state) {
    for (const auto& p : q.pending)
      if (p.state == state) return p;
    ADD_FAILURE() << "no pending job " << to_string(state);
    return PendingJobView{};
  };
  const PendingJobView limited = find(PendingState::kLimit);
  EXPECT_EQ(limited.accrued, 40);
  EXPECT_DOUBLE_EQ(limited.priority, 40);  // 1000 x 40 / 1000
  const PendingJobView dependent = find(PendingState::kDependency);
  EXPECT_EQ(dependent.waited, 30);
  EXPECT_EQ(dependent.accrued, 0);
  EXPECT_EQ(find(PendingState::kNotYetEligible).waited, 20);
  EXPECT_EQ(sim.pending_view(1)->state, PendingState::kLimit);
  EXPECT_FALSE(sim.pending_view(0));  // it runs
  EXPECT_EQ(sim.started_priority(0), 0);
}

// With a PriorityCalcPeriod the factors are those of the period's start whoever reads them first:
// a snapshot taken mid-period changes nothing. At 800 (the period of 600) B's user had used
// 2 nodes x 600 s and C's 3 x 350 s: C's job goes first.
TEST(Simulator, APeriodsFactorsAreItsStartsWhateverReadsThemFirst) {
  ClusterSpec c = fairshare_only(8, 365 * kDay);
  c.scheduler.priority_calc_period = 300;
  std::vector<SimJobSpec> jobs = {make_job(0, 2, 10000, 10000), make_job(0, 3, 800, 800),
                                  make_job(250, 3, 10000, 10000), make_job(260, 3, 100, 100),
                                  make_job(270, 3, 100, 100)};
  jobs[0].user = jobs[3].user = 2;
  jobs[1].user = 1;
  jobs[2].user = jobs[4].user = 3;
  const auto shared = std::make_shared<const std::vector<SimJobSpec>>(jobs);
  Simulator plain(c, shared), looked(c, shared);
  plain.run_to_completion();
  looked.run_until(650);
  ASSERT_EQ(looked.snapshot().pending.size(), 2u);
  looked.run_to_completion();
  EXPECT_EQ(plain.start_time(4), 800);
  EXPECT_EQ(plain.start_time(3), 900);
  EXPECT_EQ(looked.start_time(4), 800);
  EXPECT_EQ(looked.start_time(3), 900);
}

TEST(Simulator, ASnapshotReportsThePrioritiesInForce) {
  ClusterSpec c = age_only(4);
  c.scheduler.priority_calc_period = 30;
  Simulator sim(c, std::make_shared<const std::vector<SimJobSpec>>(std::vector<SimJobSpec>{
                       make_job(0, 4, 100, 100), make_job(10, 1, 100, 100)}));
  sim.run_until(50);
  ASSERT_EQ(sim.snapshot().pending.size(), 1u);
  EXPECT_DOUBLE_EQ(sim.snapshot().pending[0].priority, 20);  // aged from 10 to the period's 30
}

// Slurm's will-run plan (job_start_data): the running jobs alone, each to its limit, on the
// capacity there is now: the pending queue, jobs still to come and capacity changes ahead are not
// in it. The copy it plans on leaves the simulator as it was.
TEST(Simulator, PlannedStartPlacesTheJobAmongTheRunningJobsAtTheirLimits) {
  // 4 nodes: two 2-node jobs run (limits 1000 and 300, both end at 100); a 4-node job waits.
  std::vector<SimJobSpec> jobs{make_job(0, 2, 1000, 100), make_job(0, 2, 300, 100),
                               make_job(10, 4, 500, 50), make_job(60, 4, 100, 100)};
  ClusterSpec c = machine(4);
  // From 200 on, work the log does not show holds 2 nodes.
  c.unavailable = std::make_shared<const std::vector<CapacityStep>>(
      std::vector<CapacityStep>{{0, 0}, {200, 2}});
  Simulator sim(c, std::make_shared<const std::vector<SimJobSpec>>(jobs));
  sim.run_until(20);
  SimJobSpec probe;
  probe.nodes = 2;
  probe.time_limit = 300;
  EXPECT_EQ(sim.planned_start(probe), 300);  // as the second job reaches its limit
  probe.nodes = 4;
  EXPECT_EQ(sim.planned_start(probe), 1000);               // both; not after the waiting 4-node job
  EXPECT_EQ(sim.planned_start(probe, 500), kUnknownTime);  // beyond the horizon
  EXPECT_EQ(sim.now(), 20);
  sim.run_to_completion();
  EXPECT_EQ(sim.start_time(2), 100);  // the real run: both ended early
}

TEST(Simulator, SnapshotKeepsHowTheLastEndedJobsRanAgainstTheirLimits) {
  std::vector<SimJobSpec> jobs;
  for (int i = 0; i < QueueSnapshot::kRecentEnds + 2; ++i)
    jobs.push_back(make_job(i * 100, 1, 100, i % 2 == 0 ? 25 : 500));  // a quarter, or the limit
  Simulator sim(machine(1), std::make_shared<const std::vector<SimJobSpec>>(jobs));
  sim.run_until(250);
  EXPECT_EQ(sim.snapshot().recent_runtime_shares, (std::vector<float>{0.25f, 1.f, 0.25f}));
  sim.run_to_completion();
  const QueueSnapshot q = sim.snapshot();
  ASSERT_EQ(q.recent_runtime_shares.size(), static_cast<std::size_t>(QueueSnapshot::kRecentEnds));
  EXPECT_EQ(q.recent_runtime_shares.front(), 0.25f);  // job 2: the two first fell out, oldest
  EXPECT_EQ(q.recent_runtime_shares.back(), 1.f);     // the last job
}

std::vector<SimJobSpec> random_jobs(int n, int machine_nodes, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<SimJobSpec> jobs;
  Seconds t = 0;
  for (int i = 0; i < n; ++i) {
    // Mean size about machine/8 and mean runtime about 5000 s: offered load about 0.95, so
    // queues build and drain as on a busy real machine.
    const int nodes = 1 + static_cast<int>(rng() % static_cast<unsigned>(machine_nodes / 4));
    const Seconds limit = 600 + static_cast<Seconds>(rng() % 12000);
    const Seconds runtime = static_cast<Seconds>(rng() % static_cast<unsigned>(limit + 1000));
    const double mean_gap = 5000.0 * (1 + machine_nodes / 4) / 2 / machine_nodes / 0.95;
    t += static_cast<Seconds>(std::exponential_distribution<double>(1.0 / mean_gap)(rng));
    jobs.push_back(make_job(t, nodes, limit, runtime));
  }
  return jobs;
}

TEST(Simulator, ForkThenRunGivesTheSameFutureAsTheOriginal) {
  auto jobs = std::make_shared<const std::vector<SimJobSpec>>(random_jobs(2000, 32, 7));
  ClusterSpec c = machine(32);
  Simulator a(c, jobs);
  a.run_until((*jobs)[1000].submit);
  Simulator b = a.fork();
  a.run_to_completion();
  b.run_to_completion();
  for (SimJobIndex j = 0; j < jobs->size(); ++j) ASSERT_EQ(a.start_time(j), b.start_time(j)) << j;
}

TEST(Simulator, ForkEvolvesIndependently) {
  auto jobs = std::make_shared<const std::vector<SimJobSpec>>(random_jobs(500, 16, 3));
  Simulator a(machine(16), jobs);
  a.run_until((*jobs)[200].submit);
  Simulator b = a.fork();
  const SimJobIndex extra = b.submit(make_job(0, 16, 100000, 100000));
  b.run_to_completion();
  a.run_to_completion();
  EXPECT_EQ(a.outcomes().size(), jobs->size());
  EXPECT_TRUE(b.outcomes().empty());  // forks do not record
  EXPECT_EQ(b.state(extra), SimJobState::kDone);
  bool differs = false;
  for (SimJobIndex j = 0; j < jobs->size(); ++j) differs |= a.start_time(j) != b.start_time(j);
  EXPECT_TRUE(differs);  // a whole-machine job delays someone in the fork only
}

TEST(Simulator, ReplayIsDeterministic) {
  auto jobs = std::make_shared<const std::vector<SimJobSpec>>(random_jobs(3000, 64, 11));
  Simulator a(machine(64), jobs), b(machine(64), jobs);
  a.run_to_completion();
  b.run_to_completion();
  for (SimJobIndex j = 0; j < jobs->size(); ++j) ASSERT_EQ(a.start_time(j), b.start_time(j));
}

TEST(Simulator, NeverOversubscribesTheMachineAndNeverStartsBeforeSubmit) {
  auto jobs = std::make_shared<const std::vector<SimJobSpec>>(random_jobs(3000, 32, 5));
  for (auto mode : {BackfillMode::kNone, BackfillMode::kEasy, BackfillMode::kSlurm}) {
    Simulator sim(machine(32, mode), jobs);
    sim.run_to_completion();
    std::vector<std::pair<Seconds, int>> deltas;
    for (SimJobIndex j = 0; j < jobs->size(); ++j) {
      ASSERT_GE(sim.start_time(j), (*jobs)[j].submit);
      deltas.push_back({sim.start_time(j), (*jobs)[j].nodes});
      deltas.push_back({sim.end_time(j), -(*jobs)[j].nodes});
    }
    std::sort(deltas.begin(), deltas.end(), [](auto x, auto y) {
      return x.first != y.first ? x.first < y.first : x.second < y.second;  // ends first
    });
    int used = 0;
    for (auto [t, d] : deltas) {
      used += d;
      ASSERT_LE(used, 32) << "at " << t << " with " << to_string(mode);
    }
  }
}

// Runs two replays of the same jobs to completion: each job starts at the same time in both.
void expect_same_starts(Simulator& a, Simulator& b, std::size_t jobs, BackfillMode mode) {
  a.run_to_completion();
  b.run_to_completion();
  for (SimJobIndex j = 0; j < jobs; ++j)
    ASSERT_EQ(a.start_time(j), b.start_time(j)) << j << " " << to_string(mode);
}

// A busy machine with what a calibration adds (users with limits and fairshare, bf_max_job_user,
// a weekly boundary, down windows): each backfill pass proven to start nothing before its queue is
// ranked is run whole all the same, and starts nothing; the starts are those of a replay that
// skips them.
TEST(Simulator, ABackfillPassProvenIdleStartsNothingWhenRunWhole) {
  std::vector<SimJobSpec> specs = random_jobs(3000, 32, 13);
  for (std::size_t i = 0; i < specs.size(); ++i)
    specs[i].user = 1 + static_cast<std::uint32_t>(i % 7);
  auto jobs = std::make_shared<const std::vector<SimJobSpec>>(std::move(specs));
  for (auto mode : {BackfillMode::kSlurm, BackfillMode::kEasy}) {
    ClusterSpec c = machine(32, mode);
    c.priority.weight_fairshare = 400;
    c.user_limits.max_running_jobs = 6;
    c.user_limits.max_running_nodes = 14;
    c.scheduler.bf_max_job_user = 3;
    c.boundaries = std::make_shared<const std::vector<WeeklyBoundaries>>(
        std::vector<WeeklyBoundaries>{{0, 100 * kWeek, {3 * kDay + 1000}}});
    c.down = std::make_shared<const std::vector<DownWindow>>(
        std::vector<DownWindow>{{200000, 210000}, {900000, 905000}});
    Simulator checked(c, jobs), skipping(c, jobs);
    checked.check_idle_proofs(true);
    expect_same_starts(checked, skipping, jobs->size(), mode);
    EXPECT_GT(checked.counters().backfill_passes_proven_idle, 0u) << to_string(mode);
    EXPECT_EQ(checked.counters().backfill_idle_proofs_broken, 0u) << to_string(mode);
    EXPECT_EQ(skipping.counters().backfill_passes_proven_idle,
              checked.counters().backfill_passes_proven_idle);
  }
}

// A ranking at a later instant that keeps the last one's jobs and rewrites only their priorities
// holds what a ranking made afresh holds, over whole replays with fairshare, user limits, arrivals
// between passes and both backfill modes; the starts are those of a replay that does not check.
TEST(Simulator, ARankingKeptAcrossInstantsIsTheRankingMadeAfresh) {
  std::vector<SimJobSpec> specs = random_jobs(3000, 32, 17);
  for (std::size_t i = 0; i < specs.size(); ++i)
    specs[i].user = 1 + static_cast<std::uint32_t>((i * i) % 11);  // some users submit far more
  auto jobs = std::make_shared<const std::vector<SimJobSpec>>(std::move(specs));
  for (auto mode : {BackfillMode::kSlurm, BackfillMode::kEasy}) {
    ClusterSpec c = machine(32, mode);
    c.priority.weight_fairshare = 400;
    c.priority.decay_half_life = kDay;
    c.user_limits.max_running_jobs = 6;
    Simulator checked(c, jobs), plain(c, jobs);
    checked.check_kept_rankings(true);
    expect_same_starts(checked, plain, jobs->size(), mode);
    EXPECT_GT(checked.counters().kept_rankings, 100u) << to_string(mode);
    EXPECT_EQ(checked.counters().kept_rankings_wrong, 0u) << to_string(mode);
  }
}

TEST(Simulator, BackfillReducesWaitsOnABusyMachine) {
  auto jobs = std::make_shared<const std::vector<SimJobSpec>>(random_jobs(3000, 32, 9));
  Simulator none(machine(32, BackfillMode::kNone), jobs),
      slurm(machine(32, BackfillMode::kSlurm), jobs);
  none.run_to_completion();
  slurm.run_to_completion();
  EXPECT_LT(summarize(slurm, 1).mean_wait_s, summarize(none, 1).mean_wait_s);
  EXPECT_GT(slurm.counters().backfill_starts, 0u);
}

}  // namespace
}  // namespace mirage

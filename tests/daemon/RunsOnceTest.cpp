// No segment runs twice when Slurm does more than it said: a submission taken as lost that
// slurmctld carries out late (a second job under the segment's tag), and a job Slurm requeues
// (the same id queued or started again).
#include <gtest/gtest.h>

#include <cerrno>

#include "TestSupport.h"

namespace mirage::daemon {
namespace {

using testing::Harness;
using testing::quick_config;
using testing::Scripted;
using testing::simple_request;

// sbatch gave up on a busy slurmctld (its reply never came, no job was there yet): the
// submission's outcome is unknown, and the segment is submitted again once a dump lacks its tag.
// Returns the request slurmctld still holds.
SubmitRequest time_out_submission(Harness& h) {
  const Actions a = h.tick(/*perform=*/false);
  EXPECT_EQ(a.submits.size(), 1u);
  h.controller->on_submit_failed(
      a.submits.at(0),
      SlurmError("sbatch did not finish within 30s: Socket timed out", ETIMEDOUT, true));
  h.clock.advance(10);
  h.tick();  // the tag is absent: submitted again under it
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  return a.submits.at(0).request;
}

TEST(RunsOnce, AJobCreatedLateForASubmissionTakenAsLostIsCancelled) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  const SubmitRequest lost = time_out_submission(h);
  const JobId resubmitted = h.job_of(id, 0);
  ASSERT_EQ(h.slurm.submissions().at(0).request.comment, lost.comment);
  const JobId late = h.slurm.create_job(lost);
  h.tick();
  ASSERT_EQ(h.slurm.cancels().size(), 1u);
  EXPECT_EQ(h.slurm.cancels()[0], late);
  EXPECT_EQ(h.slurm.find(late)->state, SlurmJobState::kCancelled);
  EXPECT_EQ(h.job_of(id, 0), resubmitted);
  // Once: the cancelled job is not cancelled again, and the segment goes on with its own job.
  h.slurm.start(resubmitted);
  h.tick();
  h.slurm.finish(resubmitted);
  h.tick();
  EXPECT_EQ(h.slurm.cancels().size(), 1u);
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
  EXPECT_EQ(h.slurm.submissions().size(), 2u);  // segment 1
}

TEST(RunsOnce, ALateJobThatStartedFirstIsFollowedAndItsPendingTwinCancelled) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  const SubmitRequest lost = time_out_submission(h);
  const JobId resubmitted = h.job_of(id, 0);
  const JobId late = h.slurm.create_job(lost);
  h.slurm.start(late);  // older in the queue, it started first
  h.tick();
  ASSERT_EQ(h.slurm.cancels().size(), 1u);
  EXPECT_EQ(h.slurm.cancels()[0], resubmitted);
  EXPECT_EQ(h.job_of(id, 0), late);
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kRunning);
  h.slurm.finish(late);
  h.tick();
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
  EXPECT_EQ(h.slurm.cancels().size(), 1u);
}

// The late job followed fails: the retry's search for runs the store does not know (here by the
// job's name, as accounting of 22.05 without job comments gives it) knows both jobs of the
// attempt, so the retry is a new job, not the failed one adopted again.
TEST(RunsOnce, AFollowedTwinThatFailsIsRetriedAsANewJobNotAdoptedAsTheRetry) {
  Harness h(quick_config());
  h.slurm.set_accounting(true);
  h.slurm.set_accounting_keeps_comments(false);
  const auto id = h.controller->add(simple_request(2)).spec.id;
  const SubmitRequest lost = time_out_submission(h);
  const JobId resubmitted = h.job_of(id, 0);
  const JobId late = h.slurm.create_job(lost);
  h.slurm.start(late);
  h.tick();
  ASSERT_EQ(h.job_of(id, 0), late);
  const auto history = h.store->submissions(id);
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0].job, late) << "the intent log does not know the job the segment follows";
  EXPECT_EQ(history[0].twin, resubmitted);
  h.slurm.finish(late, SlurmJobState::kFailed, 1);
  h.tick();  // failed: submitted again
  h.tick();
  ASSERT_EQ(h.slurm.submissions_tagged(id, 0).size(), 2u)
      << "the failed job was adopted as the retry";
  EXPECT_EQ(h.seg(id, 0).seg.attempts, 2);
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kPending);
  EXPECT_EQ(h.job_of(id, 0), h.slurm.submissions_tagged(id, 0).back().job);
}

TEST(RunsOnce, ALateJobOfACancelledCampaignIsCancelled) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  const Actions a = h.tick(/*perform=*/false);
  h.controller->on_submit_failed(a.submits.at(0),
                                 SlurmError("Socket timed out on send/recv", ETIMEDOUT, true));
  EXPECT_TRUE(h.controller->cancel(id).cancels.empty());
  h.clock.advance(10);
  h.tick();  // the tag is absent: the submission is abandoned with the campaign
  EXPECT_FALSE(h.seg(id, 0).submitting);
  const JobId late = h.slurm.create_job(a.submits.at(0).request);
  h.tick();
  ASSERT_EQ(h.slurm.cancels().size(), 1u);
  EXPECT_EQ(h.slurm.cancels()[0], late);
  EXPECT_TRUE(h.slurm.submissions().empty());
}

TEST(RunsOnce, ALateJobIsCancelledByADaemonStartedAfterward) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  const SubmitRequest lost = time_out_submission(h);
  h.restart();
  h.slurm.create_job(lost);
  h.tick();
  ASSERT_EQ(h.slurm.cancels().size(), 1u);
  EXPECT_NE(h.slurm.cancels()[0], h.job_of(id, 0));
}

// A cancel that failed is sent again whatever the error: one given up would leave the late job
// running the segment beside its own.
TEST(RunsOnce, AStrayWhoseCancelWasRefusedIsCancelledAgain) {
  Harness h(quick_config());
  h.controller->add(simple_request(2));
  const JobId late = h.slurm.create_job(time_out_submission(h));
  const Actions a = h.tick(/*perform=*/false);
  ASSERT_EQ(a.cancels.size(), 1u);
  EXPECT_EQ(a.cancels[0].job, late);
  h.controller->on_cancel_failed(
      a.cancels[0], SlurmError("slurm_kill_job: Access/permission denied", 2002, false));
  h.tick();
  ASSERT_EQ(h.slurm.cancels().size(), 1u);
  EXPECT_EQ(h.slurm.cancels()[0], late);
  EXPECT_EQ(h.slurm.find(late)->state, SlurmJobState::kCancelled);
}

// Segment 0 submitted and started; its job.
JobId run_first_segment(Harness& h, std::int64_t id) {
  h.tick();
  const JobId job = h.job_of(id, 0);
  h.slurm.start(job);
  h.tick();
  return job;
}

// A campaign whose policy submits the successor at its first decision, its first segment running.
struct EagerChain {
  explicit EagerChain(OverlapMode mode) : h(quick_config(), policy.factory()) {
    policy.submit = true;
    auto req = simple_request(3, 10 * kHour);
    req.policy = "scripted";
    req.overlap = mode;
    id = h.controller->add(req).spec.id;
    first = run_first_segment(h, id);
    EXPECT_EQ(h.slurm.submissions().size(), 2u);
  }
  Scripted policy;
  Harness h;
  std::int64_t id = 0;
  JobId first = 0;
};

// The predecessor goes back to the queue (preempted, a node failed) after its successor started,
// which carries on from the checkpoint: run again, it would run the segment twice.
TEST(RunsOnce, APredecessorRequeuedAfterItsSuccessorStartedIsCancelled) {
  for (const OverlapMode mode : {OverlapMode::kConcurrent, OverlapMode::kHandoff}) {
    EagerChain c(mode);
    Harness& h = c.h;
    h.slurm.start(h.job_of(c.id, 1));
    h.clock.advance(60);
    h.tick();
    h.slurm.requeue(c.first);
    h.clock.advance(60);
    h.tick();
    EXPECT_EQ(h.slurm.find(c.first)->state, SlurmJobState::kCancelled) << to_string(mode);
    EXPECT_EQ(h.seg(c.id, 0).seg.state, SegmentState::kDone);
    EXPECT_EQ(h.slurm.submissions_tagged(c.id, 0).size(), 1u);
    EXPECT_EQ(h.seg(c.id, 1).seg.state, SegmentState::kRunning);
  }
}

// Requeued and started again between two dumps, the same job is seen running with a later start:
// the same attempt, whose limit runs from the new start (the successor is not submitted early).
TEST(RunsOnce, AJobRequeuedAndStartedAgainUnseenIsTheSameAttemptFromItsNewStart) {
  auto config = quick_config();
  config.fallback_lead = 10 * kMinute;
  Harness h(config);
  auto req = simple_request(2, 2 * kHour);
  req.policy = "reactive";
  const auto id = h.controller->add(req).spec.id;
  const JobId job = run_first_segment(h, id);
  h.clock.advance(90 * kMinute);
  h.slurm.requeue(job);
  h.slurm.start(job);  // started again before the next dump
  h.tick();
  EXPECT_EQ(h.seg(id, 0).seg.start_time, h.clock.now());
  EXPECT_EQ(h.seg(id, 0).seg.attempts, 1);
  h.clock.advance(30 * kMinute);  // past the first start's fallback lead, not the new one's
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  h.clock.advance(81 * kMinute);
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 2u);
}

// The first segment's job back in the queue (preempted, a node failed) while its successor
// waits, seen by a dump.
void requeue_first(EagerChain& c) {
  c.h.slurm.requeue(c.first);
  c.h.tick();
  EXPECT_EQ(c.h.seg(c.id, 0).seg.state, SegmentState::kPending);
}

// Requeued while its successor waits: it runs again as the same attempt, nothing cancelled.
TEST(RunsOnce, AJobRequeuedBeforeItsSuccessorStartsRunsAgainAsTheSameAttempt) {
  EagerChain c(OverlapMode::kConcurrent);
  Harness& h = c.h;
  requeue_first(c);
  h.slurm.start(c.first);
  h.tick();
  EXPECT_EQ(h.seg(c.id, 0).seg.state, SegmentState::kRunning);
  EXPECT_TRUE(h.slurm.cancels().empty());
  EXPECT_EQ(h.seg(c.id, 0).seg.attempts, 1);
  EXPECT_EQ(h.slurm.submissions().size(), 2u);
}

// Cancelled with its campaign while running, and the cancel got no answer (slurmctld busy): the
// segment is over, so its job, still running, is cancelled at the next tick rather than left
// to run to its limit unwatched.
TEST(RunsOnce, ARunningJobWhoseCancelGotNoAnswerIsCancelledAtTheNextTick) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  const JobId job = run_first_segment(h, id);
  const Actions a = h.controller->cancel(id);
  ASSERT_EQ(a.cancels.size(), 1u);
  h.controller->on_cancel_failed(a.cancels[0],
                                 SlurmError("Socket timed out on send/recv operation", 5004, true));
  h.tick();
  ASSERT_EQ(h.slurm.cancels().size(), 1u);
  EXPECT_EQ(h.slurm.cancels()[0], job);
  EXPECT_EQ(h.slurm.find(job)->state, SlurmJobState::kCancelled);
  h.tick();  // once
  EXPECT_EQ(h.slurm.cancels().size(), 1u);
}

// Requeued while its successor waits, then cancelled in the queue (by an admin): it ran and
// checkpointed, so its successor carries on; submitted again, it would run beside that one.
TEST(RunsOnce, ASegmentRequeuedThenCancelledInTheQueueIsNotSubmittedAgain) {
  EagerChain c(OverlapMode::kConcurrent);
  Harness& h = c.h;
  requeue_first(c);
  h.slurm.finish(c.first, SlurmJobState::kCancelled);
  h.tick();
  EXPECT_EQ(h.seg(c.id, 0).seg.state, SegmentState::kDone);
  EXPECT_EQ(h.seg(c.id, 0).message, "cancelled after it had run");
  h.slurm.start(h.job_of(c.id, 1));
  h.tick();
  h.tick();
  EXPECT_EQ(h.slurm.submissions_tagged(c.id, 0).size(), 1u);
  EXPECT_EQ(h.seg(c.id, 1).seg.state, SegmentState::kRunning);
}

// `scontrol requeue` takes a batch job that already COMPLETED: the same id queued again, which no
// segment follows any more, would run the segment a second time beside its successor.
// Runs segment 0 of campaign `id` to COMPLETED, seen by a dump; returns its job.
JobId complete_first_segment(Harness& h, std::int64_t id) {
  const JobId job = run_first_segment(h, id);
  h.slurm.finish(job);
  h.clock.advance(60);
  h.tick();
  return job;
}

TEST(RunsOnce, ASegmentRequeuedAfterItCompletedIsCancelled) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  const JobId first = complete_first_segment(h, id);
  ASSERT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
  ASSERT_EQ(h.slurm.submissions().size(), 2u);  // segment 1
  h.slurm.requeue(first);
  h.clock.advance(60);
  h.tick();
  EXPECT_EQ(h.slurm.find(first)->state, SlurmJobState::kCancelled);
  ASSERT_EQ(h.slurm.cancels().size(), 1u);
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
  h.tick();  // once
  EXPECT_EQ(h.slurm.cancels().size(), 1u);
  EXPECT_EQ(h.slurm.submissions_tagged(id, 0).size(), 1u);
}

// The last segment of a campaign that is done, requeued: nothing is left to run, so it is
// cancelled too.
TEST(RunsOnce, TheLastSegmentRequeuedAfterItsCampaignIsDoneIsCancelled) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(1)).spec.id;
  const JobId job = complete_first_segment(h, id);
  ASSERT_EQ(h.controller->find(id)->state, CampaignState::kDone);
  h.slurm.requeue(job);
  h.slurm.start(job);  // started again before the next dump
  h.clock.advance(60);
  h.tick();
  EXPECT_EQ(h.slurm.find(job)->state, SlurmJobState::kCancelled);
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
}

}  // namespace
}  // namespace mirage::daemon

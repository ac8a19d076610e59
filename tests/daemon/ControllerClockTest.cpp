// The login node's clock and slurmctld's run apart (a login node minutes fast): Slurm's submit
// times are compared with the daemon's intents on slurmctld's clock, measured on every dump, so a
// segment's job is neither missed (and submitted a second time) nor another, older job taken for
// it.
#include <gtest/gtest.h>
#include <utime.h>

#include <fstream>

#include "ShortWaits.h"
#include "TestSupport.h"

namespace mirage::daemon {
namespace {

using testing::Harness;
using testing::quick_config;
using testing::simple_request;

// The login node's clock ten minutes ahead of slurmctld's.
constexpr Seconds kLoginAhead = 10 * kMinute;

// A site that rewrites every --comment (the tag with it), its controller's clock `ahead` of the
// daemon's; a campaign of two segments added.
struct SkewedRewritingSite {
  explicit SkewedRewritingSite(Seconds ahead) : h(quick_config()) {
    h.slurm.rewrite_comments_to("project=ml");
    h.slurm.set_controller_clock_offset(ahead);
    id = h.controller->add(simple_request(2)).spec.id;
  }
  // Segment 0 submitted and seen running a minute later (the site's rewrite seen with it).
  JobId run_first_segment() {
    h.tick();
    const JobId first = h.job_of(id, 0);
    h.slurm.start(first);
    h.clock.advance(60);
    h.tick();
    return first;
  }
  // Segment 0 ends and segment 1 is submitted with its reply lost, then four more passes.
  void submit_next_losing_its_reply(JobId first) {
    h.slurm.lose_next_submit_reply();
    h.slurm.finish(first);
    h.clock.advance(60);
    h.tick();
    for (int i = 0; i < 4; ++i) {
      h.clock.advance(30);
      h.tick();
    }
  }
  Harness h;
  std::int64_t id = 0;
};

TEST(ControllerClock, ASegmentIsFollowedByItsIdWhenTheLoginNodeRunsAhead) {
  SkewedRewritingSite site(-kLoginAhead);
  Harness& h = site.h;
  const JobId first = site.run_first_segment();
  EXPECT_EQ(h.seg(site.id, 0).seg.state, SegmentState::kRunning)
      << "the job sbatch returned, submitted 'before' the intent on the two clocks, was not "
         "followed";
  h.slurm.finish(first);
  h.clock.advance(60);
  h.tick();
  EXPECT_EQ(h.seg(site.id, 0).seg.state, SegmentState::kDone);
  EXPECT_EQ(h.slurm.submissions_tagged(site.id, 0).size(), 1u);
}

TEST(ControllerClock, ALostReplyIsFoundWhenTheLoginNodeRunsAhead) {
  SkewedRewritingSite site(-kLoginAhead);
  Harness& h = site.h;
  site.submit_next_losing_its_reply(site.run_first_segment());
  EXPECT_EQ(h.slurm.submissions_tagged(site.id, 1).size(), 1u) << "segment 1 was submitted twice";
  EXPECT_FALSE(h.seg(site.id, 1).submitting);
  EXPECT_EQ(h.seg(site.id, 1).seg.state, SegmentState::kPending);
}

TEST(ControllerClock, AnOlderJobOfTheNameIsNotTakenWhenTheLoginNodeRunsBehind) {
  // slurmctld's clock ten minutes ahead: a job of the segment's name submitted a few minutes
  // before the intent reads as later than it on this machine's clock, and must not be taken.
  SkewedRewritingSite site(kLoginAhead);
  Harness& h = site.h;
  const JobId first = site.run_first_segment();
  SlurmJob by_hand;  // the user's own, under the name the next segment goes by
  by_hand.name = "train-s1-" + h.store->store_id();
  by_hand.comment = "project=ml";
  by_hand.submit = h.slurm.controller_now() - 3 * kMinute;
  const JobId stranger = h.slurm.add_job(by_hand);
  site.submit_next_losing_its_reply(first);
  EXPECT_NE(h.job_of(site.id, 1), stranger) << "a job submitted before the intent was adopted";
  EXPECT_EQ(h.slurm.submissions_tagged(site.id, 1).size(), 1u);
}

// The decisions read the predecessor's run and remaining time on slurmctld's clock, its start's:
// fifteen minutes of fallback lead are fifteen minutes before the limit Slurm holds the job to,
// whichever way the two clocks run apart (ahead, the successor went ten minutes late and the
// chain waited; behind, ten minutes early and both were charged).
TEST(ControllerClock, TheFallbackLeadIsCountedOnSlurmctldsClock) {
  for (const Seconds ahead : {kLoginAhead, -kLoginAhead}) {
    ControllerConfig config = quick_config();
    config.fallback_lead = 15 * kMinute;
    Harness h(config);
    h.slurm.set_controller_clock_offset(ahead);
    auto req = simple_request(2, kHour);
    req.policy = "reactive";
    const auto id = h.controller->add(req).spec.id;
    h.tick();
    h.slurm.start(h.job_of(id, 0));
    h.tick();
    h.clock.advance(40 * kMinute);  // 20 minutes left
    h.tick();
    EXPECT_EQ(h.slurm.submissions().size(), 1u) << "slurmctld " << ahead << " s ahead";
    h.clock.advance(6 * kMinute);  // 14 minutes left
    h.tick();
    EXPECT_EQ(h.slurm.submissions().size(), 2u) << "slurmctld " << ahead << " s ahead";
  }
}

// A successor's recorded wait runs from its submission to its start, both on slurmctld's clock:
// with the login node ten minutes apart, an hour's wait is an hour, not 50 or 70 minutes.
TEST(ControllerClock, ASuccessorsRecordedWaitIsItsTimeInTheQueue) {
  testing::TempDir dir;
  const std::string waits = testing::write_short_waits(dir);
  for (const Seconds ahead : {kLoginAhead, -kLoginAhead}) {
    ControllerConfig config = quick_config();
    config.wait_distribution_file = waits;
    config.fallback_lead = 0;
    Harness h(config);
    h.slurm.set_controller_clock_offset(ahead);
    const auto id = h.controller->add(simple_request(1)).spec.id;
    h.tick();
    h.clock.advance(kHour);
    h.slurm.start(h.job_of(id, 0));
    h.tick();
    const auto recorded = h.store->started_waits(id, 10);
    ASSERT_EQ(recorded.size(), 1u) << "slurmctld " << ahead << " s ahead";
    EXPECT_EQ(recorded[0].wait, kHour) << "slurmctld " << ahead << " s ahead";
  }
}

// The store restored from `backup` and `passes` passes of the restarted daemon 30 s apart: job
// `ran`, segment k's run the copy did not know, is adopted as it, not submitted again.
void expect_unseen_run_adopted(Harness& h, const std::string& backup, int passes, std::int64_t id,
                               int k, JobId ran) {
  h.restore_store(backup);
  for (int i = 0; i < passes; ++i) {
    h.tick();
    h.clock.advance(30);
  }
  EXPECT_EQ(h.slurm.submissions_tagged(id, k).size(), 1u)
      << "segment " << k << " ran unseen and was submitted again";
  EXPECT_EQ(h.job_of(id, k), ran);
}

// Segment 1 of a store restored from before it was submitted ran and ended unseen; accounting
// keeps no comments, so it is found by its name and a submit time since the campaign began.
TEST(ControllerClock, ARestoredStoreFindsTheRunWhenTheLoginNodeRunsAhead) {
  ControllerConfig config = quick_config();
  config.fate_retry = 60;
  Harness h(config);
  h.slurm.set_accounting(true);
  h.slurm.set_accounting_keeps_comments(false);
  h.slurm.set_controller_clock_offset(-kLoginAhead);
  const auto id = h.controller->add(simple_request(3)).spec.id;
  h.tick();
  const JobId first = h.job_of(id, 0);
  h.slurm.start(first);
  h.tick();
  const std::string backup = h.copy_store();
  h.slurm.finish(first);
  h.tick();
  const JobId second = h.job_of(id, 1);
  h.slurm.start(second);
  h.tick();
  h.slurm.finish(second);
  h.slurm.forget(first);
  h.slurm.forget(second);
  h.clock.advance(600);
  expect_unseen_run_adopted(h, backup, 6, id, 1, second);
}

// A file's time is its file server's clock, which may follow this machine's rather than
// slurmctld's. The segment's output file, an earlier job's, written five minutes before the
// submission on the login node running ahead, reads as written after it on slurmctld's clock:
// taken for a run, the segment, which never started, would be skipped.
TEST(ControllerClock, AnOutputFileOlderThanTheSubmissionIsNoRunWhenTheLoginNodeRunsAhead) {
  ControllerConfig config = quick_config();
  config.fate_retry = 60;
  Harness h(config);
  h.slurm.set_controller_clock_offset(-kLoginAhead);
  const auto id = h.controller->add(simple_request(2)).spec.id;
  h.tick();
  const JobId job = h.job_of(id, 0);
  const std::string out = h.dir.file("slurm-" + std::to_string(job) + ".out");
  std::ofstream(out) << "an earlier job's lines\n";
  const utimbuf before{h.clock.now() - 5 * kMinute, h.clock.now() - 5 * kMinute};
  ASSERT_EQ(::utime(out.c_str(), &before), 0);
  h.slurm.set_std_out(job, out);
  h.tick();                                        // seen pending, its output file named
  h.slurm.finish(job, SlurmJobState::kCancelled);  // cancelled before it started
  h.slurm.forget(job);
  h.clock.advance(600);
  h.tick();
  h.tick();
  EXPECT_NE(h.seg(id, 0).seg.state, SegmentState::kDone)
      << "the segment was taken as run and skipped: " << h.seg(id, 0).message;
  EXPECT_TRUE(h.seg(id, 0).fate_unknown()) << "held until accounting or the user says";
  EXPECT_TRUE(h.slurm.submissions_tagged(id, 1).empty());
}

// A store restored from a copy taken before segment 0 was submitted; segment 0 ran and ended
// unseen a minute after the campaign began, its output file stamped on this machine's clock,
// slurmctld's ten minutes ahead. No accounting: the file is what says it ran.
TEST(ControllerClock, ARestoredStoreFindsTheRunsOutputFileWhenSlurmctldRunsAhead) {
  ControllerConfig config = quick_config();
  config.fate_retry = 60;
  Harness h(config);
  h.slurm.set_controller_clock_offset(kLoginAhead);
  testing::TempDir out;
  CampaignRequest r = simple_request(2);
  r.script = "#!/bin/bash\n#SBATCH --output=" + out.file("%x-%j.out") + "\nsleep 20\n";
  const auto id = h.controller->add(r).spec.id;
  const std::string backup = h.copy_store();
  h.clock.advance(60);
  h.tick();
  const JobId job = h.job_of(id, 0);
  h.slurm.start(job);
  const std::string file =
      out.file("train-s0-" + h.store->store_id() + "-" + std::to_string(job) + ".out");
  std::ofstream(file) << "step 1\n";
  const utimbuf now{h.clock.now(), h.clock.now()};
  ASSERT_EQ(::utime(file.c_str(), &now), 0);
  h.slurm.finish(job);
  h.slurm.forget(job);
  h.clock.advance(60);
  expect_unseen_run_adopted(h, backup, 4, id, 0, job);
}

}  // namespace
}  // namespace mirage::daemon

// A site whose job_submit plugin writes over --comment takes the tag off every job: the segment's
// job is followed by the id sbatch returned and its name, and a submission whose reply was lost is
// found by its name and submit time, so a campaign goes on with one job per segment.
#include <gtest/gtest.h>

#include "TestSupport.h"

namespace mirage::daemon {
namespace {

using testing::Harness;
using testing::quick_config;
using testing::simple_request;

// A campaign of two segments on a site that rewrites every comment, its first segment running.
struct RewritingSite {
  RewritingSite() : h(quick_config()) {
    h.slurm.rewrite_comments_to("project=ml");
    id = h.controller->add(simple_request(2)).spec.id;
    h.tick();
    first = h.job_of(id, 0);
    h.slurm.start(first);
    h.clock.advance(60);
    h.tick();  // followed by its id and name: the site is seen to rewrite comments
  }
  Harness h;
  std::int64_t id = 0;
  JobId first = 0;
};

TEST(RewrittenComment, SegmentsAreFollowedByTheirIdAndName) {
  RewritingSite site;
  Harness& h = site.h;
  const auto id = site.id;
  const JobId first = site.first;
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kRunning);
  h.slurm.finish(first);
  h.clock.advance(60);
  h.tick();
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
  EXPECT_FALSE(h.seg(id, 0).fate_unknown());
  EXPECT_EQ(h.slurm.submissions_tagged(id, 0).size(), 1u);
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 1u);
}

TEST(RewrittenComment, ASubmissionWhoseReplyWasLostIsFoundByItsName) {
  RewritingSite site;
  Harness& h = site.h;
  const auto id = site.id;
  h.slurm.lose_next_submit_reply();
  h.slurm.finish(site.first);
  h.clock.advance(60);
  h.tick();  // segment 1 submitted; its reply lost
  for (int i = 0; i < 4; ++i) {
    h.clock.advance(30);
    h.tick();
  }
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 1u) << "segment 1 was submitted twice";
  EXPECT_EQ(h.seg(id, 1).seg.state, SegmentState::kPending);
  EXPECT_FALSE(h.seg(id, 1).submitting);
}

TEST(RewrittenComment, TheFirstSubmissionWhoseReplyWasLostIsFoundByItsName) {
  // No rewrite seen yet: the very first job is the one whose reply is lost.
  Harness h(quick_config());
  h.slurm.rewrite_comments_to("project=ml");
  const auto id = h.controller->add(simple_request(2)).spec.id;
  h.slurm.lose_next_submit_reply();
  h.tick();
  for (int i = 0; i < 4; ++i) {
    h.clock.advance(30);
    h.tick();
  }
  EXPECT_EQ(h.slurm.submissions_tagged(id, 0).size(), 1u) << "segment 0 was submitted twice";
  EXPECT_FALSE(h.seg(id, 0).submitting);
  EXPECT_EQ(h.job_of(id, 0), h.slurm.submissions().front().job);
}

TEST(RewrittenComment, AnEarlierAttemptThatFailedAtOnceIsNotTakenForTheRetry) {
  RewritingSite site;
  Harness& h = site.h;
  const auto id = site.id;
  h.slurm.finish(site.first);
  h.clock.advance(60);
  h.tick();  // segment 1 submitted
  const JobId failed = h.job_of(id, 1);
  h.slurm.start(failed);
  h.slurm.finish(failed, SlurmJobState::kFailed, 1);  // its script fails at once
  h.slurm.lose_next_submit_reply();
  h.clock.advance(30);
  h.tick();  // seen failed: attempt 2 submitted, its reply lost
  for (int i = 0; i < 4; ++i) {
    h.clock.advance(30);
    h.tick();
  }
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 2u)
      << "the failed attempt was taken for the retry, and a third submitted beside the second";
  EXPECT_EQ(h.seg(id, 1).seg.attempts, 2);
  EXPECT_EQ(h.job_of(id, 1), h.slurm.submissions().back().job);
}

TEST(RewrittenComment, AccountingsRecordCarryingTheSitesCommentTellsHowTheSegmentEnded) {
  RewritingSite site;
  Harness& h = site.h;
  const auto id = site.id;
  h.slurm.set_accounting(true);
  h.slurm.finish(site.first, SlurmJobState::kFailed, 1);
  h.slurm.forget(site.first);  // purged before a dump showed it ended
  for (int i = 0; i < 4; ++i) {
    h.clock.advance(60);
    h.tick();
  }
  EXPECT_FALSE(h.seg(id, 0).fate_unknown());
  // Failed after it started: retried, or failed with its successor carrying on; not "done".
  EXPECT_NE(h.seg(id, 0).seg.state, SegmentState::kDone)
      << "accounting's FAILED was not read: " << h.seg(id, 0).message;
}

}  // namespace
}  // namespace mirage::daemon

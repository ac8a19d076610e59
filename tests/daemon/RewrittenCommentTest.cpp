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

}  // namespace
}  // namespace mirage::daemon

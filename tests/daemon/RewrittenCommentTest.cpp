// A site whose job_submit plugin writes over --comment takes the tag off every job: the segment's
// job is followed by the id sbatch returned and its name, and a submission whose reply was lost is
// found by its name and submit time, so a campaign goes on with one job per segment.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>

#include "TestSupport.h"

namespace mirage::daemon {
namespace {

using testing::Harness;
using testing::NeighbourStore;
using testing::quick_config;
using testing::simple_request;
using testing::submissions_of;

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

// A campaign cancelled while its segment runs, the cancel unanswered (slurmctld busy): the job,
// found by its id and name without its tag, is cancelled at the next tick, not left to its limit.
TEST(RewrittenComment, ARunningJobWhoseCancelGotNoAnswerIsCancelledAtTheNextTick) {
  RewritingSite site;
  Harness& h = site.h;
  const Actions a = h.controller->cancel(site.id);
  ASSERT_EQ(a.cancels.size(), 1u);
  h.controller->on_cancel_failed(a.cancels[0],
                                 SlurmError("Socket timed out on send/recv operation", 5004, true));
  h.tick();
  ASSERT_EQ(h.slurm.cancels().size(), 1u);
  EXPECT_EQ(h.slurm.cancels()[0], site.first);
  EXPECT_EQ(h.slurm.find(site.first)->state, SlurmJobState::kCancelled);
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

// Two stores of one user (two projects' `--store`) on one cluster whose site rewrites every
// comment, each with a campaign named "train" of two segments: their jobs are told apart by their
// names, which carry the store id, never taken one for the other's. `reactive`: each segment is
// submitted when its predecessor ends.
struct TwoStoresOneSite {
  TwoStoresOneSite() : h(quick_config()), neighbour(h) {
    h.slurm.rewrite_comments_to("project=ml");
    CampaignRequest r = simple_request(2);
    r.policy = "reactive";
    id = h.controller->add(r).spec.id;
    theirs = neighbour.controller.add(r).spec.id;
  }
  std::size_t ours_submitted(int k) const {
    return submissions_of(h.slurm, h.store->store_id(), id, k);
  }
  Harness h;
  NeighbourStore neighbour;
  std::int64_t id = 0;
  std::int64_t theirs = 0;
};

TEST(RewrittenComment, ALostSubmissionIsNotTakenForAnotherStoresJobOfTheSameCampaignName) {
  TwoStoresOneSite site;
  Harness& h = site.h;
  // This store's first sbatch times out before slurmctld made the job...
  h.slurm.set_on_submit([](FakeSlurmClient& slurm) { slurm.set_reachable(false); });
  h.tick();
  h.slurm.set_on_submit({});
  h.slurm.set_reachable(true);
  // ...and the other store's campaign of the same name submits its first segment meanwhile.
  site.neighbour.tick();
  const JobId neighbours = site.neighbour.job_of(site.theirs, 0);
  for (int i = 0; i < 4; ++i) {
    h.clock.advance(30);
    h.tick();
    site.neighbour.tick();
  }
  EXPECT_NE(h.job_of(site.id, 0), neighbours)
      << "the other store's job was adopted for this store's lost submission";
  EXPECT_EQ(site.ours_submitted(0), 1u) << "the lost submission was not made again";
  EXPECT_EQ(site.neighbour.job_of(site.theirs, 0), neighbours);
  // Cancelling this store's campaign cancels its own job, not the other store's.
  perform_actions(*h.controller, h.slurm, h.controller->cancel(site.id));
  h.tick();
  const auto& cancels = h.slurm.cancels();
  EXPECT_EQ(std::count(cancels.begin(), cancels.end(), neighbours), 0)
      << "the other store's job was cancelled with this store's campaign";
}

TEST(RewrittenComment, AnotherStoresRunOfTheSameCampaignNameIsNotTakenForAnUnseenRun) {
  TwoStoresOneSite site;
  Harness& h = site.h;
  h.slurm.set_accounting(true);
  h.tick();
  const JobId first = h.job_of(site.id, 0);
  h.slurm.start(first);
  h.tick();  // the site's rewrite seen: accounting's records are told by their names
  // The other store's campaign runs both segments to their end; slurmctld forgets them.
  for (int k = 0; k < 2; ++k) {
    site.neighbour.tick();
    const JobId job = site.neighbour.job_of(site.theirs, k);
    h.slurm.start(job);
    site.neighbour.tick();
    h.slurm.finish(job);
    site.neighbour.tick();
    h.slurm.forget(job);
  }
  // Before submitting segment 1, this store asks accounting whether it already ran unseen (a
  // store restored from an earlier copy): the other store's segment 1 is not this one's.
  h.slurm.finish(first);
  for (int i = 0; i < 3; ++i) {
    h.clock.advance(30);
    h.tick();
  }
  EXPECT_EQ(site.ours_submitted(1), 1u)
      << "the other store's run was taken for segment 1, which never ran: "
      << h.seg(site.id, 1).message;
  EXPECT_EQ(h.controller->counters().earlier_runs, 0u);
}

// A store of schema 6, the release before job names carried the store id: its campaign's
// segment 0 was submitted as `train-s0` and the daemon died before sbatch's reply.
TEST(RewrittenComment, AJobInFlightUnderTheNameOfBeforeIsFoundAfterAnUpgrade) {
  Harness h(quick_config());
  h.slurm.rewrite_comments_to("project=ml");
  const auto id = h.controller->add(simple_request(2)).spec.id;
  h.tick(/*perform=*/false);  // the intent committed
  SlurmJob submitted;
  submitted.name = "train-s0";
  submitted.comment = "project=ml";
  const JobId before = h.slurm.add_job(submitted);
  h.controller.reset();
  h.store.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(h.path.c_str(), &db), SQLITE_OK);
  const char* to_schema_6 =
      "ALTER TABLE campaigns DROP COLUMN sbatch_ignores_pbs; "
      "ALTER TABLE campaigns DROP COLUMN job_names_carry_store; ALTER TABLE submissions DROP "
      "COLUMN twin_job; ALTER TABLE segments DROP COLUMN signal_sent_at; ALTER TABLE segments "
      "DROP COLUMN cancel_sent_at; PRAGMA user_version=6;";
  EXPECT_EQ(sqlite3_exec(db, to_schema_6, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  h.restart();  // the new release on the old store
  for (int i = 0; i < 4; ++i) {
    h.clock.advance(30);
    h.tick();
  }
  EXPECT_EQ(h.job_of(id, 0), before) << "the job of before was not found by its name";
  EXPECT_TRUE(h.slurm.submissions().empty()) << "segment 0 was submitted a second time";
  h.slurm.start(before);
  h.tick();
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kRunning) << "no longer followed by its name";
  h.slurm.finish(before);
  h.tick();
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
  ASSERT_EQ(h.slurm.submissions().size(), 1u);
  EXPECT_EQ(h.slurm.submissions()[0].request.name, "train-s1")
      << "a campaign of before keeps its names to its end";
}

}  // namespace
}  // namespace mirage::daemon

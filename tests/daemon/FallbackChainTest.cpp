// The fallback chain: the successor waits in Slurm behind its running predecessor
// (--dependency=afterany), so the campaign goes on reactively when mirage stops; the policy's
// decision releases it early instead of submitting anew. Caps stop a runaway chain.
#include <gtest/gtest.h>
#include <sys/time.h>

#include <fstream>

#include "TestSupport.h"

namespace mirage::daemon {
namespace {

using testing::Harness;
using testing::Scripted;
using testing::simple_request;

ControllerConfig chain_config() {
  ControllerConfig c;
  c.fallback_chain = true;
  c.fallback_lead = 0;
  c.decision_interval = 600;
  return c;
}

struct Chain {
  Scripted policy;
  Harness h;
  std::int64_t id = 0;
  explicit Chain(int segments = 3, ControllerConfig config = chain_config(),
                 Seconds limit = 10 * kHour)
      : h(config, policy.factory()) {
    auto r = simple_request(segments, limit);
    r.policy = "scripted";
    id = h.controller->add(r).spec.id;
    h.tick();  // segment 0
    h.slurm.start(h.job_of(id, 0));
    h.tick();  // it runs: the policy waits, segment 1 is queued behind it
  }
};

TEST(FallbackChain, TheSuccessorIsQueuedBehindTheRunningSegmentAtOnce) {
  Chain c;
  const JobId first = c.h.job_of(c.id, 0);
  EXPECT_EQ(c.policy.asked, 1);  // asked first: a policy that says go submits it free
  const auto tagged = c.h.slurm.submissions_tagged(c.id, 1);
  ASSERT_EQ(tagged.size(), 1u);
  EXPECT_EQ(tagged[0].request.after_any, first);
  EXPECT_TRUE(c.h.slurm.held(tagged[0].job));
  const SegmentRecord& s = c.h.seg(c.id, 1);
  EXPECT_EQ(s.seg.state, SegmentState::kPending);
  EXPECT_EQ(s.held_behind, first);
  EXPECT_TRUE(s.held());
  EXPECT_NE(c.h.store->submissions(c.id).at(1).reason.find("fallback chain: queued behind "
                                                           "segment 0"),
            std::string::npos);
  // One pending successor: nothing more is submitted while it waits.
  c.h.clock.advance(kHour);
  c.h.tick();
  EXPECT_EQ(c.h.slurm.submissions().size(), 2u);
}

TEST(FallbackChain, ThePolicysDecisionReleasesItInsteadOfSubmittingAnew) {
  Chain c;
  const JobId held = c.h.job_of(c.id, 1);
  c.policy.submit = true;
  c.h.clock.advance(300);
  EXPECT_TRUE(c.h.tick().releases.empty());  // within the decision interval
  c.h.clock.advance(300);
  const Actions a = c.h.tick();
  ASSERT_EQ(a.releases.size(), 1u);
  EXPECT_EQ(a.releases[0].job, held);
  EXPECT_TRUE(a.submits.empty());
  EXPECT_EQ(c.h.slurm.releases(), std::vector<JobId>{held});
  EXPECT_FALSE(c.h.slurm.held(held));
  EXPECT_EQ(c.h.seg(c.id, 1).released_at, c.h.clock.now());
  EXPECT_EQ(c.h.store->submissions(c.id).at(1).reason.substr(0, 15), "fallback chain:");
  EXPECT_NE(c.h.store->submissions(c.id).at(1).reason.find("; released: scripted:"),
            std::string::npos);
  // Released once: later ticks neither release nor ask again.
  c.h.clock.advance(kHour);
  EXPECT_TRUE(c.h.tick().empty());
  EXPECT_EQ(c.policy.asked, 2);
  EXPECT_EQ(c.h.controller->counters().releases, 1u);
}

TEST(FallbackChain, TheFallbackLeadReleasesIt) {
  ControllerConfig config = chain_config();
  config.fallback_lead = 120;
  Chain c(3, config, kHour);
  c.h.clock.advance(kHour - 100);
  const Actions a = c.h.tick();
  ASSERT_EQ(a.releases.size(), 1u);
  EXPECT_NE(c.h.store->submissions(c.id).at(1).reason.find("released: fallback: segment 0 "
                                                           "reaches its limit"),
            std::string::npos);
}

TEST(FallbackChain, WithoutMirageTheSuccessorStartsWhenItsPredecessorEnds) {
  Chain c;
  const JobId first = c.h.job_of(c.id, 0);
  const JobId second = c.h.job_of(c.id, 1);
  // mirage is gone: Slurm alone ends the first and starts the second (afterany is met).
  c.h.clock.advance(10 * kHour);
  c.h.slurm.finish(first, SlurmJobState::kTimeout);
  EXPECT_FALSE(c.h.slurm.held(second));
  c.h.slurm.start(second);
  // mirage is back: it follows, and queues the third behind the second; nothing is released.
  const Actions a = c.h.tick();
  EXPECT_TRUE(a.releases.empty());
  EXPECT_EQ(c.h.seg(c.id, 0).seg.state, SegmentState::kDone);
  EXPECT_EQ(c.h.seg(c.id, 1).seg.state, SegmentState::kRunning);
  ASSERT_EQ(a.submits.size(), 1u);
  EXPECT_EQ(a.submits[0].request.after_any, second);
  EXPECT_EQ(c.h.slurm.submissions().size(), 3u);
}

TEST(FallbackChain, AHeldSuccessorStaysAfterARestartAndIsReleasedOnce) {
  Chain c;
  c.h.restart();
  EXPECT_TRUE(c.h.seg(c.id, 1).held());
  c.policy.submit = true;
  c.h.clock.advance(600);
  EXPECT_EQ(c.h.tick().releases.size(), 1u);
  c.h.restart();
  EXPECT_FALSE(c.h.seg(c.id, 1).held());
  c.h.clock.advance(600);
  EXPECT_TRUE(c.h.tick().empty());
  EXPECT_EQ(c.h.slurm.submissions().size(), 2u);
}

TEST(FallbackChain, SegmentsThatFailOneAfterAnotherStopTheChain) {
  Scripted policy;
  Harness h(chain_config(), policy.factory());
  auto r = simple_request(0, kHour);  // open-ended: only the failures can stop it
  r.policy = "scripted";
  r.max_retries = 1;
  const auto id = h.controller->add(r).spec.id;
  h.tick();
  // A script that fails at once: each segment starts, fails, and Slurm starts the one behind it.
  for (int k = 0; k < 2; ++k) {
    h.slurm.start(h.job_of(id, k));
    h.tick();  // running: the next is queued behind it
    ASSERT_EQ(h.seg(id, k + 1).held_behind, h.job_of(id, k));
    h.clock.advance(30);
    h.slurm.finish(h.job_of(id, k), SlurmJobState::kFailed, 3);
    h.tick();
  }
  const CampaignRecord& rec = h.campaign(id);
  EXPECT_EQ(rec.state, CampaignState::kFailed);
  EXPECT_EQ(rec.message.substr(0, 46), "2 segments in a row failed (segments 0 to 1); ");
  EXPECT_NE(rec.message.find("FAILED, exit code 3"), std::string::npos);
  // The third, queued behind the second, is cancelled with the campaign.
  EXPECT_EQ(h.seg(id, 2).seg.state, SegmentState::kFailed);
  EXPECT_EQ(h.slurm.cancels(), std::vector<JobId>{h.job_of(id, 2)});
  EXPECT_EQ(h.slurm.submissions().size(), 3u);
}

TEST(FallbackChain, OneFailureIsCarriedOnByTheSuccessorBehindIt) {
  Chain c;
  c.h.slurm.finish(c.h.job_of(c.id, 0), SlurmJobState::kNodeFail);
  c.h.slurm.start(c.h.job_of(c.id, 1));
  c.h.tick();
  EXPECT_EQ(c.h.campaign(c.id).state, CampaignState::kActive);
  EXPECT_EQ(c.h.seg(c.id, 0).seg.state, SegmentState::kFailed);
  EXPECT_EQ(c.h.seg(c.id, 1).seg.state, SegmentState::kRunning);
  EXPECT_EQ(c.h.seg(c.id, 2).held_behind, c.h.job_of(c.id, 1));
}

TEST(FallbackChain, MaxHoursStopsTheChain) {
  Scripted policy;
  Harness h(chain_config(), policy.factory());
  auto r = simple_request(0, kHour);
  r.policy = "scripted";
  r.max_hours = 1.5;
  const auto id = h.controller->add(r).spec.id;
  h.tick();
  h.slurm.start(h.job_of(id, 0));
  h.tick();  // one hour committed of 1.5: the second is queued behind the first
  ASSERT_EQ(h.slurm.submissions().size(), 2u);
  h.clock.advance(kHour);
  h.slurm.finish(h.job_of(id, 0), SlurmJobState::kTimeout);
  h.slurm.start(h.job_of(id, 1));
  h.tick();  // two hours committed: no third
  EXPECT_EQ(h.slurm.submissions().size(), 2u);
  EXPECT_EQ(h.campaign(id).state, CampaignState::kActive);
  h.clock.advance(kHour);
  h.slurm.finish(h.job_of(id, 1), SlurmJobState::kTimeout);
  h.tick();
  EXPECT_EQ(h.campaign(id).state, CampaignState::kDone);
  EXPECT_EQ(h.campaign(id).message, "reached --max-hours 1.5: the segments ran 2.0 h");
  EXPECT_EQ(h.slurm.submissions().size(), 2u);
}

TEST(FallbackChain, MaxHoursOutOfRangeIsRefused) {
  Harness h(chain_config());
  auto r = simple_request(2);
  r.max_hours = -1;
  EXPECT_NE(testing::refusal_of(*h.controller, r).find("max_hours: expected"), std::string::npos);
}

TEST(FallbackChain, ASegmentThatStartedAfterTheDoneFileWasWrittenIsCancelled) {
  Scripted policy;
  Harness h(chain_config(), policy.factory());
  auto r = simple_request(0, kHour);
  r.policy = "scripted";
  r.done_file = h.dir.file("done");
  const auto id = h.controller->add(r).spec.id;
  h.tick();
  h.slurm.start(h.job_of(id, 0));
  h.tick();
  const JobId second = h.job_of(id, 1);
  // The first segment writes the done file and ends; Slurm starts the second behind it.
  h.clock.advance(kHour);
  std::ofstream(r.done_file) << "done\n";
  const timeval at[2] = {{h.clock.now(), 0}, {h.clock.now(), 0}};
  ASSERT_EQ(::utimes(r.done_file.c_str(), at), 0);
  h.slurm.finish(h.job_of(id, 0), SlurmJobState::kCompleted);
  h.clock.advance(5);
  h.slurm.start(second);
  const Actions a = h.tick();
  ASSERT_EQ(a.cancels.size(), 1u);
  EXPECT_EQ(a.cancels[0].job, second);
  EXPECT_EQ(h.seg(id, 1).message, "cancelled: it started after the done file was written");
  EXPECT_EQ(h.campaign(id).state, CampaignState::kDone);
  EXPECT_EQ(h.campaign(id).message, "segment 0 created the done file " + r.done_file);
}

// The chain's submission of segment 1 goes unanswered, its resend is refused for now, and
// slurmctld makes the first try's job late, held behind segment 0. When the retry's decision is to
// submit it free while segment 0 runs, the job found is released, not left held until segment 0
// ends.
TEST(FallbackChain, ALateJobHeldByALostTryIsReleasedWhenTheRetryDecidesToSubmit) {
  Scripted policy;
  ControllerConfig config = chain_config();
  config.retry_delay = kHour;
  Harness h(config, policy.factory());
  auto r = simple_request(3, 10 * kHour);
  r.policy = "scripted";
  const auto id = h.controller->add(r).spec.id;
  h.tick();
  const JobId first = h.job_of(id, 0);
  h.slurm.start(first);
  const Actions chained = h.tick(/*perform=*/false);
  ASSERT_EQ(chained.submits.size(), 1u);
  ASSERT_EQ(chained.submits[0].request.after_any, first);
  testing::lose_reply_then_refuse_for_now(h, chained.submits[0], config.reconcile_delay);
  ASSERT_EQ(h.seg(id, 1).seg.state, SegmentState::kPlanned);
  const JobId late = h.slurm.create_job(chained.submits[0].request);  // held behind segment 0
  policy.submit = true;
  h.clock.advance(config.retry_delay);
  h.tick();  // the retry's decision: submit now; the late job is followed
  ASSERT_EQ(h.job_of(id, 1), late);
  EXPECT_FALSE(h.slurm.held(late));
  EXPECT_EQ(h.slurm.releases(), std::vector<JobId>{late});
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 0u);
}

TEST(FallbackChain, AReleaseThatDoesNotReachSlurmIsTriedAgain) {
  Chain c;
  c.policy.submit = true;
  c.h.clock.advance(600);
  const Actions a = c.h.tick(/*perform=*/false);
  ASSERT_EQ(a.releases.size(), 1u);
  c.h.slurm.set_reachable(false);
  perform_actions(*c.h.controller, c.h.slurm, a);
  EXPECT_TRUE(c.h.seg(c.id, 1).held());  // the controller did not answer: still held
  c.h.slurm.set_reachable(true);
  c.h.clock.advance(600);
  EXPECT_EQ(c.h.tick().releases.size(), 1u);
  EXPECT_EQ(c.h.slurm.releases().size(), 1u);
}

TEST(FallbackChain, OffByTheCampaignSubmitsOnlyWhenThePolicyDecides) {
  Scripted policy;
  Harness h(chain_config(), policy.factory());
  auto r = simple_request(3, 10 * kHour);
  r.policy = "scripted";
  r.fallback_chain = false;
  const auto id = h.controller->add(r).spec.id;
  h.tick();
  h.slurm.start(h.job_of(id, 0));
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  policy.submit = true;
  h.clock.advance(600);
  h.tick();
  ASSERT_EQ(h.slurm.submissions().size(), 2u);
  EXPECT_EQ(h.slurm.submissions()[1].request.after_any, 0);
}

}  // namespace
}  // namespace mirage::daemon

// The campaign lifecycle, the decisions and the crash-safety of submissions, with the fake Slurm.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <stdexcept>
#include <utility>

#include "TestSupport.h"
#include "mirage/agents/Baselines.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/agents/RiskFrontier.h"
#include "mirage/agents/WaitDistribution.h"
#include "mirage/agents/learned/ModelPolicyHook.h"
#include "mirage/core/Error.h"
#include "mirage/daemon/campaigns/DefaultPolicy.h"
#include "mirage/daemon/control/ControlProtocol.h"

namespace mirage::daemon {
namespace {

using testing::Harness;
using testing::quick_config;
using testing::Scripted;
using testing::simple_request;

TEST(CampaignController, SubmitsTheFirstSegmentAtOnceTaggedAndComplete) {
  Harness h(quick_config());
  auto req = simple_request(3);
  req.shape.partition = "gpu";
  req.shape.account = "proj";
  req.environment = {"FOO=bar"};
  const auto id = h.controller->add(req).spec.id;
  const Actions a = h.tick();
  ASSERT_EQ(a.submits.size(), 1u);
  ASSERT_EQ(h.slurm.submissions().size(), 1u);
  const SubmitRequest& r = h.slurm.submissions()[0].request;
  EXPECT_EQ(r.comment, JobTag({h.store->store_id(), id, 0, 1}).str());
  EXPECT_EQ(r.script, req.script);
  EXPECT_EQ(r.time_limit, kHour);
  EXPECT_EQ(r.nodes, 1);
  EXPECT_EQ(r.gpus_per_node, 4);
  EXPECT_EQ(r.partition, "gpu");
  EXPECT_EQ(r.account, "proj");
  EXPECT_EQ(r.name, "train-s0-" + h.store->store_id());
  EXPECT_EQ(r.work_dir, "/tmp");
  EXPECT_NE(std::find(r.environment.begin(), r.environment.end(), "FOO=bar"), r.environment.end());
  EXPECT_NE(std::find(r.environment.begin(), r.environment.end(), "MIRAGE_SEGMENT=0"),
            r.environment.end());
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kPending);
  EXPECT_EQ(h.job_of(id, 0), h.slurm.submissions()[0].job);
}

// A `campaign add` run inside a segment carries that segment's MIRAGE_* values; sbatch reads the
// first of a name twice given (the script's --export=NONE or a name list), so the daemon's must be
// the only ones: a stale MIRAGE_DONE_FILE would end every new segment as done.
TEST(CampaignController, TheDaemonsMirageVariablesReplaceTheUsersStaleOnes) {
  Harness h(quick_config());
  auto req = simple_request(3);
  req.environment = {"MIRAGE_DONE_FILE=/old/done", "MIRAGE_SEGMENT=7", "MIRAGE_HANDOFF=1",
                     "MIRAGE_TRACES=/traces", "FOO=bar"};
  const auto& rec = h.controller->add(req);
  const std::string done = rec.done_file;
  h.tick();
  ASSERT_EQ(h.slurm.submissions().size(), 1u);
  const auto& env = h.slurm.submissions()[0].request.environment;
  auto count = [&](const std::string& prefix) {
    return std::count_if(env.begin(), env.end(),
                         [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  };
  EXPECT_EQ(count("MIRAGE_DONE_FILE="), 1);
  EXPECT_EQ(count("MIRAGE_DONE_FILE=" + done), 1);
  EXPECT_EQ(count("MIRAGE_SEGMENT="), 1);
  EXPECT_EQ(count("MIRAGE_SEGMENT=0"), 1);
  EXPECT_EQ(count("MIRAGE_HANDOFF="), 0);  // a concurrent campaign: nobody hands off
  EXPECT_EQ(count("MIRAGE_TRACES=/traces"), 1);
  EXPECT_EQ(count("FOO=bar"), 1);
}

// A hand-off successor that stops waiting before its predecessor is signalled and, past the
// grace, cancelled exits as locked: each segment is told how long that may take, never less than
// the trainer's own default, and `campaign add` says so where that default would be too short.
TEST(CampaignController, AHandoffSegmentIsToldToWaitAsLongAsSignalAndCancelMayTake) {
  auto config = quick_config();
  config.tick_interval = 2 * kMinute;
  Harness h(config);
  const auto wait_of = [&](const CampaignRequest& req, std::vector<std::string>& notes) {
    h.controller->add(req, &notes);
    h.tick();
    const auto& env = h.slurm.submissions().back().request.environment;
    for (const auto& e : env)
      if (e.rfind("MIRAGE_HANDOFF_WAIT=", 0) == 0) return e.substr(e.find('=') + 1);
    return std::string("(none)");
  };
  auto req = simple_request(2);
  req.overlap = OverlapMode::kHandoff;
  req.handoff_grace = 20 * kMinute;
  std::vector<std::string> notes;
  const Seconds needed = 2 * config.tick_interval + *req.handoff_grace + kMinute;
  EXPECT_EQ(wait_of(req, notes), std::to_string(needed));
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes[0],
            "hand-off: a successor may wait 25m for its predecessor ([poll] interval 2m twice, "
            "--handoff-grace 20m, a minute for Slurm's kill), over mirage-train-gpt's default "
            "--handoff-timeout of 15m: each segment gets MIRAGE_HANDOFF_WAIT=1500, which "
            "training_jobs/sbatch/gpt-segment.sbatch passes on; a script of your own must wait "
            "that long, or lower --handoff-grace or [poll] interval");
  req.handoff_grace = kMinute;  // the trainer's default is enough: no note, and that default
  req.name = "short-grace";
  EXPECT_EQ(wait_of(req, notes), std::to_string(kTrainerHandoffWait));
  EXPECT_EQ(notes[0].rfind("hand-off", 0), std::string::npos) << notes[0];
}

// `[handoff] grace` in the daemon's config is the grace of every campaign added without
// --handoff-grace; a campaign's own is kept.
TEST(CampaignController, ACampaignWithoutAGraceOfItsOwnTakesTheConfigsHandoffGrace) {
  auto config = quick_config();
  config.handoff_grace = 12 * kMinute;
  Harness h(config);
  auto req = simple_request(2);
  req.overlap = OverlapMode::kHandoff;
  EXPECT_EQ(h.controller->add(req).spec.handoff_grace, 12 * kMinute);
  req.name = "own-grace";
  req.handoff_grace = 2 * kMinute;
  EXPECT_EQ(h.controller->add(req).spec.handoff_grace, 2 * kMinute);
}

TEST(CampaignController, ReactiveRunsTheChainToTheEnd) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(3)).spec.id;
  for (int k = 0; k < 3; ++k) {
    h.tick();
    ASSERT_EQ(h.slurm.submissions().size(), static_cast<std::size_t>(k + 1));
    const JobId j = h.job_of(id, k);
    h.tick();  // pending: nothing new (one queued segment at a time)
    EXPECT_EQ(h.slurm.submissions().size(), static_cast<std::size_t>(k + 1));
    h.clock.advance(30);
    h.slurm.start(j);
    h.tick();
    EXPECT_EQ(h.seg(id, k).seg.state, SegmentState::kRunning);
    h.clock.advance(600);
    h.tick();  // running, reactive waits
    EXPECT_EQ(h.slurm.submissions().size(), static_cast<std::size_t>(k + 1));
    h.slurm.finish(j, SlurmJobState::kTimeout);
    h.clock.advance(10);
  }
  h.tick();
  EXPECT_EQ(h.campaign(id).state, CampaignState::kDone);
  EXPECT_EQ(h.slurm.submissions().size(), 3u);
  EXPECT_EQ(h.campaign(id).segments_done(), 3);
}

TEST(CampaignController, FallbackSubmitsBeforeThePredecessorsLimit) {
  auto cfg = quick_config();
  cfg.fallback_lead = 120;
  Harness h(cfg);
  const auto id = h.controller->add(simple_request(2)).spec.id;
  h.tick();
  h.slurm.start(h.job_of(id, 0));
  h.tick();
  h.clock.advance(kHour - 121);
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  h.clock.advance(1);
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 2u);
}

TEST(CampaignController, AsksThePolicyEveryDecisionIntervalAndSubmitsWhenItSaysSo) {
  Scripted p;
  Harness h(quick_config(), p.factory());
  auto req = simple_request(2, 10 * kHour);
  req.policy = "scripted";
  const auto id = h.controller->add(req).spec.id;
  h.tick();
  h.tick();
  EXPECT_EQ(p.asked, 0);  // predecessor pending: no decision
  h.slurm.start(h.job_of(id, 0));
  h.tick();
  EXPECT_EQ(p.asked, 1);
  h.clock.advance(300);
  h.tick();
  EXPECT_EQ(p.asked, 1);  // within the decision interval
  h.clock.advance(300);
  h.tick();
  EXPECT_EQ(p.asked, 2);
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  p.submit = true;
  h.clock.advance(600);
  h.tick();
  EXPECT_EQ(p.asked, 3);
  ASSERT_EQ(h.slurm.submissions().size(), 2u);
  EXPECT_EQ(h.seg(id, 1).seg.state, SegmentState::kPending);
  // The successor is queued: nothing more to decide.
  h.clock.advance(600);
  h.tick();
  EXPECT_EQ(p.asked, 3);
  const auto decisions = h.store->decisions(id, 10);
  ASSERT_EQ(decisions.size(), 3u);
  EXPECT_EQ(decisions.back().action, "submit");
  EXPECT_EQ(decisions.front().action, "wait");
}

TEST(CampaignController, EarliestSubmissionWindowHoldsAnEagerPolicyBack) {
  Scripted p;
  p.submit = true;
  auto cfg = quick_config();
  cfg.earliest_submission = 2 * kHour;
  Harness h(cfg, p.factory());
  auto req = simple_request(2, 10 * kHour);
  req.policy = "scripted";
  const auto id = h.controller->add(req).spec.id;
  h.tick();
  h.slurm.start(h.job_of(id, 0));
  for (int i = 0; i < 47; ++i) {  // 8 h - 10 min of running: more than 2 h left
    h.tick();
    h.clock.advance(600);
  }
  EXPECT_EQ(p.asked, 0);
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  h.clock.advance(600);
  h.tick();
  EXPECT_EQ(p.asked, 1);
  EXPECT_EQ(h.slurm.submissions().size(), 2u);
}

TEST(CampaignController, AverageBaselineSubmitsWhenRemainingFallsBelowTheMeanWait) {
  Harness h(quick_config());
  // Background: 10 jobs that each waited 1 h.
  for (int i = 0; i < 10; ++i) {
    SlurmJob j;
    j.submit = h.clock.now() - 2 * kHour;
    j.state = SlurmJobState::kRunning;
    j.start = h.clock.now() - kHour;
    j.time_limit = 4 * kHour;
    h.slurm.add_job(j);
  }
  auto req = simple_request(2, 4 * kHour);
  req.policy = "average";
  const auto id = h.controller->add(req).spec.id;
  h.tick();
  h.slurm.start(h.job_of(id, 0));
  h.tick();
  h.clock.advance(2 * kHour);
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 1u);  // 2 h left > 1 h mean wait
  // The campaign's own segment started at once: the mean of the last 11 waits is 54.5 min.
  h.clock.advance(kHour + 60);
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 1u);  // 59 min left
  h.clock.advance(600);
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 2u);  // 49 min left
}

TEST(CampaignController, ResubmitsASegmentThatFailedToStartThenGivesUp) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  h.tick();
  for (int attempt = 1; attempt <= 3; ++attempt) {
    ASSERT_EQ(h.slurm.submissions().size(), static_cast<std::size_t>(attempt));
    EXPECT_EQ(h.slurm.submissions().back().request.comment,
              JobTag({h.store->store_id(), id, 0, attempt}).str());
    h.slurm.finish(h.job_of(id, 0), SlurmJobState::kCancelled);  // cancelled while pending
    h.clock.advance(10);
    h.tick();  // seen ended without starting: submitted again at once
  }
  EXPECT_EQ(h.campaign(id).state, CampaignState::kFailed);
  EXPECT_NE(h.campaign(id).message.find("after 3 attempts"), std::string::npos);
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 3u);
}

TEST(CampaignController, AFailedSegmentIsRetriedThenTheCampaignGoesOn) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  h.tick();
  h.slurm.start(h.job_of(id, 0));
  h.tick();
  h.slurm.finish(h.job_of(id, 0), SlurmJobState::kNodeFail);
  h.tick();
  ASSERT_EQ(h.slurm.submissions().size(), 2u);
  EXPECT_EQ(h.slurm.submissions()[1].request.name, "train-s0-" + h.store->store_id());
  EXPECT_EQ(h.seg(id, 0).seg.attempts, 2);
  h.slurm.start(h.job_of(id, 0));
  h.tick();
  h.slurm.finish(h.job_of(id, 0));
  h.tick();
  ASSERT_EQ(h.slurm.submissions().size(), 3u);
  EXPECT_EQ(h.slurm.submissions()[2].request.name, "train-s1-" + h.store->store_id());
}

TEST(CampaignController, RefusedSubmissionIsRetriedAfterADelay) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(1)).spec.id;
  h.slurm.refuse_next_submit("Invalid partition name specified");
  h.tick();
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kPlanned);
  EXPECT_NE(h.seg(id, 0).message.find("Invalid partition"), std::string::npos);
  h.tick();
  EXPECT_EQ(h.slurm.counters().submits, 1u);  // not before retry_delay
  h.clock.advance(61);
  h.tick();
  EXPECT_EQ(h.slurm.counters().submits, 2u);
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kPending);
}

// A submit limit reached (the user's other jobs), a controller too busy: the segment waits,
// later and later, saying why, and spends no retry: the campaign does not fail for it, and the
// attempt is the same one once Slurm takes it.
TEST(CampaignController, ASubmissionRefusedForNowWaitsWithoutSpendingARetry) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(1)).spec.id;
  const std::string limit =
      "QOSMaxSubmitJobPerUserLimit; Job violates accounting/QOS policy (job submit limit, user's "
      "size and/or time limits)";
  Seconds waited = 0;
  for (int i = 1; i <= 2 * (h.config_.max_retries + 1); ++i) {
    h.slurm.refuse_next_submit(limit, /*for_now=*/true);
    h.tick();
    ASSERT_EQ(h.slurm.counters().submits, static_cast<std::uint64_t>(i));
    EXPECT_EQ(h.campaign(id).state, CampaignState::kActive) << "after refusal " << i;
    EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kPlanned);
    EXPECT_EQ(h.seg(id, 0).seg.attempts, 0) << "a retry was spent";
    const std::string& why = h.seg(id, 0).message;
    EXPECT_NE(why.find("Slurm refuses submissions for now"), std::string::npos) << why;
    EXPECT_NE(why.find("QOSMaxSubmitJobPerUserLimit"), std::string::npos) << why;
    EXPECT_NE(why.find("no retry spent"), std::string::npos) << why;
    // Not before the backoff, which grows with each refusal in a row.
    const Seconds backoff = h.config_.retry_delay << std::min(i - 1, 4);
    h.clock.advance(backoff - 1);
    h.tick();
    EXPECT_EQ(h.slurm.counters().submits, static_cast<std::uint64_t>(i)) << "before the backoff";
    h.clock.advance(1);
    waited += backoff;
  }
  EXPECT_GT(waited, 3 * h.config_.retry_delay);
  h.tick();  // Slurm takes it now
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kPending);
  EXPECT_EQ(h.seg(id, 0).seg.attempts, 1);
  EXPECT_TRUE(h.seg(id, 0).message.empty()) << h.seg(id, 0).message;
  ASSERT_EQ(h.store->submissions(id).size(), 1u);
  EXPECT_EQ(h.store->submissions(id).front().job, h.job_of(id, 0));
}

// An error other than Slurm's while submitting (a file system error looking for earlier runs,
// memory): the submission's outcome is unknown, settled by the job's tag as a lost reply is, and
// the batch's other actions still get theirs.
TEST(CampaignController, AnUnexpectedErrorOnASubmitLeavesItsOutcomeUnknownNotTheCampaignStuck) {
  Harness h(quick_config());
  h.controller->add(simple_request(1, kHour, "a"));
  h.controller->add(simple_request(1, kHour, "b"));
  bool thrown = false;
  h.slurm.set_on_submit([&thrown](FakeSlurmClient&) {
    if (!std::exchange(thrown, true)) throw std::runtime_error("readdir: Input/output error");
  });
  const Actions batch = h.tick();
  ASSERT_EQ(batch.submits.size(), 2u);
  ASSERT_TRUE(thrown);
  const auto failed = batch.submits[0].campaign, other = batch.submits[1].campaign;
  EXPECT_GT(h.job_of(other, 0), 0) << "the batch's other submit got no outcome";
  EXPECT_EQ(h.controller->in_flight(), 0u);
  EXPECT_TRUE(h.seg(failed, 0).submitting);
  h.clock.advance(h.config_.reconcile_delay);
  h.tick();  // not found by its tag: submitted again
  EXPECT_GT(h.job_of(failed, 0), 0);
  h.clock.advance(h.config_.decision_interval);
  h.tick();
  EXPECT_EQ(h.slurm.submissions_tagged(failed, 0).size(), 1u);
  EXPECT_EQ(h.slurm.submissions_tagged(other, 0).size(), 1u);
}

// A refusal that waiting does not lift (a bad option) still spends the retries and fails.
TEST(CampaignController, ARealRefusalStillFailsTheCampaignAfterItsRetries) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(1)).spec.id;
  for (int i = 0; i <= h.config_.max_retries; ++i) {
    h.slurm.refuse_next_submit("Invalid account or account/partition combination specified");
    h.tick();
    h.clock.advance(h.config_.retry_delay);
  }
  EXPECT_EQ(h.campaign(id).state, CampaignState::kFailed);
  EXPECT_NE(h.campaign(id).message.find("refused by Slurm after"), std::string::npos);
}

TEST(CampaignController, CrashAfterTheIntentBeforeSubmittingSubmitsOnce) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  const Actions a = h.tick(/*perform=*/false);  // intent committed, then the daemon dies
  ASSERT_EQ(a.submits.size(), 1u);
  EXPECT_TRUE(h.seg(id, 0).submitting);
  h.restart();
  EXPECT_TRUE(h.seg(id, 0).submitting);
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 0u);  // not before reconcile_delay
  h.clock.advance(5);
  h.tick();
  ASSERT_EQ(h.slurm.submissions().size(), 1u);
  EXPECT_EQ(h.slurm.submissions()[0].request.comment,
            JobTag({h.store->store_id(), id, 0, 1}).str());
  EXPECT_EQ(h.controller->counters().resubmitted, 1u);
  h.clock.advance(60);
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
}

TEST(CampaignController, CrashAfterSubmittingBeforeRecordingAdoptsTheJob) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  const Actions a = h.tick(/*perform=*/false);
  const JobId job = h.slurm.submit(a.submits.at(0).request);  // Slurm took it; the daemon died
  h.restart();
  h.clock.advance(3600);
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  EXPECT_EQ(h.job_of(id, 0), job);
  EXPECT_EQ(h.controller->counters().adopted, 1u);
  EXPECT_EQ(h.store->submissions(id).at(0).state, "submitted");
}

TEST(CampaignController, LostReplyIsSettledByTheTag) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  h.slurm.lose_next_submit_reply();
  h.tick();
  EXPECT_TRUE(h.seg(id, 0).submitting);
  h.clock.advance(10);
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  EXPECT_FALSE(h.seg(id, 0).submitting);
  EXPECT_EQ(h.job_of(id, 0), h.slurm.submissions()[0].job);
}

TEST(CampaignController, IgnoresJobsTaggedByAnotherStoreOrUser) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(1)).spec.id;
  SlurmJob foreign;
  foreign.comment = JobTag{"ffffffff", id, 0, 1}.str();
  h.slurm.add_job(foreign);
  SlurmJob other_user;
  other_user.comment = JobTag{h.store->store_id(), id, 0, 1}.str();
  other_user.user_id = 4242;
  h.slurm.add_job(other_user);
  h.tick(false);
  h.restart();
  h.clock.advance(10);
  h.tick();
  ASSERT_EQ(h.slurm.submissions().size(), 1u);
  EXPECT_EQ(h.job_of(id, 0), h.slurm.submissions()[0].job);
}

// Kill the daemon at random points of a 4-segment campaign's life, many times: it always
// finishes, and every (segment, attempt) tag is submitted exactly once.
TEST(CampaignController, RandomCrashesNeverLoseOrDuplicate) {
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    Harness h(quick_config());
    const auto id = h.controller->add(simple_request(4)).spec.id;
    for (int step = 0; step < 400 && h.campaign(id).state == CampaignState::kActive; ++step) {
      const int roll = static_cast<int>(rng() % 10);
      if (roll == 0) {  // crash right after deciding, maybe after Slurm took some submissions
        const Actions a = h.tick(false);
        for (const auto& s : a.submits)
          if (rng() % 2) h.slurm.submit(s.request);
        h.restart();
      } else if (roll == 1) {
        h.restart();
      } else {
        h.tick();
      }
      // The cluster moves on: start pending jobs, end running ones.
      for (const auto& [jid, job] : h.slurm.jobs()) {
        if (job.state == SlurmJobState::kPending && rng() % 3 == 0) {
          h.slurm.start(jid);
          break;
        }
        if (job.state == SlurmJobState::kRunning && rng() % 4 == 0) {
          h.slurm.finish(jid, SlurmJobState::kCompleted);
          break;
        }
      }
      h.clock.advance(7);
    }
    ASSERT_EQ(h.campaign(id).state, CampaignState::kDone) << "seed " << seed;
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(h.slurm.submissions_tagged(id, k).size(), 1u)
          << "seed " << seed << " segment " << k;
    }
  }
}

// A hand-off campaign whose policy submits at once (`max_retries` further submissions of a failed
// segment): segment 1 started beside segment 0, which the tick signalled (or, without
// `signal_sent`, committed the signal and died before sending it).
struct HandoffUnderway {
  explicit HandoffUnderway(std::optional<int> max_retries = std::nullopt, bool signal_sent = true)
      : h(quick_config(), policy.factory()) {
    policy.submit = true;
    auto req = simple_request(2, 10 * kHour);
    req.policy = "scripted";
    req.overlap = OverlapMode::kHandoff;
    req.handoff_grace = 300;
    req.max_retries = max_retries;
    id = h.controller->add(req).spec.id;
    h.tick();
    h.slurm.start(h.job_of(id, 0));
    h.tick();  // policy: submit now
    EXPECT_EQ(h.slurm.submissions().size(), 2u);
    h.slurm.start(h.job_of(id, 1));
    EXPECT_EQ(h.tick(signal_sent).signals.size(), 1u);
    EXPECT_EQ(h.slurm.signals().size(), signal_sent ? 1u : 0u);
  }
  Scripted policy;
  Harness h;
  std::int64_t id = 0;
};

TEST(CampaignController, HandoffSignalsThePredecessorThenCancelsItAfterTheGrace) {
  HandoffUnderway c;
  Harness& h = c.h;
  const auto id = c.id;
  ASSERT_EQ(h.slurm.signals().size(), 1u);
  EXPECT_EQ(h.slurm.signals()[0].job, h.job_of(id, 0));
  EXPECT_EQ(h.slurm.signals()[0].signo, SIGUSR1);
  h.clock.advance(200);
  h.tick();
  EXPECT_EQ(h.slurm.signals().size(), 1u);
  EXPECT_TRUE(h.slurm.cancels().empty());
  h.clock.advance(101);
  h.tick();
  ASSERT_EQ(h.slurm.cancels().size(), 1u);
  h.tick();
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
  EXPECT_EQ(h.slurm.cancels().size(), 1u);
}

// A restart as after a crash, then a pass at once and one a retry delay later: nothing is sent
// again (`sent`: how much Slurm was sent) before the delay.
void restart_then_pass_the_retry_delay(Harness& h, const std::function<std::size_t()>& sent) {
  h.restart();
  h.tick();
  EXPECT_EQ(sent(), 0u) << "sent again before the retry delay";
  h.clock.advance(h.config_.retry_delay);
  h.tick();
}

// The daemon committed the hand-off signal and stopped before its Slurm thread sent it (or a
// tick was killed first): the next one sends it once the retry delay has passed, while the
// predecessor runs, instead of cancelling it after the grace with no checkpoint.
TEST(CampaignController, AHandoffSignalLostWithARestartIsSentAgain) {
  HandoffUnderway c(std::nullopt, /*signal_sent=*/false);
  Harness& h = c.h;
  restart_then_pass_the_retry_delay(h, [&] { return h.slurm.signals().size(); });
  ASSERT_EQ(h.slurm.signals().size(), 1u);
  EXPECT_EQ(h.slurm.signals()[0].job, h.job_of(c.id, 0));
  EXPECT_EQ(h.slurm.signals()[0].signo, SIGUSR1);
  h.clock.advance(h.config_.retry_delay);
  h.tick();
  EXPECT_EQ(h.slurm.signals().size(), 1u);  // this daemon sent it
  EXPECT_TRUE(h.slurm.cancels().empty());
}

// The same for the cancel after the grace: a predecessor that ignores the signal would otherwise
// run beside its successor to its limit.
TEST(CampaignController, AHandoffCancelLostWithARestartIsSentAgain) {
  HandoffUnderway c;
  Harness& h = c.h;
  h.clock.advance(300);
  ASSERT_EQ(h.tick(/*perform=*/false).cancels.size(), 1u);
  restart_then_pass_the_retry_delay(h, [&] { return h.slurm.cancels().size(); });
  ASSERT_EQ(h.slurm.cancels().size(), 1u);
  EXPECT_EQ(h.slurm.cancels()[0], h.job_of(c.id, 0));
  h.tick();
  EXPECT_EQ(h.seg(c.id, 0).seg.state, SegmentState::kDone);
  EXPECT_EQ(h.slurm.signals().size(), 1u);
}

// The hand-off signal committed by a pass that stopped before sending it (a `mirage tick` killed
// by its --time, a daemon stopped with it queued): the next pass, past the grace (5 min, as
// scrontab's ticks), sends the signal, not the cancel, and the cancel comes a grace after Slurm
// took the signal, so the job gets all of it to checkpoint. `each_pass_afresh`: every pass is a
// process of its own (`mirage tick`); else the daemon restarted once.
void lost_signal_is_sent_before_the_cancel(bool each_pass_afresh) {
  HandoffUnderway c(std::nullopt, /*signal_sent=*/false);
  Harness& h = c.h;
  const Seconds grace = h.campaign(c.id).spec.handoff_grace;
  h.restart();
  const auto pass = [&](Seconds after) {
    h.clock.advance(after);
    if (each_pass_afresh) h.restart();
    h.tick();
  };
  pass(grace);
  ASSERT_EQ(h.slurm.signals().size(), 1u);
  EXPECT_EQ(h.slurm.signals()[0].job, h.job_of(c.id, 0));
  EXPECT_TRUE(h.slurm.cancels().empty()) << "cancelled with no signal sent";
  pass(grace - 1);
  EXPECT_TRUE(h.slurm.cancels().empty()) << "cancelled before a grace had passed since the signal";
  pass(1);
  ASSERT_EQ(h.slurm.cancels().size(), 1u);
  EXPECT_EQ(h.slurm.cancels()[0], h.job_of(c.id, 0));
  EXPECT_EQ(h.slurm.signals().size(), 1u);
}

TEST(CampaignController, AHandoffSignalLostWithAKilledTickIsSentBeforeTheCancel) {
  lost_signal_is_sent_before_the_cancel(/*each_pass_afresh=*/true);
}

TEST(CampaignController, AHandoffSignalLostWithADaemonRestartIsSentBeforeTheCancel) {
  lost_signal_is_sent_before_the_cancel(/*each_pass_afresh=*/false);
}

// `campaign show` says when Slurm took each hand-off step, or that it has not yet: the time a
// step was committed says nothing of whether the job got it.
TEST(CampaignController, ShowSaysWhenSlurmTookTheHandoffSignalAndTheCancel) {
  HandoffUnderway lost(std::nullopt, /*signal_sent=*/false);
  const auto shown = [](HandoffUnderway& c) {
    return campaign_detail_json(c.h.campaign(c.id), *c.h.store).at("segment_list").at(0);
  };
  EXPECT_EQ(shown(lost).at("signal_sent_at"), -1);
  EXPECT_FALSE(shown(lost).contains("signalled_at"));
  HandoffUnderway c;
  Harness& h = c.h;
  const Seconds sent = h.clock.now();
  EXPECT_EQ(shown(c).at("signal_sent_at"), sent);
  EXPECT_FALSE(shown(c).contains("cancel_sent_at"));
  h.clock.advance(h.campaign(c.id).spec.handoff_grace);
  ASSERT_EQ(h.tick(/*perform=*/false).cancels.size(), 1u);
  EXPECT_EQ(shown(c).at("cancel_sent_at"), -1);
  EXPECT_EQ(shown(c).at("signal_sent_at"), sent);
}

// A signal Slurm took is never sent again, not even by passes that each start afresh (`mirage
// tick`) a retry delay apart until the grace: the training job would be signalled every tick.
TEST(CampaignController, AHandoffSignalSlurmTookIsNeverSentAgain) {
  HandoffUnderway c;
  Harness& h = c.h;
  const Seconds grace = h.campaign(c.id).spec.handoff_grace;
  for (Seconds t = h.config_.retry_delay; t < grace; t += h.config_.retry_delay) {
    h.clock.advance(h.config_.retry_delay);
    h.restart();
    h.tick();
  }
  EXPECT_EQ(h.slurm.signals().size(), 1u);
  EXPECT_TRUE(h.slurm.cancels().empty());
}

// A signal Slurm refuses for good (the job not the user's) is not sent again every retry delay
// with no cancel ever: the grace runs from the refusal, and the cancel after it ends the job.
TEST(CampaignController, AHandoffSignalRefusedForGoodIsFollowedByTheCancel) {
  HandoffUnderway c(std::nullopt, /*signal_sent=*/false);
  Harness& h = c.h;
  const Seconds grace = h.campaign(c.id).spec.handoff_grace;
  h.restart();
  h.clock.advance(h.config_.retry_delay);
  const Actions a = h.tick(/*perform=*/false);
  ASSERT_EQ(a.signals.size(), 1u);
  h.controller->on_signal_failed(
      a.signals[0], SlurmError("slurm_kill_job: Access/permission denied", 2002, false));
  for (Seconds t = h.config_.retry_delay; t < grace; t += h.config_.retry_delay) {
    h.clock.advance(h.config_.retry_delay);
    h.tick();
  }
  EXPECT_TRUE(h.slurm.signals().empty()) << "a signal refused for good was sent again";
  h.clock.advance(grace);
  h.tick();
  EXPECT_EQ(h.slurm.cancels().size(), 1u);
}

// A script that traps no hand-off signal dies of it (FAILED): its successor carries on from the
// checkpoint, so that is no failure, not even with no retry allowed.
TEST(CampaignController, AHandoffPredecessorThatDiesOfItsSignalIsDone) {
  HandoffUnderway c(/*max_retries=*/0);
  Harness& h = c.h;
  const auto id = c.id;
  h.slurm.finish(h.job_of(id, 0), SlurmJobState::kFailed, 138);
  h.tick();
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
  EXPECT_EQ(h.campaign(id).state, CampaignState::kActive);
  EXPECT_EQ(h.slurm.find(h.job_of(id, 1))->state, SlurmJobState::kRunning);
  EXPECT_TRUE(h.slurm.cancels().empty());
}

// Each segment of a hand-off campaign may start beside its predecessor: it is told to wait for
// the hand-off (the training job's template passes --handoff-wait).
TEST(CampaignController, AHandoffCampaignsSegmentsAreToldToWaitForTheHandoff) {
  for (const OverlapMode mode : {OverlapMode::kHandoff, OverlapMode::kConcurrent}) {
    Harness h(quick_config());
    auto req = simple_request(2);
    req.overlap = mode;
    h.controller->add(req);
    h.tick();
    ASSERT_EQ(h.slurm.submissions().size(), 1u);
    const auto& env = h.slurm.submissions()[0].request.environment;
    EXPECT_EQ(std::count(env.begin(), env.end(), "MIRAGE_HANDOFF=1"),
              mode == OverlapMode::kHandoff ? 1 : 0)
        << to_string(mode);
  }
}

TEST(CampaignController, ConcurrentModeNeverSignals) {
  Scripted p;
  p.submit = true;
  Harness h(quick_config(), p.factory());
  auto req = simple_request(2, 10 * kHour);
  req.policy = "scripted";
  const auto id = h.controller->add(req).spec.id;
  h.tick();
  h.slurm.start(h.job_of(id, 0));
  h.tick();
  h.slurm.start(h.job_of(id, 1));
  h.tick();
  h.clock.advance(kHour);
  h.tick();
  EXPECT_TRUE(h.slurm.signals().empty());
  EXPECT_TRUE(h.slurm.cancels().empty());
}

TEST(CampaignController, PauseHoldsSubmissionsResumeGoesOn) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  h.tick();
  h.controller->pause(id);
  h.slurm.start(h.job_of(id, 0));
  h.tick();
  h.slurm.finish(h.job_of(id, 0));
  h.tick();
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);  // still followed while paused
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  h.restart();
  EXPECT_EQ(h.campaign(id).state, CampaignState::kPaused);
  h.controller->resume(id);
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 2u);
  EXPECT_THROW(h.controller->resume(999), RequestError);
}

TEST(CampaignController, CancelCancelsQueuedJobsAndLateAdoptions) {
  Harness h(quick_config());
  const auto a = h.controller->add(simple_request(2)).spec.id;
  const auto b = h.controller->add(simple_request(2, kHour, "b")).spec.id;
  h.slurm.lose_next_submit_reply();  // a's submission outcome unknown
  h.tick();
  EXPECT_TRUE(h.seg(a, 0).submitting);
  const JobId bjob = h.job_of(b, 0);
  const Actions ca = h.controller->cancel(a);
  EXPECT_TRUE(ca.cancels.empty());
  perform_actions(*h.controller, h.slurm, h.controller->cancel(b));
  EXPECT_EQ(h.slurm.find(bjob)->state, SlurmJobState::kCancelled);
  h.tick();  // a's job is found by its tag and cancelled
  ASSERT_EQ(h.slurm.cancels().size(), 2u);
  EXPECT_EQ(h.campaign(a).state, CampaignState::kCancelled);
  EXPECT_THROW(h.controller->cancel(a), RequestError);
  h.tick();
  EXPECT_EQ(h.slurm.cancels().size(), 2u);
  EXPECT_EQ(h.slurm.submissions().size(), 2u);
}

TEST(CampaignController, PerUserCampaignLimit) {
  auto cfg = quick_config();
  cfg.max_campaigns_per_user = 2;
  Harness h(cfg);
  h.controller->add(simple_request());
  const auto second = h.controller->add(simple_request(3, kHour, "second")).spec.id;
  EXPECT_THROW(h.controller->add(simple_request(3, kHour, "third")), RequestError);
  auto other = simple_request();
  other.owner_uid = 1001;
  EXPECT_NO_THROW(h.controller->add(other));
  h.tick();
  perform_actions(*h.controller, h.slurm, h.controller->cancel(second));
  EXPECT_NO_THROW(h.controller->add(simple_request(3, kHour, "third")));
}

TEST(CampaignController, TakesAPolicyWithItsRiskKnobAndRefusesALeadOutOfRange) {
  Harness h(quick_config());
  auto r = simple_request();
  r.policy = "average@2h";
  EXPECT_EQ(h.controller->add(r).spec.policy, "average@2h");
  r = simple_request();
  r.owner_uid = 1001;
  r.policy = "static@-1h";
  try {
    h.controller->add(r);
    FAIL();
  } catch (const RequestError& e) {
    EXPECT_NE(std::string(e.what()).find("the lead of 'static@-1h' is out of range"),
              std::string::npos)
        << e.what();
  }
}

int model_loads = 0;
std::unique_ptr<Policy> counting_model_loader(const std::string&, std::optional<double>) {
  ++model_loads;
  return std::make_unique<ReactivePolicy>();
}

// A model file is checked by its first bytes before the loader runs, which reads the whole file:
// a text file is refused in one line that says what a model file begins with.
TEST(CampaignController, APolicyFileThatIsNoModelIsRefusedBeforeTheLoaderRuns) {
  struct Loader {
    Loader() { set_model_policy_loader(&counting_model_loader); }
    ~Loader() { set_model_policy_loader(nullptr); }
  } loader;
  model_loads = 0;
  Harness h(quick_config());
  const std::string text = h.dir.file("hostname");
  std::ofstream(text) << "login1\n";
  auto r = simple_request();
  r.policy = text;
  try {
    h.controller->add(r);
    FAIL() << "a text file was taken for a model";
  } catch (const RequestError& e) {
    EXPECT_EQ(std::string(e.what()),
              "policy: " + text +
                  " is not a mirage model file: expected a LibTorch archive as `mirage train` "
                  "writes it (a zip file, beginning \"PK\\x03\\x04\"), got \"logi\"");
  }
  r.policy = h.dir.file("missing.mirage-model") + "@0.5";
  try {
    h.controller->add(r);
    FAIL() << "a missing model file was accepted";
  } catch (const RequestError& e) {
    EXPECT_NE(std::string(e.what()).find("no such model file"), std::string::npos) << e.what();
  }
  EXPECT_EQ(model_loads, 0);
  const std::string zip = h.dir.file("agent.mirage-model");
  std::ofstream(zip, std::ios::binary) << "PK\x03\x04 and the rest";
  r.policy = zip;
  EXPECT_NO_THROW(h.controller->add(r));
  EXPECT_EQ(model_loads, 1);  // what may be a model goes to the loader
}

// A campaign that names no policy takes the learned agents' verdict (daemon/config/
// default-policy.toml, compiled in) and says in one line which policy and why; one that names a
// policy hears nothing of it; a site's own [policy] default is named as the site's.
TEST(CampaignController, ACampaignWithoutAPolicyTakesTheVerdictsDefaultAndSaysWhy) {
  ControllerConfig config = quick_config();
  Harness h(config);
  std::vector<std::string> notes;
  EXPECT_EQ(h.controller->add(simple_request(), &notes).spec.policy, compiled_default_policy());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes.front().find("policy " + compiled_default_policy() + " (the default): "), 0u)
      << notes.front();
  EXPECT_NE(notes.front().find(" chains in real waits ("), std::string::npos) << notes.front();
  EXPECT_NE(notes.front().find("see docs/learned-agents.md"), std::string::npos) << notes.front();

  auto named = simple_request();
  named.owner_uid = 1001;
  named.policy = "average";
  notes.clear();
  EXPECT_EQ(h.controller->add(named, &notes).spec.policy, "average");
  EXPECT_TRUE(notes.empty()) << notes.front();

  ControllerConfig site = quick_config();
  site.default_policy = compiled_default_policy() == "static@1h" ? "static@2h" : "static@1h";
  Harness configured(site);
  notes.clear();
  EXPECT_EQ(configured.controller->add(simple_request(), &notes).spec.policy, site.default_policy);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes.front(), "policy " + site.default_policy +
                               ": the daemon's default ([policy] default in its config)");
}

// A budget of overlap instead of a policy: the frontier's least interruption within it.
TEST(CampaignController, AMaxOverlapTakesTheFrontiersLeastInterruptionWithinIt) {
  const std::string file =
      ::testing::TempDir() + "/frontier-" + std::to_string(::getpid()) + ".toml";
  RiskFrontier f{
      "ls6.log",
      8,
      48 * kHour,
      "concurrent",
      {{"reactive", 0.66, 0.01}, {"average@-2h", 0.57, 0.13}, {"forecast@-2h", 0.10, 1.56}}};
  write_risk_frontier(file, f);
  ControllerConfig config = quick_config();
  Harness none(config);
  auto r = simple_request();
  r.max_overlap = 30 * kMinute;
  try {
    none.controller->add(r);
    FAIL();
  } catch (const RequestError& e) {
    EXPECT_NE(std::string(e.what()).find("the daemon has no risk frontier"), std::string::npos);
  }
  config.frontier_file = file;
  Harness h(config);
  std::vector<std::string> notes;
  EXPECT_EQ(h.controller->add(r, &notes).spec.policy, "average@-2h");
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes.back().find("least interruption within 30m"), std::string::npos) << notes.back();
  r = simple_request();
  r.owner_uid = 1001;
  r.max_overlap = 2 * kHour;
  EXPECT_EQ(h.controller->add(r).spec.policy, "forecast@-2h");
  r.owner_uid = 1002;
  r.max_overlap = 0;
  try {
    h.controller->add(r);
    FAIL();
  } catch (const RequestError& e) {
    EXPECT_NE(std::string(e.what()).find("overlaps 0s or less per boundary; the closest is "
                                         "reactive with 36s"),
              std::string::npos)
        << e.what();
  }
  r.max_overlap = kHour;
  r.policy = "average";
  EXPECT_THROW(h.controller->add(r), RequestError);
  std::remove(file.c_str());
}

// `quantile` reads the cluster's wait distribution ([policy] wait_distribution); without one a
// campaign asking for it is refused, saying what is missing.
TEST(CampaignController, QuantileNeedsTheClustersWaitDistribution) {
  auto r = simple_request();
  r.policy = "quantile@0.8";
  Harness none(quick_config());
  try {
    none.controller->add(r);
    FAIL();
  } catch (const RequestError& e) {
    EXPECT_NE(std::string(e.what()).find("needs the distribution of the successor's wait"),
              std::string::npos)
        << e.what();
  }
  const std::string file = ::testing::TempDir() + "/waits-" + std::to_string(::getpid()) + ".toml";
  WaitDistribution d;  // fitted for 1-node chains over two months
  d.spec.from = 1'700'000'000;
  d.spec.to = d.spec.from + 60 * kDay;
  WaitDistribution::Bin bin;
  bin.jobs = 40;
  for (int k = 0; k < WaitDistribution::kLevels; ++k)
    bin.waits[static_cast<std::size_t>(k)] = k * kMinute;
  d.bins.push_back(bin);
  write_wait_distribution(file, d);
  ControllerConfig config = quick_config();
  config.wait_distribution_file = file;
  Harness h(config);
  EXPECT_EQ(h.controller->add(r).spec.policy, "quantile@0.8");
  // An 8-node campaign waits as 8-node jobs do, which this file does not say.
  r = simple_request();
  r.policy = "quantile@0.8";
  r.owner_uid = 1001;
  r.shape.nodes = 8;
  try {
    h.controller->add(r);
    FAIL();
  } catch (const RequestError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot serve this campaign: it was fitted on jobs of 1 "
                                         "node, and a chain of 8 node(s) waits as jobs of 8+ "
                                         "nodes do"),
              std::string::npos)
        << e.what();
  }
  std::remove(file.c_str());
}

TEST(CampaignController, RejectsBadRequests) {
  Harness h(quick_config());
  auto r = simple_request();
  r.policy = "no-such-policy";
  try {
    h.controller->add(r);
    FAIL();
  } catch (const RequestError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown policy"), std::string::npos);
  }
  r = simple_request();
  r.segments = -1;
  EXPECT_THROW(h.controller->add(r), RequestError);
  r = simple_request();
  r.shape.time_limit = 10;
  EXPECT_THROW(h.controller->add(r), RequestError);
  r = simple_request();
  r.name.clear();
  EXPECT_THROW(h.controller->add(r), RequestError);
  EXPECT_TRUE(h.controller->campaigns().empty());
}

// Accounting says the job was cancelled before it started (SegmentFateTest.cpp has the rest).
TEST(CampaignController, AJobThatVanishesWhilePendingIsSubmittedAgainWhenItNeverStarted) {
  Harness h(quick_config());
  h.slurm.set_accounting(true);
  const auto id = h.controller->add(simple_request(1)).spec.id;
  h.tick();
  const JobId first = h.job_of(id, 0);
  h.slurm.finish(first, SlurmJobState::kCancelled);
  h.slurm.forget(first);
  h.tick();  // too soon after the submission to look into the absence
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  EXPECT_EQ(h.slurm.counters().accounting_lookups, 0u);
  h.clock.advance(10);
  h.tick();  // asks accounting
  h.tick();  // settles it: never started
  ASSERT_EQ(h.slurm.submissions().size(), 2u);
  EXPECT_NE(h.job_of(id, 0), first);
}

// Job ids repeat (MaxJobId wraps; a cluster that lost its state numbers from the start again):
// another user's job under the recorded id is not the segment's, however it runs.
TEST(CampaignController, AJobUnderTheRecordedIdWithoutTheTagIsNotTheSegment) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(1)).spec.id;
  h.tick();
  const JobId first = h.job_of(id, 0);
  h.slurm.forget(first);
  SlurmJob stranger;
  stranger.id = first;
  stranger.name = "someone-else";
  stranger.user_id = 4242;
  h.slurm.add_job(stranger);
  h.slurm.start(first);
  h.clock.advance(10);
  h.tick();
  h.tick();
  EXPECT_NE(h.seg(id, 0).seg.state, SegmentState::kRunning);
  // Its own job left the queue unseen and nothing says whether it ran: held, not run again.
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  EXPECT_TRUE(h.seg(id, 0).fate_unknown());
}

// The segment is the job that carries its tag, even when that job's id is not the recorded one.
TEST(CampaignController, ASegmentIsFollowedByItsTagWhenItsIdChanges) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(1)).spec.id;
  h.tick();
  const JobId first = h.job_of(id, 0);
  SlurmJob moved = *h.slurm.find(first);
  h.slurm.forget(first);
  moved.id = first + 100;
  h.slurm.add_job(moved);
  h.slurm.start(moved.id);
  h.clock.advance(10);
  h.tick();
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kRunning);
  EXPECT_EQ(h.job_of(id, 0), moved.id);
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
}

TEST(CampaignController, UnreachableControllerLeavesTheOutcomeToTheDump) {
  Harness h(quick_config());
  const auto id = h.controller->add(simple_request(1)).spec.id;
  const JobDump dump = h.slurm.load_jobs(0);
  const Actions a = h.controller->tick(dump.jobs, dump.taken, h.history, QueueSnapshot{});
  h.slurm.set_reachable(false);
  perform_actions(*h.controller, h.slurm, a);
  EXPECT_TRUE(h.seg(id, 0).submitting);
  h.slurm.set_reachable(true);
  h.clock.advance(10);
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  EXPECT_FALSE(h.seg(id, 0).submitting);
}

// Slurm's will-run test is asked once per decision of a running campaign (not per tick), for
// the next segment's shape; each decision records the forecast's expected start and the latest
// estimate beside it; `slurm-estimate` submits once that estimate reaches the predecessor's end;
// a failing test leaves a note and stops nothing.
TEST(CampaignController, SlurmsEstimateIsAskedOnceADecisionAndRecordedBesideTheForecast) {
  Harness h(quick_config());
  auto req = simple_request(2, 10 * kHour);
  req.policy = "slurm-estimate";
  req.shape.qos = "long";
  const auto id = h.controller->add(req).spec.id;
  h.tick();
  h.slurm.start(h.job_of(id, 0));
  h.slurm.set_will_run(3 * kHour);
  const Seconds first = h.clock.now();
  h.tick();  // the first decision: no estimate yet; one is asked for
  EXPECT_EQ(h.slurm.counters().will_runs, 1u);
  ASSERT_EQ(h.slurm.will_run_requests().size(), 1u);
  EXPECT_EQ(h.slurm.will_run_requests()[0].nodes, 1);
  EXPECT_EQ(h.slurm.will_run_requests()[0].gpus_per_node, 4);
  EXPECT_EQ(h.slurm.will_run_requests()[0].time_limit, 10 * kHour);
  EXPECT_EQ(h.slurm.will_run_requests()[0].script, "");
  EXPECT_EQ(h.slurm.will_run_requests()[0].qos, "long");  // its limits and priority are the QOS's
  h.clock.advance(60);
  h.tick();  // within the decision interval: no decision, no RPC
  EXPECT_EQ(h.slurm.counters().will_runs, 1u);
  h.clock.advance(540);
  h.tick();
  EXPECT_EQ(h.slurm.counters().will_runs, 2u);
  auto decisions = h.store->decisions(id, 10);
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_EQ(decisions[0].slurm_start, kUnknownTime);
  EXPECT_EQ(decisions[0].slurm_note, "not asked yet");
  EXPECT_EQ(decisions[1].slurm_start, first + 3 * kHour);  // asked at the first decision
  // The harness's snapshots know no machine size: one node, which the predecessor holds.
  EXPECT_EQ(decisions[1].forecast_start, h.seg(id, 0).seg.start_time + 10 * kHour);
  EXPECT_EQ(decisions[1].action, "wait");  // 3 h of wait against 9 h 50 min left
  EXPECT_EQ(h.slurm.submissions().size(), 1u);

  // `campaign show`'s outlook: the next segment from the latest decision, the campaign after it.
  const auto outlook = campaign_detail_json(h.campaign(id), *h.store).at("outlook");
  ASSERT_TRUE(outlook.is_object());
  EXPECT_EQ(outlook.at("segment"), 1);
  EXPECT_EQ(outlook.at("slurm_start"), first + 3 * kHour);
  const Seconds pred_end = h.seg(id, 0).seg.start_time + 10 * kHour;
  EXPECT_EQ(outlook.at("predecessor_end"), pred_end);
  EXPECT_EQ(outlook.at("projected_finish"), pred_end + 10 * kHour);

  h.slurm.set_will_run_error("Socket timed out on send/recv operation");
  h.clock.advance(600);
  h.tick();  // its estimate still the good one; the new one fails
  h.slurm.set_will_run_error(std::nullopt);
  h.clock.advance(600);
  h.tick();
  decisions = h.store->decisions(id, 10);
  EXPECT_EQ(decisions.back().slurm_start, kUnknownTime);
  EXPECT_EQ(decisions.back().slurm_note,
            "the will-run test failed: Socket timed out on send/recv operation");
  EXPECT_EQ(h.campaign(id).state, CampaignState::kActive);

  // Slurm now says the successor would wait longer than the predecessor has left: submit.
  h.slurm.set_will_run(20 * kHour);
  h.clock.advance(600);
  h.tick();  // the estimate asked here
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  h.clock.advance(600);
  h.tick();
  ASSERT_EQ(h.slurm.submissions().size(), 2u);
  EXPECT_NE(h.store->submissions(id).back().reason.find("Slurm estimates a 1-node wait of"),
            std::string::npos)
      << h.store->submissions(id).back().reason;
  EXPECT_EQ(h.controller->counters().estimates, h.slurm.counters().will_runs);
}

// The latest estimate is kept in the store: a restarted daemon, or the next `mirage tick` (a
// fresh controller every pass), reads it at its next decision.
TEST(CampaignController, SlurmsLatestEstimateSurvivesARestart) {
  Harness h(quick_config());
  auto req = simple_request(2, 10 * kHour);
  req.policy = "reactive";  // asked every decision, always waits
  const auto id = h.controller->add(req).spec.id;
  h.tick();
  h.slurm.start(h.job_of(id, 0));
  h.slurm.set_will_run(2 * kHour);
  const Seconds asked = h.clock.now();
  h.tick();
  h.restart();
  h.clock.advance(600);
  h.tick();
  const auto decisions = h.store->decisions(id, 10);
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_EQ(decisions.back().slurm_start, asked + 2 * kHour);
  EXPECT_EQ(decisions.back().slurm_note, "");
}

}  // namespace
}  // namespace mirage::daemon

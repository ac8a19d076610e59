// How a campaign ends: open-ended ones when a segment creates the done file, bounded ones after
// their last segment or the done file, failed ones after a segment's retries, with the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "TestSupport.h"
#include "mirage/daemon/campaigns/DoneFile.h"

namespace mirage::daemon {
namespace {

using testing::Harness;
using testing::simple_request;

ControllerConfig config() {
  ControllerConfig c;
  // The submissions the policy makes; the fallback chain has its own tests (FallbackChainTest).
  c.fallback_chain = false;
  c.fallback_lead = 0;
  c.max_retries = 2;
  return c;
}

void create(const std::string& path) {
  std::ofstream(path) << "done\n";
}

std::string env_value(const SubmitRequest& r, const std::string& name) {
  for (const auto& e : r.environment)
    if (e.rfind(name + "=", 0) == 0) return e.substr(name.size() + 1);
  return "(unset)";
}

// Runs segment k of campaign `id` from submission to `end`; `done_file`, when given, is created
// while it runs.
void run_segment(Harness& h, std::int64_t id, int k, SlurmJobState end, int exit_code = 0,
                 const std::string& done_file = "") {
  h.tick();
  h.slurm.start(h.job_of(id, k));
  h.tick();
  h.clock.advance(600);
  if (!done_file.empty()) create(done_file);
  h.slurm.finish(h.job_of(id, k), end, exit_code);
}

TEST(CampaignEnding, AnOpenEndedCampaignRunsUntilASegmentCreatesTheDoneFile) {
  Harness h(config());
  const auto& rec = h.controller->add(simple_request(0));
  const auto id = rec.spec.id;
  const std::string done = rec.done_file;
  EXPECT_TRUE(rec.open_ended());
  EXPECT_EQ(done, h.path + ".done/campaign-" + std::to_string(id) + "-" + h.store->store_id());
  EXPECT_TRUE(std::filesystem::is_directory(h.path + ".done"));
  for (int k = 0; k < 3; ++k) run_segment(h, id, k, SlurmJobState::kTimeout);
  h.tick();  // segment 3 submitted: nobody said the run is finished
  ASSERT_EQ(h.slurm.submissions().size(), 4u);
  const SubmitRequest& last = h.slurm.submissions().back().request;
  EXPECT_EQ(env_value(last, "MIRAGE_DONE_FILE"), done);
  EXPECT_EQ(env_value(last, "MIRAGE_SEGMENTS"), "0");
  EXPECT_EQ(env_value(last, "MIRAGE_SEGMENT"), "3");
  h.slurm.start(h.job_of(id, 3));
  h.tick();
  create(done);  // the training job reached its total steps
  h.tick();      // still running: the campaign ends once it exits
  EXPECT_EQ(h.campaign(id).state, CampaignState::kActive);
  h.slurm.finish(h.job_of(id, 3), SlurmJobState::kCompleted);
  h.tick();
  EXPECT_EQ(h.campaign(id).state, CampaignState::kDone);
  EXPECT_EQ(h.campaign(id).message, "segment 3 created the done file " + done);
  EXPECT_EQ(h.slurm.submissions().size(), 4u);
  h.restart();
  EXPECT_EQ(h.campaign(id).segments.size(), 4u);  // open-ended segments survive a restart
  EXPECT_EQ(h.campaign(id).state, CampaignState::kDone);
}

TEST(CampaignEnding, ASuccessorQueuedEarlyIsCancelledWhenThePredecessorCreatedTheDoneFile) {
  Harness h(config());
  auto req = simple_request(0);
  req.policy = "average";
  const auto& rec = h.controller->add(req);
  const auto id = rec.spec.id;
  h.tick();
  h.slurm.start(h.job_of(id, 0));
  h.tick();
  h.clock.advance(kHour);  // the fallback (at the limit) submits the successor
  h.tick();
  ASSERT_EQ(h.slurm.submissions().size(), 2u);
  const JobId successor = h.job_of(id, 1);
  create(rec.done_file);
  h.slurm.finish(h.job_of(id, 0), SlurmJobState::kCompleted);
  h.tick();
  EXPECT_EQ(h.campaign(id).state, CampaignState::kDone);
  EXPECT_EQ(h.slurm.find(successor)->state, SlurmJobState::kCancelled);
  EXPECT_NE(h.seg(id, 1).message.find("not needed"), std::string::npos);
}

TEST(CampaignEnding, ABoundedCampaignEndsEarlyOnTheDoneFileAndOtherwiseAfterItsLastSegment) {
  Harness h(config());
  const auto& early = h.controller->add(simple_request(5));
  const auto id = early.spec.id;
  run_segment(h, id, 0, SlurmJobState::kTimeout);
  run_segment(h, id, 1, SlurmJobState::kCompleted, 0, early.done_file);
  h.tick();
  EXPECT_EQ(h.campaign(id).state, CampaignState::kDone);
  EXPECT_EQ(h.slurm.submissions().size(), 2u);

  const auto two = h.controller->add(simple_request(2)).spec.id;
  run_segment(h, two, 0, SlurmJobState::kTimeout);
  run_segment(h, two, 1, SlurmJobState::kTimeout);
  h.tick();
  EXPECT_EQ(h.campaign(two).state, CampaignState::kDone);
  EXPECT_EQ(h.campaign(two).message, "");
}

TEST(CampaignEnding, AFailedSegmentRunsAgainUpToTheCampaignsRetriesThenTheCampaignSaysWhy) {
  Harness h(config());
  auto req = simple_request(0);
  req.max_retries = 1;
  const auto id = h.controller->add(req).spec.id;
  EXPECT_EQ(h.campaign(id).max_retries, 1);
  run_segment(h, id, 0, SlurmJobState::kTimeout);
  run_segment(h, id, 1, SlurmJobState::kFailed, 3);
  run_segment(h, id, 1, SlurmJobState::kOutOfMemory);
  h.tick();
  const CampaignRecord& c = h.campaign(id);
  EXPECT_EQ(c.state, CampaignState::kFailed);
  EXPECT_EQ(c.message, "segment 1 failed after 2 attempts: job " + std::to_string(h.job_of(id, 1)) +
                           " ended OUT_OF_MEMORY");
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 2u);
  // Each attempt's end is kept.
  const auto attempts = h.store->submissions(id);
  ASSERT_EQ(attempts.size(), 3u);
  EXPECT_EQ(attempts[0].outcome, "TIMEOUT");
  EXPECT_EQ(attempts[1].outcome, "FAILED, exit code 3");
  EXPECT_EQ(attempts[2].outcome, "OUT_OF_MEMORY");
}

TEST(CampaignEnding, EachFailedEndRunsTheSameSegmentAgainAndTheReasonStaysInView) {
  for (const auto end :
       {SlurmJobState::kFailed, SlurmJobState::kNodeFail, SlurmJobState::kOutOfMemory,
        SlurmJobState::kBootFail, SlurmJobState::kPreempted}) {
    Harness h(config());
    const auto id = h.controller->add(simple_request(2)).spec.id;
    run_segment(h, id, 0, end, 1);
    h.tick();
    ASSERT_EQ(h.slurm.submissions_tagged(id, 0).size(), 2u) << to_string(end);
    EXPECT_EQ(h.seg(id, 0).seg.attempts, 2);
    h.slurm.start(h.job_of(id, 0));
    h.tick();
    h.slurm.finish(h.job_of(id, 0), SlurmJobState::kTimeout);
    h.tick();
    EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
    EXPECT_NE(h.seg(id, 0).message.find("earlier attempt: job"), std::string::npos)
        << h.seg(id, 0).message;
    EXPECT_NE(h.seg(id, 0).message.find(std::string(to_string(end))), std::string::npos);
    EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 1u) << to_string(end);
  }
}

TEST(CampaignEnding, ASegmentThatCreatedTheDoneFileAndFailedIsNotRunAgain) {
  Harness h(config());
  const auto& rec = h.controller->add(simple_request(0));
  const auto id = rec.spec.id;
  run_segment(h, id, 0, SlurmJobState::kFailed, 1, rec.done_file);
  h.tick();
  EXPECT_EQ(h.campaign(id).state, CampaignState::kDone);
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  EXPECT_EQ(h.campaign(id).message, "segment 0 created the done file " + rec.done_file);
}

TEST(CampaignEnding, ADoneFileThatExistsBeforeAnySegmentRanEndsTheCampaignUnsubmitted) {
  Harness h(config());
  const auto& rec = h.controller->add(simple_request(0));
  create(rec.done_file);
  h.tick();
  EXPECT_EQ(rec.state, CampaignState::kDone);
  EXPECT_EQ(rec.message, "the done file " + rec.done_file + " exists");
  EXPECT_TRUE(h.slurm.submissions().empty());
}

TEST(CampaignEnding, ADoneFileThatCannotServeIsRefusedSayingWhy) {
  Harness h(config());
  create(h.dir.file("a-file"));
  auto req = simple_request(0);
  req.done_file = h.dir.file("a-file") + "/sub/done";
  const std::string unwritable = testing::refusal_of(*h.controller, req);
  EXPECT_NE(unwritable.find("done_file: cannot create the directory"), std::string::npos)
      << unwritable;
  req.done_file = h.dir.file("a-file");  // exists: the campaign would end before it began
  const std::string exists = testing::refusal_of(*h.controller, req);
  EXPECT_NE(exists.find("exists already"), std::string::npos) << exists;
  EXPECT_TRUE(h.controller->campaigns().empty());
  req.done_file = h.dir.file("mine/finished");
  EXPECT_EQ(h.controller->add(req).done_file, req.done_file);
}

// A campaign ends when its done file exists: two unfinished ones sharing a file would both end
// when the first finished, the other short of its training. Named another way (`..`) too.
TEST(CampaignEnding, ADoneFileAnUnfinishedCampaignUsesIsRefusedNamingIt) {
  Harness h(config());
  std::filesystem::create_directory(h.dir.file("run"));
  auto req = simple_request(0);
  req.done_file = h.dir.file("run/finished");
  const auto first = h.controller->add(req).spec.id;
  req.name = "second";
  req.done_file = h.dir.file("run/../run/finished");
  const std::string why = testing::refusal_of(*h.controller, req);
  EXPECT_EQ(why.rfind("done_file: ", 0), 0u) << why;
  EXPECT_NE(why.find("campaign " + std::to_string(first)), std::string::npos) << why;
  EXPECT_EQ(h.controller->campaigns().size(), 1u);
  // Once the first has ended the file may serve another.
  h.controller->cancel(first);
  EXPECT_EQ(h.controller->add(req).done_file, req.done_file);
}

TEST(CampaignEnding, ADoneFileInADirectoryThatCannotBeWrittenIsRefused) {
  testing::TempDir dir;
  std::filesystem::create_directory(dir.path() / "locked");
  std::filesystem::permissions(dir.path() / "locked", std::filesystem::perms::owner_read |
                                                          std::filesystem::perms::owner_exec);
  const std::string why = testing::as_unprivileged_user({dir.path()}, [&] {
    return prepare_done_file((dir.path() / "locked" / "done").string()).value_or("(none)");
  });
  EXPECT_NE(why.find("cannot write in"), std::string::npos) << why;
}

}  // namespace
}  // namespace mirage::daemon

// The store survives what SQLite can be made to survive: the main file holds every committed
// campaign (a lost -wal file loses none), an empty or foreign file is refused rather than taken
// over, a retried `campaign add` adds nothing new, and a store that cannot be written refuses the
// request and keeps the process alive.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "TestSupport.h"
#include "mirage/daemon/control/ControlProtocol.h"

namespace mirage::daemon {
namespace {

using testing::Harness;
using testing::simple_request;
using testing::TempDir;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(StoreSurvival, AnEmptyFileIsRefusedNotTakenAsANewStore) {
  TempDir dir;
  const std::string path = dir.file("store.db");
  std::ofstream(path).flush();
  const std::string why = error_of([&] { CampaignStore store(path); });
  EXPECT_NE(why.find(path), std::string::npos) << why;
  EXPECT_NE(why.find("empty file"), std::string::npos) << why;
  EXPECT_EQ(std::filesystem::file_size(path), 0u);
}

TEST(StoreSurvival, AnotherProgramsDatabaseIsRefusedAndLeftAlone) {
  TempDir dir;
  const std::string path = dir.file("notes.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE notes(text TEXT)", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const std::string why = error_of([&] { CampaignStore store(path); });
  EXPECT_NE(why.find("did not make"), std::string::npos) << why;
  EXPECT_NE(why.find("notes"), std::string::npos) << why;
  {  // not even switched to WAL mode (header byte 18: 1 rollback journal, 2 WAL)
    std::ifstream f(path, std::ios::binary);
    char header[20] = {};
    f.read(header, sizeof header);
    EXPECT_EQ(header[18], 1) << "the refused database was rewritten";
  }
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type='table'", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 1) << "mirage's tables were added to it";
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST(StoreSurvival, ANewStoreIsMadeWholeBeforeItHasItsName) {
  TempDir dir;
  const std::string path = dir.file("store.db");
  { CampaignStore store(path); }
  EXPECT_GT(std::filesystem::file_size(path), 0u);
  EXPECT_FALSE(std::filesystem::exists(path + ".new"));
  CampaignStore again(path);  // and it opens as a store
  EXPECT_EQ(again.store_id().size(), 8u);
}

// After a crash, a -wal file deleted (by hand, a cleaner, a backup of the main file alone) must
// not take the campaigns with it.
TEST(StoreSurvival, TheMainFileAloneHoldsEveryCampaign) {
  Harness h;
  const auto id = h.controller->add(simple_request(2)).spec.id;
  h.tick();
  const JobId job = h.job_of(id, 0);
  TempDir other;
  const std::string copy = other.file("main-only.db");
  std::filesystem::copy_file(h.path, copy);  // the store still open, its -wal not copied
  CampaignStore store(copy);
  const auto campaigns = store.load_campaigns();
  ASSERT_EQ(campaigns.size(), 1u);
  EXPECT_EQ(campaigns[0].segments[0].seg.slurm_job_id, job);
  EXPECT_EQ(store.store_id(), h.store->store_id());
}

TEST(StoreSurvival, ARetriedAddReturnsTheCampaignTheFirstMade) {
  Harness h;
  auto r = simple_request(2);
  r.request_key = "3f2a9c";
  const auto id = h.controller->add(r).spec.id;
  std::vector<std::string> notes;
  EXPECT_EQ(h.controller->add(r, &notes).spec.id, id);
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("already added"), std::string::npos);
  h.restart();  // the retry through the store, after the daemon died before replying
  EXPECT_EQ(h.controller->add(r).spec.id, id);
  EXPECT_EQ(h.controller->campaigns().size(), 1u);
  r.request_key = "another";
  r.name = "another";
  EXPECT_NE(h.controller->add(r).spec.id, id);
}

// The disk fills up (here: the file size limit): the request is refused naming the store and the
// cause, nothing of it is kept, and the process goes on serving. In a child: the limit is the
// process's.
// `campaign add` run again (from the shell's history, by a script that does not know it ran) would
// run the training twice beside itself: a name one of the user's campaigns still runs is refused.
TEST(StoreSurvival, TheSameAddRunTwiceMakesOneCampaign) {
  Harness h;
  const auto id = h.controller->add(simple_request(2)).spec.id;
  EXPECT_EQ(testing::refusal_of(*h.controller, simple_request(2)),
            "name: campaign 1 'train' is active under this name; cancel it first (`mirage "
            "campaign cancel 1`) or give another name");
  h.controller->pause(id);
  EXPECT_NE(testing::refusal_of(*h.controller, simple_request(2)), "(added)");
  EXPECT_EQ(h.controller->campaigns().size(), 1u);
  perform_actions(*h.controller, h.slurm, h.controller->cancel(id));
  EXPECT_EQ(testing::refusal_of(*h.controller, simple_request(2)), "(added)");
}

TEST(StoreSurvival, AStoreThatCannotBeWrittenRefusesTheRequestAndLivesOn) {
  TempDir dir;
  const std::string path = dir.file("store.db");
  const std::string out = testing::in_child_process([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    ManualClock clock(1'700'000'000);
    CampaignStore store(path);
    CampaignController controller(store, clock, {});
    controller.load();
    ControlHandler handler(controller, store, {});
    std::uintmax_t size = 0;
    for (const char* s : {"", "-wal"})
      if (std::filesystem::exists(path + s))
        size = std::max(size, std::filesystem::file_size(path + s));
    rlimit limit{static_cast<rlim_t>(size), static_cast<rlim_t>(size)};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    nlohmann::json c = {{"name", "big"},
                        {"script", "#!/bin/bash\n#" + std::string(200000, 'x') + "\nsrun a\n"},
                        {"segments", 2},
                        {"time_limit", 3600}};
    return handler.handle(nlohmann::json{{"op", "add"}, {"campaign", c}}.dump(), 0) + "\n" +
           handler.handle(R"({"op":"list"})", 0) + "\n";
  });
  const auto nl = out.find('\n');
  ASSERT_NE(nl, std::string::npos) << out;
  const auto add = nlohmann::json::parse(out.substr(0, nl));
  EXPECT_FALSE(add.value("ok", true));
  const std::string error = add.value("error", "");
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("cannot be written"), std::string::npos) << error;
  const auto list = nlohmann::json::parse(out.substr(nl + 1));
  EXPECT_TRUE(list.value("ok", false));
  EXPECT_TRUE(list.at("campaigns").empty()) << "a refused add left a campaign";
}

// A segment whose submission was lost is submitted again by a pass whose writes then fail (the
// disk fills up: here, the file size limit): that pass hands out no action, and the daemon reads
// the store back. The segment is not taken as in flight for it: once the store can be written, it
// is submitted again. In a child: the limit is the process's.
TEST(StoreSurvival, ASubmissionOfAPassWhoseWritesFailedIsNotLeftInFlight) {
  const std::string out = testing::in_child_process([] {
    ::signal(SIGXFSZ, SIG_IGN);
    Harness h(testing::quick_config());
    const auto id = h.controller->add(simple_request(2)).spec.id;
    h.slurm.set_on_submit([](FakeSlurmClient& s) { s.set_reachable(false); });
    h.tick();  // the submission's outcome is unknown, and no job has its tag
    h.slurm.set_on_submit({});
    h.slurm.set_reachable(true);
    h.clock.advance(h.config_.reconcile_delay + 1);
    rlimit limit{};
    ::getrlimit(RLIMIT_FSIZE, &limit);
    const rlimit full{1, limit.rlim_max};
    ::setrlimit(RLIMIT_FSIZE, &full);
    std::string failed = "the pass did not fail";
    try {
      h.tick();
    } catch (const std::exception& e) {  // the store's error
      failed = e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &limit);
    h.controller->load();  // what the daemon does when the store cannot be written
    for (int i = 0; i < 3; ++i) {
      h.clock.advance(h.config_.reconcile_delay + 1);
      h.tick();
    }
    return failed + "\n" + std::to_string(h.slurm.submissions_tagged(id, 0).size());
  });
  const auto nl = out.find('\n');
  ASSERT_NE(nl, std::string::npos) << out;
  EXPECT_NE(out.substr(0, nl), "the pass did not fail");
  EXPECT_EQ(out.substr(nl + 1), "1") << "the segment was left in flight and never submitted again";
}

// The store lost what it had written (its -wal file deleted after a crash): the jobs of its tag
// still in the queue are named, one line each, on the first pass.
TEST(StoreSurvival, QueuedJobsOfThisStoreThatNoCampaignOwnsAreNamed) {
  Harness h;
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  auto logger = std::make_shared<spdlog::logger>("test", sink);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  SlurmJob orphan;
  orphan.name = "lost-s1";
  orphan.comment = JobTag{h.store->store_id(), 7, 1, 1}.str();
  const JobId job = h.slurm.add_job(orphan);
  SlurmJob other = orphan;
  other.comment = JobTag{"0badc0de", 7, 1, 1}.str();  // another store's: not ours to name
  h.slurm.add_job(other);
  h.tick();
  h.tick();
  spdlog::set_default_logger(previous);
  const std::string text = log.str();
  EXPECT_NE(text.find("job " + std::to_string(job) + " (lost-s1"), std::string::npos) << text;
  EXPECT_NE(text.find("no campaign here owns it"), std::string::npos) << text;
  EXPECT_EQ(text.find("0badc0de"), std::string::npos) << text;
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = text.find("no campaign here owns it", at)) != std::string::npos;
       ++at)
    ++lines;
  EXPECT_EQ(lines, 1u) << "named once, on the first pass";
  // A new campaign does not take the lost one's id, and with it the tags of its jobs.
  EXPECT_GT(h.controller->add(simple_request(1)).spec.id, 7);
}

// What the orphan report offers: the job becomes a new campaign's first segment, followed by the
// tag it carries; it is never submitted again, and the chain goes on from it.
TEST(StoreSurvival, AnOrphanedJobIsTakenBackAsACampaignsFirstSegment) {
  Harness h;
  SlurmJob orphan;
  orphan.name = "lost-s1";
  orphan.comment = JobTag{h.store->store_id(), 7, 1, 1}.str();
  const JobId job = h.slurm.add_job(orphan);
  h.slurm.start(job);
  auto r = simple_request(2);
  r.adopt_job = job;
  const auto id = h.controller->add(r).spec.id;
  EXPECT_THROW(h.controller->add(r), RequestError) << "one job, two campaigns";
  h.tick();
  EXPECT_EQ(h.slurm.submissions_tagged(id, 0).size(), 0u) << "an adopted segment was submitted";
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kRunning);
  EXPECT_EQ(h.seg(id, 0).adopted_tag, orphan.comment);
  h.restart();  // what was adopted survives a restart
  h.slurm.finish(job);
  h.tick();
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
  EXPECT_EQ(h.slurm.submissions_tagged(id, 0).size(), 0u);
  ASSERT_EQ(h.slurm.submissions_tagged(id, 1).size(), 1u);
  // Its checkpoints name campaign 7, whose job it was: the trainer continues them.
  const auto env = h.slurm.submissions_tagged(id, 1)[0].request.environment;
  EXPECT_NE(std::find(env.begin(), env.end(), "MIRAGE_ADOPTED_CAMPAIGN_ID=7"), env.end());
  const auto shown = h.store->submissions(id);
  ASSERT_FALSE(shown.empty());
  EXPECT_NE(shown.front().reason.find("adopted"), std::string::npos);
}

// An adopted job that ended and left the queue before any dump showed it: its tag is read from
// accounting's record, so the segment is known to have run (submitted hours before the adoption)
// and the campaign it came from reaches the next segment.
TEST(StoreSurvival, AnAdoptedJobGoneBeforeAnyDumpIsKnownByItsAccountingRecord) {
  Harness h;
  h.slurm.set_accounting(true);
  SlurmJob orphan;
  orphan.name = "lost-s1";
  orphan.comment = JobTag{h.store->store_id(), 7, 1, 1}.str();
  const JobId job = h.slurm.add_job(orphan);
  h.slurm.start(job);
  h.clock.advance(6 * kHour);
  auto r = simple_request(2);
  r.adopt_job = job;
  const auto id = h.controller->add(r).spec.id;
  h.slurm.finish(job);
  h.slurm.forget(job);  // gone from the queue before the first pass
  for (int i = 0; i < 4 && h.slurm.submissions_tagged(id, 1).empty(); ++i) {
    h.tick();
    h.clock.advance(kMinute);
  }
  EXPECT_EQ(h.seg(id, 0).adopted_tag, orphan.comment);
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone) << h.seg(id, 0).message;
  ASSERT_EQ(h.slurm.submissions_tagged(id, 1).size(), 1u) << h.seg(id, 0).message;
  const auto env = h.slurm.submissions_tagged(id, 1)[0].request.environment;
  EXPECT_NE(std::find(env.begin(), env.end(), "MIRAGE_ADOPTED_CAMPAIGN_ID=7"), env.end());
}

// A job the user submitted by hand carries no tag, and another store's is that store's to
// follow: adopted, either would be held as "left the queue while mirage was not looking" while it
// runs (and a --rerun would start a second segment 0 on its checkpoint). The first dump refuses
// it, naming the job and why; the job is left alone.
TEST(StoreSurvival, AdoptingAJobWithoutThisStoresTagIsRefusedAtTheFirstDump) {
  Harness h;
  SlurmJob by_hand;
  by_hand.name = "by-hand";
  by_hand.comment = "my own run";
  SlurmJob foreign;
  foreign.name = "theirs-s0";
  foreign.comment = JobTag{"0badc0de", 7, 0, 1}.str();
  for (const auto& [job, why] :
       {std::pair{by_hand, std::string("carries no mirage tag")},
        std::pair{foreign, std::string("of store 0badc0de, not this store's")}}) {
    const JobId id = h.slurm.add_job(job);
    h.slurm.start(id);
    auto r = simple_request(2);
    r.name = job.name;
    r.adopt_job = id;
    const auto campaign = h.controller->add(r).spec.id;
    h.tick();
    h.clock.advance(kHour);
    h.tick();
    const std::string message = h.campaign(campaign).message;
    EXPECT_EQ(h.campaign(campaign).state, CampaignState::kFailed) << message;
    EXPECT_NE(message.find("job " + std::to_string(id) + " (" + job.name + ")"), std::string::npos)
        << message;
    EXPECT_NE(message.find(why), std::string::npos) << message;
    EXPECT_FALSE(h.seg(campaign, 0).fate_unknown()) << "held as gone while it runs";
    EXPECT_EQ(h.slurm.find(id)->state, SlurmJobState::kRunning);
  }
  // Where the site rewrites --comment (a job_submit plugin), the daemon's own jobs carry no tag:
  // the refusal says so.
  h.store->set_value("site_rewrites_comments", "1");
  SlurmJob rewritten;
  rewritten.name = "lost-s0";
  rewritten.comment = "rewritten by the site";
  const JobId id = h.slurm.add_job(rewritten);
  auto r = simple_request(2);
  r.name = rewritten.name;
  r.adopt_job = id;
  const auto campaign = h.controller->add(r).spec.id;
  h.tick();
  EXPECT_EQ(h.campaign(campaign).state, CampaignState::kFailed);
  EXPECT_NE(h.campaign(campaign).message.find("this site rewrites --comment"), std::string::npos)
      << h.campaign(campaign).message;
  EXPECT_TRUE(h.slurm.cancels().empty());
  EXPECT_TRUE(h.slurm.submissions().empty());
}

// A store restored from a copy taken before its last submissions: the successor that copy never
// recorded is still in the queue. It is followed as the segment's job; the segment is never
// submitted a second time.
TEST(StoreSurvival, ARestoredStoreFollowsTheSuccessorItNeverRecordedInsteadOfSubmittingItAgain) {
  Harness h;
  const auto id = h.controller->add(simple_request(3)).spec.id;
  h.tick();
  h.slurm.start(h.job_of(id, 0));
  const std::string backup = h.copy_store();
  h.tick();  // the fallback chain queues segment 1
  const auto queued = h.slurm.submissions_tagged(id, 1);
  ASSERT_EQ(queued.size(), 1u);
  const JobId successor = h.job_of(id, 1);

  h.restore_store(backup);
  ASSERT_EQ(h.seg(id, 1).seg.attempts, 0) << "the restored copy knows no successor";
  h.tick();
  h.tick();
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 1u) << "segment 1 submitted twice";
  EXPECT_EQ(h.job_of(id, 1), successor);
  EXPECT_EQ(h.seg(id, 1).seg.attempts, 1);
  h.slurm.finish(h.job_of(id, 0));
  h.slurm.start(successor);
  h.tick();
  EXPECT_EQ(h.seg(id, 1).seg.state, SegmentState::kRunning);
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 1u);
}

// The same for a retry: the copy knows attempt 1, which failed; attempt 2, made after the copy,
// runs. The restored store follows attempt 2 and does not make a third.
TEST(StoreSurvival, ARestoredStoreFollowsTheRetryItNeverRecorded) {
  ControllerConfig config;
  config.fallback_chain = false;
  config.retry_delay = 0;
  Harness h(config);
  const auto id = h.controller->add(simple_request(2)).spec.id;
  h.tick();
  const JobId first = h.job_of(id, 0);
  const std::string backup = h.copy_store();
  h.slurm.start(first);
  h.slurm.finish(first, SlurmJobState::kFailed, 1);
  h.tick();
  h.tick();
  ASSERT_EQ(h.slurm.submissions_tagged(id, 0).size(), 2u);
  const JobId retry = h.job_of(id, 0);
  ASSERT_NE(retry, first);
  h.slurm.start(retry);

  h.restore_store(backup);
  ASSERT_EQ(h.seg(id, 0).seg.attempts, 1);
  for (int i = 0; i < 3; ++i) h.tick();
  EXPECT_EQ(h.slurm.submissions_tagged(id, 0).size(), 2u) << "segment 0 submitted a third time";
  EXPECT_EQ(h.job_of(id, 0), retry);
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kRunning);
}

}  // namespace
}  // namespace mirage::daemon

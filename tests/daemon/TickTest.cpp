// `mirage tick` on the fake cluster: one pass with the daemon's store and controller, nothing
// while another holds the store, and a killed tick's submissions settled by the next one without
// a second job; `campaign` requests served on the store when no daemon runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>

#include "TestSupport.h"
#include "mirage/daemon/control/ControlProtocol.h"
#include "mirage/daemon/service/CampaignPass.h"
#include "mirage/daemon/service/StoreControl.h"
#include "mirage/daemon/service/Tick.h"
#include "mirage/daemon/store/StoreLock.h"

namespace mirage::daemon {
namespace {

using json = nlohmann::json;

struct TickHarness {
  TickHarness() : clock(1'700'000'000), slurm(clock) {
    config = parse_daemon_config("[log]\nlevel = \"warn\"\n", "t.toml");
    config.fallback_chain = false;  // the chain has its own tick test below
    config.store_path = dir.file("store.db");
    config.socket_path = dir.file("m.sock");
    slurm.set_submitter(static_cast<std::uint32_t>(::getuid()));
  }
  TickResult tick(double request_wait_s = kTickWaitForRequest_s) {
    return run_tick(
        config, slurm, clock,
        [this](Seconds t) {
          waited = true;
          clock.set(t);
        },
        request_wait_s);
  }
  json request(const json& r, double lock_wait_s = 0.2) {
    return serve_on_store(config, r, static_cast<std::uint32_t>(::getuid()), slurm, clock,
                          lock_wait_s);
  }
  std::int64_t add(int segments, const std::string& name = "train") {
    json c = {{"name", name},         {"script", "#!/bin/bash\nsleep 20\n"},
              {"segments", segments}, {"nodes", 1},
              {"gpus_per_node", 4},   {"time_limit", kHour},
              {"work_dir", "/tmp"}};
    return request({{"op", "add"}, {"campaign", c}}).at("campaign").at("id").get<std::int64_t>();
  }
  std::size_t jobs_of(std::int64_t id, int segment) const {
    return slurm.submissions_tagged(id, segment).size();
  }

  testing::TempDir dir;
  ManualClock clock;
  FakeSlurmClient slurm;
  DaemonConfig config;
  bool waited = false;
};

TEST(Tick, OnePassSubmitsWhatTheControllerDecidesAndTheNextFollowsIt) {
  TickHarness h;
  const auto id = h.add(2);
  EXPECT_EQ(h.slurm.submissions().size(), 0u);  // added on the store; the tick submits
  const TickResult first = h.tick();
  EXPECT_TRUE(first.ran);
  EXPECT_EQ(first.submitted, 1u);
  EXPECT_EQ(h.jobs_of(id, 0), 1u);
  EXPECT_FALSE(h.waited);  // nothing to settle, no wait

  const JobId job = h.slurm.submissions().at(0).job;
  h.slurm.start(job);
  h.clock.advance(5 * kMinute);
  EXPECT_EQ(h.tick().submitted, 0u);  // running, far from its limit: reactive waits
  h.slurm.finish(job, SlurmJobState::kTimeout);
  h.clock.advance(kMinute);
  EXPECT_EQ(h.tick().submitted, 1u);
  EXPECT_EQ(h.jobs_of(id, 1), 1u);
  const json shown = h.request({{"op", "show"}, {"id", id}}).at("campaign");
  EXPECT_EQ(shown.at("segment_list").at(0).at("state"), "done");
}

// From scrontab, passes come every run of it, not every [poll] interval: a hand-off segment
// waits as long as two such gaps, the grace and Slurm's kill may take.
TEST(Tick, AHandoffSegmentsWaitIsReckonedFromTheGapBetweenTicks) {
  TickHarness h;
  const auto handoff_wait = [&] {
    for (const auto& e : h.slurm.submissions().back().request.environment)
      if (e.rfind("MIRAGE_HANDOFF_WAIT=", 0) == 0) return std::stoll(e.substr(e.find('=') + 1));
    return -1LL;
  };
  h.tick();  // scrontab's first run: nothing to submit
  h.clock.advance(10 * kMinute);
  json c = {{"name", "train"},
            {"script", "#!/bin/bash\nsleep 20\n"},
            {"segments", 2},
            {"nodes", 1},
            {"gpus_per_node", 4},
            {"time_limit", kHour},
            {"work_dir", "/tmp"},
            {"overlap", "handoff"},
            {"handoff_grace", 5 * kMinute}};
  h.request({{"op", "add"}, {"campaign", c}});
  ASSERT_EQ(h.tick().submitted, 1u);
  EXPECT_EQ(handoff_wait(), 2 * 10 * kMinute + 5 * kMinute + kMinute);
  // A tick run by hand half a minute after scrontab's does not shorten it.
  h.clock.advance(30);
  c["name"] = "second";
  h.request({{"op", "add"}, {"campaign", c}});
  ASSERT_EQ(h.tick().submitted, 1u);
  EXPECT_EQ(handoff_wait(), 2 * 10 * kMinute + 5 * kMinute + kMinute);
}

TEST(Tick, WhileAnotherHoldsTheStoreDoesNothingAndSaysWho) {
  TickHarness h;
  h.add(1);
  auto daemon = StoreLock::acquire(h.config.store_path, "mirage daemon", 0);
  ASSERT_TRUE(daemon.has_value());
  const auto t0 = std::chrono::steady_clock::now();
  const TickResult r = h.tick();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));  // no wait
  EXPECT_FALSE(r.ran);
  EXPECT_TRUE(r.holder_passes);  // the daemon's pass is this one's
  EXPECT_EQ(r.held_by, "pid " + std::to_string(::getpid()) + " (mirage daemon)");
  EXPECT_TRUE(h.slurm.submissions().empty());
}

// A tick given the store through a symlink (the old place, after the store moved to the shared
// file system) while the daemon holds the real file: the same store, so it does not run.
TEST(Tick, ThroughASymlinkWhileTheRealStoreIsHeldDoesNothing) {
  TickHarness h;
  h.add(1);
  auto daemon = StoreLock::acquire(h.config.store_path, "mirage daemon", 0);
  ASSERT_TRUE(daemon.has_value());
  const std::string link = h.dir.file("link.db");
  std::filesystem::create_symlink(h.config.store_path, link);
  h.config.store_path = link;
  const TickResult r = h.tick();
  EXPECT_FALSE(r.ran);
  EXPECT_EQ(r.held_by, "pid " + std::to_string(::getpid()) + " (mirage daemon)");
  EXPECT_EQ(h.slurm.counters().submits, 0u);
}

// The lock file deleted while the tick decides, and a second tick locking the new one: the first
// no longer holds the store, so it submits nothing (its intent settles by its tag later).
TEST(Tick, WhoseLockFileIsTakenMeanwhileSubmitsNothing) {
  TickHarness h;
  h.add(1);
  std::optional<StoreLock> second;
  h.slurm.set_on_dump([&](FakeSlurmClient&) {
    std::filesystem::remove(StoreLock::lock_path(h.config.store_path));
    second = StoreLock::acquire(h.config.store_path, "mirage tick", 0);
  });
  try {
    h.tick();
    FAIL() << "the tick acted on a store whose lock file another tick holds";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(" was replaced by another file while this tick held it"),
              std::string::npos)
        << e.what();
  }
  ASSERT_TRUE(second.has_value());
  EXPECT_TRUE(h.slurm.submissions().empty());
}

// The lock file replaced while the tick submits (after the check made before acting): the next
// submission is not made, as the process holding the new file may act on the store.
TEST(Tick, WhoseLockFileIsTakenBetweenTwoSubmissionsMakesNoMore) {
  TickHarness h;
  h.add(1, "a");
  h.add(1, "b");
  std::optional<StoreLock> second;
  h.slurm.set_on_submit([&](FakeSlurmClient&) {
    if (second) return;
    std::filesystem::remove(StoreLock::lock_path(h.config.store_path));
    second = StoreLock::acquire(h.config.store_path, "mirage tick", 0);
  });
  EXPECT_THROW(h.tick(), std::runtime_error);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(h.slurm.submissions().size(), 1u)
      << "the tick went on submitting after another process locked the store";
}

// A `campaign` command holds the store for one request and makes no pass: the tick waits for it
// and makes its own, rather than skip it believing the holder makes it.
TEST(Tick, WhileACampaignCommandHoldsTheStoreWaitsForItThenMakesThePass) {
  TickHarness h;
  const auto id = h.add(1);
  std::optional<StoreLock> request = StoreLock::acquire(h.config.store_path, "mirage campaign", 0);
  ASSERT_TRUE(request.has_value());
  std::thread done([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    request.reset();
  });
  const TickResult r = h.tick(10);
  done.join();
  EXPECT_TRUE(r.ran);
  EXPECT_EQ(r.submitted, 1u);
  EXPECT_EQ(h.jobs_of(id, 0), 1u);
}

TEST(Tick, ACampaignCommandThatKeepsTheStoreLeavesThePassSkippedAndSaysSo) {
  TickHarness h;
  h.add(1);
  auto request = StoreLock::acquire(h.config.store_path, "mirage campaign", 0);
  ASSERT_TRUE(request.has_value());
  const TickResult r = h.tick(0.3);
  EXPECT_FALSE(r.ran);
  EXPECT_FALSE(r.holder_passes);
  EXPECT_EQ(r.waited_s, 0.3);
  EXPECT_TRUE(h.slurm.submissions().empty());
  EXPECT_TRUE(holder_makes_pass("pid 9 (mirage tick)"));
  EXPECT_FALSE(holder_makes_pass("another process"));
}

TEST(Tick, SubmissionWhoseReplyWasLostIsAdoptedByTheNextTickNotSubmittedAgain) {
  TickHarness h;
  const auto id = h.add(1);
  h.slurm.lose_next_submit_reply();  // Slurm has the job; the tick never learns its id
  EXPECT_EQ(h.tick().unresolved, 1u);
  const TickResult next = h.tick();
  EXPECT_TRUE(h.waited);  // settled on a dump taken reconcile_delay after the lock
  EXPECT_EQ(next.unresolved, 0u);
  EXPECT_EQ(next.submitted, 0u);
  EXPECT_EQ(h.jobs_of(id, 0), 1u);
}

// A store restored from before segments 1 and 2, which then ran and ended: one tick finds both in
// accounting, adopts them one pass after the other, and submits segment 3, the only submission.
TEST(Tick, ARestoredStoreAdoptsTheSegmentsThatRanUnseenAndSubmitsTheNextInOneTick) {
  TickHarness h;
  h.slurm.set_accounting(true);
  const auto id = h.add(4);
  h.tick();
  std::vector<JobId> jobs{h.slurm.submissions().back().job};
  h.slurm.start(jobs[0]);
  const std::string backup = h.dir.file("store.backup");
  std::filesystem::copy_file(h.config.store_path, backup);
  for (int k = 1; k <= 2; ++k) {
    h.slurm.finish(jobs.back());
    h.clock.advance(kMinute);
    ASSERT_EQ(h.tick().submitted, 1u);
    jobs.push_back(h.slurm.submissions().back().job);
    h.slurm.start(jobs.back());
  }
  h.slurm.finish(jobs.back());
  for (JobId job : jobs) h.slurm.forget(job);
  h.clock.advance(10 * kMinute);
  std::filesystem::remove(h.config.store_path + "-wal");
  std::filesystem::copy_file(backup, h.config.store_path,
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(h.tick().submitted, 1u);
  EXPECT_EQ(h.jobs_of(id, 1), 1u) << "segment 1 ran unseen and was submitted again";
  EXPECT_EQ(h.jobs_of(id, 2), 1u) << "segment 2 ran unseen and was submitted again";
  EXPECT_EQ(h.jobs_of(id, 3), 1u);
}

TEST(Tick, IntentOfATickKilledBeforeSubmittingIsSubmittedOnceByTheNext) {
  TickHarness h;
  const auto id = h.add(1);
  {  // a tick that died after committing its intent, before running sbatch
    CampaignPass killed(h.config, h.clock);
    killed.set_jobs(h.slurm.load_jobs(0).jobs);
    ASSERT_EQ(killed.decide(h.clock.now(), true).submits.size(), 1u);
  }
  const TickResult next = h.tick();
  EXPECT_TRUE(h.waited);
  EXPECT_EQ(next.submitted, 1u);
  EXPECT_EQ(h.jobs_of(id, 0), 1u);
  EXPECT_EQ(h.tick().submitted, 0u);
  EXPECT_EQ(h.jobs_of(id, 0), 1u);
}

TEST(StoreControl, CancelWithoutADaemonCancelsTheCampaignsJobsAtOnce) {
  TickHarness h;
  const auto id = h.add(2);
  h.tick();
  const JobId job = h.slurm.submissions().at(0).job;
  const json c = h.request({{"op", "cancel"}, {"id", id}}).at("campaign");
  EXPECT_EQ(c.at("state"), "cancelled");
  ASSERT_EQ(h.slurm.cancels().size(), 1u);
  EXPECT_EQ(h.slurm.cancels().at(0), job);
}

// slurmctld away when a cancel is served on the store: the campaign is cancelled, but its job
// still runs; the reply names it (the command says so), and the next tick cancels it.
TEST(StoreControl, CancelWhoseScancelFailsNamesTheJobNotCancelledYet) {
  TickHarness h;
  const auto id = h.add(2);
  h.tick();
  const JobId job = h.slurm.submissions().at(0).job;
  h.slurm.start(job);
  h.slurm.set_reachable(false);
  const json reply = h.request({{"op", "cancel"}, {"id", id}});
  EXPECT_EQ(reply.at("campaign").at("state"), "cancelled");
  ASSERT_TRUE(reply.contains("not_cancelled")) << reply;
  ASSERT_EQ(reply.at("not_cancelled").size(), 1u) << reply;
  EXPECT_EQ(reply.at("not_cancelled").at(0).at("job"), job);
  EXPECT_FALSE(reply.at("not_cancelled").at(0).at("error").get<std::string>().empty());
  EXPECT_EQ(h.slurm.find(job)->state, SlurmJobState::kRunning);
  h.slurm.set_reachable(true);
  h.clock.advance(kMinute);
  h.tick();
  EXPECT_NE(h.slurm.find(job)->state, SlurmJobState::kRunning);
  // Taken at once: the reply names no job.
  const auto other = h.add(1, "other");
  h.tick();
  EXPECT_FALSE(h.request({{"op", "cancel"}, {"id", other}}).contains("not_cancelled"));
}

TEST(StoreControl, RequestWhileAnotherHoldsTheStoreSaysSoAfterWaiting) {
  TickHarness h;
  auto tick = StoreLock::acquire(h.config.store_path, "mirage tick", 0);
  ASSERT_TRUE(tick.has_value());
  try {
    h.request({{"op", "list"}});
    FAIL() << "served while the store was locked";
  } catch (const StoreBusyError& e) {
    EXPECT_NE(std::string(e.what()).find("is in use by pid"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mirage::daemon

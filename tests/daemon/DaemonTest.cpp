// The whole daemon (event loop, Slurm thread, store, socket) against the fake Slurm: a campaign
// runs to the end through the control socket, and an unreachable controller is ridden out.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <thread>

#include "TestSupport.h"
#include "mirage/daemon/control/ControlProtocol.h"
#include "mirage/daemon/control/ControlServer.h"
#include "mirage/daemon/service/Daemon.h"
#include "mirage/daemon/slurm/ChildProcess.h"
#include "mirage/daemon/store/CampaignStore.h"
#include "mirage/daemon/store/StoreLock.h"

namespace mirage::daemon {
namespace {

using json = nlohmann::json;

struct RunningDaemon {
  explicit RunningDaemon(const DaemonConfig& config, std::unique_ptr<FakeSlurmClient> fake)
      : daemon(config, std::move(fake), std::make_shared<SystemClock>()),
        thread([this] { daemon.run(false); }) {}
  ~RunningDaemon() {
    daemon.stop();
    thread.join();
  }
  Daemon daemon;
  std::thread thread;
};

template <typename F>
bool eventually(F f, int seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < end) {
    try {
      if (f()) return true;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

TEST(Daemon, RunsACampaignAndRidesOutAnUnreachableController) {
  testing::TempDir dir;
  DaemonConfig config = parse_daemon_config(
      "[poll]\ninterval = 1\nbackoff_max = 2\n[policy]\nfallback_lead = 0\n[log]\nlevel = "
      "\"warn\"\n",
      "t.toml");
  config.store_path = dir.file("store.db");
  config.socket_path = dir.file("m.sock");
  SystemClock clock;
  std::atomic<bool> down{false};
  auto fake = std::make_unique<FakeSlurmClient>(clock);
  // The cluster, moved along from the daemon's Slurm thread: jobs start on the next dump and
  // end on the one after.
  fake->set_on_dump([&down](FakeSlurmClient& f) {
    f.set_reachable(!down.load());
    std::vector<JobId> start, finish;
    for (const auto& [id, j] : f.jobs()) {
      if (j.state == SlurmJobState::kPending) start.push_back(id);
      if (j.state == SlurmJobState::kRunning) finish.push_back(id);
    }
    for (JobId id : finish) f.finish(id);
    for (JobId id : start) f.start(id);
  });
  RunningDaemon d(config, std::move(fake));
  const std::string sock = config.socket_path;
  ASSERT_TRUE(eventually(
      [&] {
        return call_daemon(sock, {{"op", "ping"}})["ok"].get<bool>();
      },
      10));

  const json add = {
      {"op", "add"},
      {"campaign",
       {{"name", "t"}, {"script", "#!/bin/sh\n"}, {"segments", 2}, {"time_limit", 600}}}};
  const auto id = call_daemon(sock, add)["campaign"]["id"].get<std::int64_t>();
  ASSERT_TRUE(eventually(
      [&] {
        return call_daemon(sock, {{"op", "show"}, {"id", id}})["campaign"]["state"] == "done";
      },
      20));
  const json shown = call_daemon(sock, {{"op", "show"}, {"id", id}})["campaign"];
  EXPECT_EQ(shown["submissions"].size(), 2u);

  down = true;
  EXPECT_TRUE(eventually(
      [&] {
        return !call_daemon(sock, {{"op", "status"}})["daemon"]["controller_reachable"].get<bool>();
      },
      10));
  // Still serving while the controller is away.
  EXPECT_EQ(call_daemon(sock, {{"op", "list"}})["campaigns"].size(), 1u);
  down = false;
  EXPECT_TRUE(eventually(
      [&] {
        return call_daemon(sock, {{"op", "status"}})["daemon"]["controller_reachable"].get<bool>();
      },
      10));
  const json st = call_daemon(sock, {{"op", "status"}})["daemon"];
  EXPECT_EQ(st["partition"], "gpu");
  EXPECT_EQ(st["nodes"], 4);
  EXPECT_GT(st["history_snapshots"].get<int>(), 0);
}

TEST(Daemon, ARestartKeepsCampaignsAndHistory) {
  testing::TempDir dir;
  DaemonConfig config =
      parse_daemon_config("[poll]\ninterval = 1\n[log]\nlevel = \"warn\"\n", "t.toml");
  config.store_path = dir.file("store.db");
  config.socket_path = dir.file("m.sock");
  SystemClock clock;
  std::int64_t id = 0;
  {
    RunningDaemon d(config, std::make_unique<FakeSlurmClient>(clock));
    ASSERT_TRUE(eventually(
        [&] {
          return call_daemon(config.socket_path, {{"op", "status"}})["daemon"]["polls"].get<int>() >
                 0;
        },
        10));
    id = call_daemon(config.socket_path, {{"op", "add"},
                                          {"campaign",
                                           {{"name", "keep"},
                                            {"script", "#!/bin/sh\nx\n"},
                                            {"segments", 3},
                                            {"time_limit", 600}}}})["campaign"]["id"]
             .get<std::int64_t>();
    call_daemon(config.socket_path, {{"op", "pause"}, {"id", id}});
  }
  RunningDaemon d(config, std::make_unique<FakeSlurmClient>(clock));
  ASSERT_TRUE(eventually(
      [&] {
        return call_daemon(config.socket_path, {{"op", "ping"}})["ok"].get<bool>();
      },
      10));
  const json c = call_daemon(config.socket_path, {{"op", "show"}, {"id", id}})["campaign"];
  EXPECT_EQ(c["state"], "paused");
  EXPECT_EQ(c["name"], "keep");
  EXPECT_GE(
      call_daemon(config.socket_path, {{"op", "status"}})["daemon"]["history_snapshots"].get<int>(),
      1);
}

// The lock file deleted under a running daemon: the next process would lock a new file and act on
// the store beside it, so the daemon makes the file again and holds it.
// A daemon polling every second on a store and socket in `dir`, silent.
DaemonConfig quiet_config(const testing::TempDir& dir) {
  DaemonConfig config =
      parse_daemon_config("[poll]\ninterval = 1\n[log]\nlevel = \"off\"\n", "t.toml");
  config.store_path = dir.file("store.db");
  config.socket_path = dir.file("m.sock");
  return config;
}

// A daemon handling its signals, run in a child process (the signals are sent to the whole
// process, and one not handled ends it): `prepare` is done first, `disturb` once it serves, then
// SIGTERM. Says whether it still served after `disturb`, and how it stopped.
std::string serve_disturbed_in_child(const DaemonConfig& config,
                                     const std::function<void()>& prepare,
                                     const std::function<void()>& disturb) {
  return testing::in_child_process([&]() -> std::string {
    prepare();
    auto clock = std::make_shared<SystemClock>();
    Daemon daemon(config, std::make_unique<FakeSlurmClient>(*clock), clock);
    std::atomic<int> status{-1};
    std::thread serving([&] { status = daemon.run(/*handle_signals=*/true); });
    const auto pings = [&] {
      return call_daemon(config.socket_path, {{"op", "ping"}})["ok"].get<bool>();
    };
    std::string why;
    if (!eventually(pings, 10)) {
      why = "never served; ";
    } else {
      disturb();
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      if (!eventually(pings, 5)) why = "stopped serving after the disturbance; ";
    }
    ::kill(::getpid(), SIGTERM);
    serving.join();
    return why + "exit status " + std::to_string(status.load());
  });
}

// `mirage daemon &` from an ssh or tmux shell: a daemon outlives its terminal, so the hang-up
// leaves it serving; SIGTERM still stops it cleanly.
TEST(Daemon, AHangUpLeavesItServingAndSigtermStillStopsIt) {
  testing::TempDir dir;
  const DaemonConfig config = quiet_config(dir);
  EXPECT_EQ(serve_disturbed_in_child(
                config, [] {}, [] { ::kill(::getpid(), SIGHUP); }),
            "exit status 0");
}

// `mirage daemon 2>&1 | tee log &`, the terminal hung up: tee is gone, and each later log line
// is written to a pipe no one reads. The lines are lost; the daemon serves on, not killed by
// SIGPIPE.
TEST(Daemon, AStderrPipeWhoseReaderIsGoneLeavesItServing) {
  testing::TempDir dir;
  DaemonConfig config = quiet_config(dir);
  config.log_level = "info";  // to stderr: no [log] file
  const auto stderr_to_a_gone_reader = [&] {
    int fds[2];
    if (::pipe(fds) != 0) return;
    ::close(fds[0]);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[1]);
    configure_logging(config);
  };
  EXPECT_EQ(serve_disturbed_in_child(config, stderr_to_a_gone_reader,
                                     [] { spdlog::info("a line no one reads"); }),
            "exit status 0");
}

// The daemon ignores SIGPIPE; the commands it runs do not (sbatch, scontrol writing to a reader
// gone end as they would from a shell).
TEST(Daemon, TheCommandsItRunsKeepSigpipesDefault) {
  const std::string ignored = testing::in_child_process([] {
    std::signal(SIGPIPE, SIG_IGN);
    ChildProcessSpec cat;
    cat.program = "/bin/cat";
    cat.args = {"/proc/self/status"};
    const ChildProcessResult r = run_child_process(cat);
    const auto at = r.out.find("SigIgn:");
    if (at == std::string::npos) return "no SigIgn in: " + r.out;
    const unsigned long long mask = std::stoull(r.out.substr(at + 7), nullptr, 16);
    return std::string(mask & (1ULL << (SIGPIPE - 1)) ? "ignored" : "default");
  });
  EXPECT_EQ(ignored, "default");
}

TEST(Daemon, MakesItsDeletedLockFileAgainAndHoldsIt) {
  testing::TempDir dir;
  const DaemonConfig config = quiet_config(dir);
  SystemClock clock;
  RunningDaemon d(config, std::make_unique<FakeSlurmClient>(clock));
  const std::string lock_file = StoreLock::lock_path(config.store_path);
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(config.socket_path); }, 10));
  std::filesystem::remove(lock_file);
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(lock_file); }, 5));
  std::string held_by;
  EXPECT_FALSE(StoreLock::acquire(config.store_path, "mirage tick", 0, &held_by).has_value());
  EXPECT_EQ(held_by, "pid " + std::to_string(::getpid()) + " (mirage daemon)");
}

// A store that is a symlink: the daemon also holds `<link>.lock` (an older mirage's lock), and
// makes that one again when deleted without taking its own lock on the real file for another's.
TEST(Daemon, MakesTheDeletedOldLockFileOfASymlinkedStoreAgainAndHoldsIt) {
  testing::TempDir dir;
  DaemonConfig config = quiet_config(dir);
  std::filesystem::create_directory(dir.file("shared"));
  const std::string real = dir.file("shared/store.db");
  { CampaignStore made(real); }
  std::filesystem::create_symlink(real, dir.file("link.db"));
  config.store_path = dir.file("link.db");
  const std::string old_lock = config.store_path + ".lock";
  SystemClock clock;
  Daemon daemon(config, std::make_unique<FakeSlurmClient>(clock), std::make_shared<SystemClock>());
  std::atomic<int> status{-1};
  std::thread t([&] { status = daemon.run(false); });
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(config.socket_path); }, 10));
  std::filesystem::remove(old_lock);
  const bool remade = eventually([&] { return std::filesystem::exists(old_lock); }, 5);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a watch or two more
  const int stopped_with = status.load();
  std::string held_by;
  const bool tick_got_it =
      StoreLock::acquire(config.store_path, "mirage tick", 0, &held_by).has_value();
  if (stopped_with < 0) daemon.stop();
  t.join();
  EXPECT_TRUE(remade);
  EXPECT_EQ(stopped_with, -1) << "the daemon stopped";
  EXPECT_FALSE(tick_got_it);
  EXPECT_EQ(held_by, "pid " + std::to_string(::getpid()) + " (mirage daemon)");
}

// Another process locked the new file before the daemon could: the daemon stops (exit status 1)
// instead of acting on the store beside it.
TEST(Daemon, StopsWhenAnotherProcessHoldsItsReplacedLockFile) {
  testing::TempDir dir;
  const DaemonConfig config = quiet_config(dir);
  SystemClock clock;
  Daemon daemon(config, std::make_unique<FakeSlurmClient>(clock), std::make_shared<SystemClock>());
  std::atomic<int> status{-1};
  std::thread t([&] { status = daemon.run(false); });
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(config.socket_path); }, 10));
  // The daemon makes its deleted lock file again within a second, and on a loaded machine it may
  // get there between the removal and the lock: the file is then taken away again.
  std::optional<StoreLock> second;
  for (int i = 0; i < 50 && !second; ++i) {
    std::filesystem::remove(StoreLock::lock_path(config.store_path));
    second = StoreLock::acquire(config.store_path, "mirage daemon", 0);
  }
  EXPECT_TRUE(second.has_value());
  const bool stopped = eventually([&] { return status.load() >= 0; }, 5);
  if (!stopped) daemon.stop();
  t.join();
  EXPECT_TRUE(stopped) << "the daemon went on acting beside the new lock's holder";
  EXPECT_EQ(status.load(), 1);
}

// The lock file replaced while the Slurm thread is busy submitting, after the next submission was
// decided: that one is not made, though the one-second watch has not run yet.
TEST(Daemon, MakesNoSubmissionAfterItsLockFileWasTakenMeanwhile) {
  testing::TempDir dir;
  const DaemonConfig config = quiet_config(dir);
  SystemClock clock;
  auto owned = std::make_unique<FakeSlurmClient>(clock);
  FakeSlurmClient* fake = owned.get();
  std::atomic<bool> second_added{false};
  std::optional<StoreLock> second_holder;
  fake->set_on_submit([&](FakeSlurmClient&) {
    if (second_holder) return;
    // Held here, on the Slurm thread, until the second campaign's submission is decided and
    // queued behind this one; then another process takes the store.
    eventually([&] { return second_added.load(); }, 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::filesystem::remove(StoreLock::lock_path(config.store_path));
    second_holder = StoreLock::acquire(config.store_path, "mirage daemon", 0);
  });
  Daemon daemon(config, std::move(owned), std::make_shared<SystemClock>());
  std::atomic<int> status{-1};
  std::thread t([&] { status = daemon.run(false); });
  const std::string sock = config.socket_path;
  ASSERT_TRUE(eventually(
      [&] {
        return call_daemon(sock, {{"op", "ping"}})["ok"].get<bool>();
      },
      10));
  for (const char* name : {"a", "b"}) {
    const json add = {
        {"op", "add"},
        {"campaign",
         {{"name", name}, {"script", "#!/bin/sh\n"}, {"segments", 1}, {"time_limit", 600}}}};
    call_daemon(sock, add);
  }
  second_added = true;
  const bool stopped = eventually([&] { return status.load() >= 0; }, 10);
  if (!stopped) daemon.stop();
  t.join();
  ASSERT_TRUE(second_holder.has_value());
  EXPECT_EQ(fake->submissions().size(), 1u)
      << "the daemon submitted after another process had taken its store";
  EXPECT_EQ(status.load(), 1);
}

// The daemon put its socket where the store was and deleted the store to do it.
TEST(Daemon, SocketPathEqualToStoreIsRefused) {
  testing::TempDir dir;
  DaemonConfig config = parse_daemon_config("[log]\nlevel = \"off\"\n", "t.toml");
  config.store_path = dir.file("store.db");
  config.socket_path = config.store_path;
  SystemClock clock;
  Daemon daemon(config, std::make_unique<FakeSlurmClient>(clock), std::make_shared<SystemClock>());
  std::atomic<bool> ended{false};
  std::string error;
  std::thread t([&] {
    try {
      daemon.run(false);
    } catch (const std::exception& e) {
      error = e.what();
    }
    ended = true;
  });
  const bool refused = eventually([&] { return ended.load(); }, 5);
  if (!refused) daemon.stop();
  t.join();
  EXPECT_TRUE(refused) << "the daemon started with its socket on its store";
  EXPECT_NE(error.find("is a regular file"), std::string::npos) << error;
  ASSERT_TRUE(std::filesystem::is_regular_file(config.store_path));
  CampaignStore store(config.store_path);  // still the store
  EXPECT_EQ(store.store_id().size(), 8u);
}

}  // namespace
}  // namespace mirage::daemon

namespace mirage::daemon {
namespace {

// The daemon holds its store for its life (no other process may open it, so no -shm file is
// mapped); `mirage trace export` asks it to write what it observed.
TEST(Daemon, ExportsWhatItObservedWhileItHoldsTheStore) {
  testing::TempDir dir;
  DaemonConfig config =
      parse_daemon_config("[poll]\ninterval = 1\n[log]\nlevel = \"warn\"\n", "t.toml");
  config.store_path = dir.file("store.db");
  config.socket_path = dir.file("m.sock");
  SystemClock clock;
  auto fake = std::make_unique<FakeSlurmClient>(clock);
  SlurmJob seen;
  seen.user_id = 4242;
  seen.nodes = 2;
  const JobId job = fake->add_job(seen);
  fake->start(job);
  fake->finish(job);
  RunningDaemon d(config, std::move(fake));
  ASSERT_TRUE(eventually(
      [&] {
        return call_daemon(config.socket_path, {{"op", "status"}})["daemon"]["polls"].get<int>() >
               1;
      },
      10));
  EXPECT_THROW(CampaignStore{config.store_path}, std::runtime_error) << "the store is the daemon's";
  // No shared-memory index to be mapped: a -shm file made immutable under a daemon killed it.
  EXPECT_FALSE(std::filesystem::exists(config.store_path + "-shm"));
  const std::string out = dir.file("observed.swf");
  const json reply = call_daemon(config.socket_path, {{"op", "export"}, {"out", out}});
  EXPECT_EQ(reply["jobs"].get<int>(), 1);
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("exported by the mirage daemon"), std::string::npos) << text;
  EXPECT_THROW(call_daemon(config.socket_path, {{"op", "export"}, {"out", "relative.swf"}}),
               RequestError);
}

}  // namespace
}  // namespace mirage::daemon

namespace mirage::daemon {
namespace {

// The disk fills up under a running daemon (here: the file size limit, in a child process, as it
// is the process's): it keeps polling and serving, refuses what would write with one line naming
// the store, says so in its status, submits nothing, and goes on once the store can be written.
TEST(Daemon, AStoreThatCannotBeWrittenDoesNotStopTheDaemon) {
  testing::TempDir dir;
  const std::string out = testing::in_child_process([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    DaemonConfig config = parse_daemon_config(
        "[poll]\ninterval = 1\ncluster_every = \"1s\"\n[log]\nlevel = \"off\"\n", "t.toml");
    config.store_path = dir.file("store.db");
    config.socket_path = dir.file("m.sock");
    SystemClock clock;
    auto fake = std::make_unique<FakeSlurmClient>(clock);
    FakeSlurmClient* slurm = fake.get();
    RunningDaemon d(config, std::move(fake));
    const auto status = [&] {
      return call_daemon(config.socket_path, {{"op", "status"}})["daemon"];
    };
    if (!eventually([&] { return status()["polls"].get<int>() > 0; }, 10))
      return std::string("no poll");
    std::uintmax_t size = 0;
    for (const char* suffix : {"", "-wal"})
      if (std::filesystem::exists(config.store_path + suffix))
        size = std::max(size, std::filesystem::file_size(config.store_path + suffix));
    rlimit full{static_cast<rlim_t>(size), RLIM_INFINITY};
    ::setrlimit(RLIMIT_FSIZE, &full);
    const json add = {{"op", "add"},
                      {"campaign",
                       {{"name", "big"},
                        {"script", "#!/bin/sh\n#" + std::string(300000, 'x') + "\n"},
                        {"segments", 2},
                        {"time_limit", 600}}}};
    std::string refused;
    try {
      call_daemon(config.socket_path, add);
    } catch (const RequestError& e) {
      refused = e.what();
    }
    // Polls and partition loads (every second here) go on while nothing can be written.
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
    const bool alive = status()["polls"].get<int>() > 0;
    const bool said =
        eventually([&] { return !status()["store_error"].get<std::string>().empty(); }, 15);
    const std::size_t submitted = slurm->submissions().size();
    rlimit room{RLIM_INFINITY, RLIM_INFINITY};
    ::setrlimit(RLIMIT_FSIZE, &room);
    const auto id = call_daemon(config.socket_path, add)["campaign"]["id"].get<std::int64_t>();
    const bool ran = eventually([&] { return !slurm->submissions_tagged(id, 0).empty(); }, 10);
    const bool recovered =
        eventually([&] { return status()["store_error"].get<std::string>().empty(); }, 10);
    return "refused=" + refused + "\nalive=" + std::to_string(alive) +
           "\nsaid=" + std::to_string(said) +
           "\nsubmitted_while_full=" + std::to_string(submitted) + "\nran=" + std::to_string(ran) +
           "\nrecovered=" + std::to_string(recovered) + "\n";
  });
  EXPECT_NE(out.find("cannot be written"), std::string::npos) << out;
  EXPECT_NE(out.find(dir.file("store.db")), std::string::npos) << out;
  EXPECT_NE(out.find("alive=1"), std::string::npos) << out;
  EXPECT_NE(out.find("submitted_while_full=0"), std::string::npos) << out;
  EXPECT_NE(out.find("ran=1"), std::string::npos) << out;
  EXPECT_NE(out.find("recovered=1"), std::string::npos) << out;
}

}  // namespace
}  // namespace mirage::daemon

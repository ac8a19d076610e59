// The daemon's TOML config: every key read, and every mistake named by file, line and key.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>

#include "TestSupport.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/core/Error.h"
#include "mirage/daemon/service/DaemonConfig.h"
#include "mirage/daemon/store/CampaignStore.h"

namespace mirage::daemon {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_daemon_config(text, "m.toml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(DaemonConfig, ReadsEveryKey) {
  const auto c = parse_daemon_config(R"(
[cluster]
backend = "simulator"
slurm_conf = "/etc/slurm/slurm.conf"
sbatch = "/opt/slurm/bin/sbatch"
sbatch_timeout = "90s"
partition = "gpu"
account = "proj"
[poll]
interval = "15s"
cluster_every = "10m"
backoff_max = 120
[simulator]
trace = "/data/t.swf"
speed = 120.5
warmup = "1d"
nodes = 64
gpus_per_node = 8
checkpoint = "90s"
[store]
path = "/var/tmp/m.db"
[socket]
path = "/run/user/1/m.sock"
max_request_bytes = 4096
max_clients = 4
idle_timeout = "30s"
[policy]
default = "average"
decision_interval = "5m"
fallback_lead = "2m"
[guard]
max_campaigns_per_user = 3
earliest_submission = "12h"
max_retries = 5
retry_delay = "30s"
[handoff]
signal = "SIGUSR2"
grace = "00:10:00"
[log]
level = "debug"
file = "/tmp/m.log"
)",
                                     "m.toml");
  EXPECT_EQ(c.backend, Backend::kSimulator);
  EXPECT_EQ(c.partition, "gpu");
  EXPECT_EQ(c.account, "proj");
  EXPECT_EQ(c.sbatch, "/opt/slurm/bin/sbatch");
  EXPECT_EQ(c.sbatch_timeout, 90);
  EXPECT_EQ(c.poll_interval, 15);
  EXPECT_EQ(c.cluster_every, 600);
  EXPECT_EQ(c.backoff_max, 120);
  EXPECT_EQ(c.sim_trace, "/data/t.swf");
  EXPECT_DOUBLE_EQ(c.sim_speed, 120.5);
  EXPECT_EQ(c.sim_warmup, kDay);
  EXPECT_EQ(c.sim_nodes, 64);
  EXPECT_EQ(c.sim_gpus_per_node, 8);
  EXPECT_EQ(c.sim_checkpoint, 90);
  EXPECT_EQ(c.store_path, "/var/tmp/m.db");
  EXPECT_EQ(c.socket_path, "/run/user/1/m.sock");
  EXPECT_EQ(c.max_request_bytes, 4096u);
  EXPECT_EQ(c.max_clients, 4);
  EXPECT_EQ(c.client_idle_timeout, 30);
  EXPECT_EQ(c.default_policy, "average");
  EXPECT_EQ(c.decision_interval, 300);
  EXPECT_EQ(c.fallback_lead, 120);
  EXPECT_EQ(c.max_campaigns_per_user, 3);
  EXPECT_EQ(c.earliest_submission, 12 * kHour);
  EXPECT_EQ(c.max_retries, 5);
  EXPECT_EQ(c.retry_delay, 30);
  EXPECT_EQ(c.handoff_signal, SIGUSR2);
  EXPECT_EQ(c.handoff_grace, 600);
  EXPECT_EQ(c.log_level, "debug");
  const auto cc = c.controller_config();
  EXPECT_TRUE(cc.time_limit_required);  // the simulated cluster has no default limit
  EXPECT_EQ(cc.earliest_submission, 12 * kHour);
  EXPECT_EQ(cc.handoff_signal, SIGUSR2);
  EXPECT_EQ(cc.handoff_grace, 600);  // of campaigns added without --handoff-grace
  EXPECT_EQ(cc.tick_interval, 15);   // what a hand-off segment's wait is reckoned from
}

TEST(DaemonConfig, DefaultsFillTheRest) {
  const auto c = parse_daemon_config("", "m.toml");
  EXPECT_EQ(c.backend, Backend::kSlurm);
  EXPECT_EQ(c.poll_interval, 30);
  EXPECT_EQ(c.handoff_signal, SIGUSR1);
  EXPECT_FALSE(c.store_path.empty());
  EXPECT_FALSE(c.socket_path.empty());
}

// The default of new campaigns is what bench/learned_verdict.sh wrote from its figures, and one
// the daemon can run on any cluster: a known policy that needs no file beside it.
TEST(DaemonConfig, TheDefaultPolicyIsTheVerdictsAndNeedsNoFile) {
  std::ifstream verdict(MIRAGE_SOURCE_DIR "/daemon/config/default-policy.toml");
  std::string line, policy;
  while (std::getline(verdict, line))
    if (line.rfind("policy = \"", 0) == 0) policy = line.substr(10, line.rfind('"') - 10);
  ASSERT_FALSE(policy.empty()) << "no policy line in daemon/config/default-policy.toml";
  const auto c = parse_daemon_config("", "m.toml");
  EXPECT_EQ(c.default_policy, policy);
  EXPECT_EQ(c.controller_config().default_policy, policy);
  EXPECT_TRUE(is_known_policy(PolicySpec(policy))) << policy;
  EXPECT_FALSE(reads_wait_distribution(PolicySpec(policy))) << policy;
}

// The example a user copies says what the daemon does when the key is left out.
TEST(DaemonConfig, TheExampleStatesTheCompiledDefaults) {
  const auto example = load_daemon_config(MIRAGE_SOURCE_DIR "/daemon/config/mirage.example.toml");
  const auto compiled = parse_daemon_config("", "m.toml");
  EXPECT_EQ(example.default_policy, compiled.default_policy);
  EXPECT_EQ(example.poll_interval, compiled.poll_interval);
  EXPECT_EQ(example.max_retries, compiled.max_retries);
  EXPECT_EQ(example.fallback_chain, compiled.fallback_chain);
}

TEST(DaemonConfig, UnknownKeysAreErrorsNamingTheKeyAndLine) {
  EXPECT_EQ(error_of("[poll]\ninterval = 5\nintervall = 6\n")
                .rfind("m.toml:3: field 'poll.intervall': unknown key", 0),
            0u)
      << error_of("[poll]\nintervall = 6\n");
  EXPECT_NE(error_of("[pol]\ninterval = 5\n").find("field 'pol': unknown section"),
            std::string::npos);
  EXPECT_NE(error_of("top = 1\n").find("field 'top': unknown section"), std::string::npos);
}

TEST(DaemonConfig, IllTypedValuesAreErrorsNamingTheKey) {
  EXPECT_NE(error_of("[poll]\ninterval = true\n")
                .find("m.toml:2: field 'poll.interval': expected a duration"),
            std::string::npos);
  EXPECT_NE(error_of("[poll]\ninterval = \"soon\"\n").find("'poll.interval'"), std::string::npos);
  EXPECT_NE(error_of("[guard]\nmax_retries = \"3\"\n")
                .find("field 'guard.max_retries': expected an integer"),
            std::string::npos);
  EXPECT_NE(error_of("[guard]\nmax_retries = -1\n").find("expected 0 to"), std::string::npos);
  EXPECT_NE(error_of("[cluster]\nbackend = \"pbs\"\n").find("'cluster.backend'"),
            std::string::npos);
  EXPECT_NE(error_of("[cluster]\npartition = 3\n").find("expected a string"), std::string::npos);
  EXPECT_NE(error_of("[handoff]\nsignal = \"BOGUS\"\n").find("'handoff.signal'"),
            std::string::npos);
  EXPECT_NE(error_of("[log]\nlevel = \"loud\"\n").find("'log.level'"), std::string::npos);
  EXPECT_NE(error_of("poll = 3\n").find("expected a table"), std::string::npos);
  EXPECT_NE(error_of("[simulator]\nspeed = 0\n").find("'simulator.speed'"), std::string::npos);
}

// A TOML string may hold any character; quoted in a message, none reaches the terminal raw.
TEST(DaemonConfig, QuotedStringsInErrorsAreEscaped) {
  for (const char* key : {"[cluster]\nbackend", "[log]\nlevel", "[poll]\ninterval"}) {
    const std::string e = error_of(std::string(key) + " = \"a\\nb\\u001b[2J\"\n");
    EXPECT_NE(e.find("got \"a\\nb\\x1b[2J\""), std::string::npos) << e;
  }
}

TEST(DaemonConfig, SyntaxErrorsCarryTheLine) {
  EXPECT_EQ(error_of("[poll]\ninterval = = 3\n").rfind("m.toml:2: ", 0), 0u);
}

TEST(DaemonConfig, PathsExpandHomeAndVariables) {
  setenv("MIRAGE_TEST_DIR", "/srv/x", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(expand_path("~/a/b"), "/home/u/a/b");
  EXPECT_EQ(expand_path("$MIRAGE_TEST_DIR/m.sock"), "/srv/x/m.sock");
  EXPECT_EQ(expand_path("${MIRAGE_TEST_DIR}/m.sock"), "/srv/x/m.sock");
  EXPECT_EQ(parse_signal("USR1"), SIGUSR1);
  EXPECT_EQ(parse_signal("SIGTERM"), SIGTERM);
  EXPECT_EQ(parse_signal("12"), 12);
  EXPECT_EQ(parse_signal("nope"), -1);
}

// `campaign add` in a project and scrontab's `mirage tick` elsewhere read one config: a relative
// store path taken from each one's working directory gave two stores, and the tick found none of
// the campaigns.
TEST(DaemonConfig, RelativePathsStartAtTheConfigFilesFolderNotTheWorkingDirectory) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "etc");
  std::filesystem::create_directories(dir.path() / "elsewhere");
  std::ofstream(dir.file("etc/mirage.toml"))
      << "[cluster]\nslurm_conf = \"slurm.conf\"\nsbatch = \"bin/sbatch\"\n"
      << "[simulator]\ntrace = \"../traces/t.swf\"\ncalibration = \"c.toml\"\n"
      << "[store]\npath = \"state/mirage.db\"\n[socket]\npath = \"run/m.sock\"\n"
      << "[policy]\nfrontier = \"f.toml\"\nwait_distribution = \"w.toml\"\n"
      << "[log]\nfile = \"./log/m.log\"\n";
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path() / "elsewhere");
  DaemonConfig c;
  try {
    c = load_daemon_config("../etc/mirage.toml");
  } catch (...) {
    std::filesystem::current_path(cwd);
    throw;
  }
  std::filesystem::current_path(cwd);
  EXPECT_EQ(c.store_path, dir.file("etc/state/mirage.db"));
  EXPECT_EQ(c.socket_path, dir.file("etc/run/m.sock"));
  EXPECT_EQ(c.log_file, dir.file("etc/log/m.log"));
  EXPECT_EQ(c.slurm_conf, dir.file("etc/slurm.conf"));
  EXPECT_EQ(c.sbatch, dir.file("etc/bin/sbatch"));
  EXPECT_EQ(c.sim_trace, dir.file("traces/t.swf"));
  EXPECT_EQ(c.sim_calibration, dir.file("etc/c.toml"));
  EXPECT_EQ(c.frontier_file, dir.file("etc/f.toml"));
  EXPECT_EQ(c.wait_distribution_file, dir.file("etc/w.toml"));
  // A word the key knows is not a path, and an absolute path stays as written.
  EXPECT_EQ(parse_daemon_config("[simulator]\ncalibration = \"infer\"\n[store]\npath = "
                                "\"/var/m.db\"\n",
                                dir.file("etc/mirage.toml"))
                .sim_calibration,
            "infer");
  EXPECT_EQ(parse_daemon_config("[store]\npath = \"/var/m.db\"\n", dir.file("etc/mirage.toml"))
                .store_path,
            "/var/m.db");
}

// A config written while relative paths started at the working directory: the store found there
// and not beside the config is named, not left for a new, empty store.
TEST(DaemonConfig, ARelativePathWhoseFileIsOnlyWhereItStartedBeforeIsRefusedNamingBoth) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "etc");
  std::filesystem::create_directories(dir.path() / "home");
  std::ofstream(dir.file("etc/mirage.toml")) << "[store]\npath = \"mirage.db\"\n";
  std::ofstream(dir.file("home/mirage.db")) << "";
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path() / "home");
  std::string error;
  try {
    load_daemon_config(dir.file("etc/mirage.toml"));
  } catch (const std::exception& e) {
    error = e.what();
  }
  std::filesystem::current_path(cwd);
  EXPECT_NE(error.find("store.path"), std::string::npos) << error;
  EXPECT_NE(error.find(dir.file("etc/mirage.db") + ", where nothing is, while " +
                       dir.file("home/mirage.db") + " (where it started before"),
            std::string::npos)
      << error;
  // Once it is beside the config too, that one is read.
  std::ofstream(dir.file("etc/mirage.db")) << "";
  std::filesystem::current_path(dir.path() / "home");
  const auto c = load_daemon_config(dir.file("etc/mirage.toml"));
  std::filesystem::current_path(cwd);
  EXPECT_EQ(c.store_path, dir.file("etc/mirage.db"));
}

TEST(DaemonConfig, DurationsBeyondTheirRangeAreErrorsNamingTheKey) {
  // 2^63-1 seconds: the daemon multiplied it into milliseconds, overflowed and spun.
  EXPECT_NE(error_of("[poll]\ninterval = 9223372036854775807\n")
                .find("m.toml:2: field 'poll.interval': expected at most 1h"),
            std::string::npos)
      << error_of("[poll]\ninterval = 9223372036854775807\n");
  const std::pair<const char*, const char*> beyond[] = {
      {"[poll]\ninterval = \"2h\"\n", "poll.interval"},
      {"[poll]\nbackoff_max = \"2d\"\n", "poll.backoff_max"},
      {"[cluster]\nsbatch_timeout = \"2h\"\n", "cluster.sbatch_timeout"},
      {"[policy]\ndecision_interval = \"25h\"\n", "policy.decision_interval"},
      {"[guard]\nearliest_submission = \"366d\"\n", "guard.earliest_submission"},
      {"[socket]\nidle_timeout = \"9999999d\"\n", "socket.idle_timeout"},
      {"[handoff]\ngrace = \"8d\"\n", "handoff.grace"}};
  for (const auto& [text, key] : beyond)
    EXPECT_NE(error_of(text).find("field '" + std::string(key) + "': expected at most"),
              std::string::npos)
        << error_of(text);
  // Beyond int64: a duration string, and an integer literal toml++ itself refuses.
  EXPECT_NE(error_of("[poll]\ninterval = \"99999999999999999999d\"\n")
                .find("field 'poll.interval': out of range"),
            std::string::npos)
      << error_of("[poll]\ninterval = \"99999999999999999999d\"\n");
  EXPECT_NE(error_of("[poll]\ninterval = \"106751991167301d\"\n").find("out of range"),
            std::string::npos);
  EXPECT_NE(error_of("[poll]\ncluster_every = 1\ninterval = 99999999999999999999\n")
                .find("m.toml:3: field 'poll.interval'"),
            std::string::npos)
      << error_of("[poll]\ninterval = 99999999999999999999\n");
  // The edges are accepted.
  EXPECT_EQ(parse_daemon_config("[poll]\ninterval = \"1h\"\nbackoff_max = \"1d\"\n", "m.toml")
                .poll_interval,
            kHour);
}

TEST(DaemonConfig, UnsetVariableInAPathIsAnErrorNamingTheKeyAndTheVariable) {
  unsetenv("MIRAGE_TEST_UNSET");
  const std::string e = error_of("[store]\npath = \"$MIRAGE_TEST_UNSET/mirage.db\"\n");
  EXPECT_NE(e.find("m.toml:2: field 'store.path'"), std::string::npos) << e;
  EXPECT_NE(e.find("$MIRAGE_TEST_UNSET is not set"), std::string::npos) << e;
  EXPECT_NE(error_of("[socket]\npath = \"${MIRAGE_TEST_UNSET}/m.sock\"\n").find("'socket.path'"),
            std::string::npos);
  setenv("MIRAGE_TEST_EMPTY", "", 1);
  EXPECT_NE(error_of("[log]\nfile = \"$MIRAGE_TEST_EMPTY/m.log\"\n").find("MIRAGE_TEST_EMPTY"),
            std::string::npos);
  EXPECT_NE(error_of("[store]\npath = \"${MIRAGE_TEST_UNSET/m.db\"\n").find("'store.path'"),
            std::string::npos);
  EXPECT_EQ(expand_path("/a/$/b"), "/a/$/b");  // a lone '$' is a character
}

// --- validate_daemon_config: what --check and the start both refuse

struct CheckFixture : ::testing::Test {
  testing::TempDir dir;
  DaemonConfig config() {
    DaemonConfig c = parse_daemon_config("", "m.toml");
    c.store_path = dir.file("state/mirage.db");
    c.socket_path = dir.file("run/mirage.sock");
    c.sbatch = "/bin/true";  // an executable, whether or not this machine has Slurm
    return c;
  }
  std::string error(const DaemonConfig& c) {
    try {
      validate_daemon_config(c);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  void write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
  }
};

TEST_F(CheckFixture, AcceptsTheDefaultsInAFreshDirectory) {
  EXPECT_EQ(error(config()), "");
}

TEST_F(CheckFixture, SocketPathEqualToStoreIsRefused) {
  DaemonConfig c = config();
  c.socket_path = c.store_path;
  const std::string e = error(c);
  EXPECT_NE(e.find("field 'socket.path'"), std::string::npos) << e;
  EXPECT_NE(e.find("store"), std::string::npos) << e;
  // The same file through ".." and through a symlinked directory.
  c.socket_path = dir.file("run/../state/mirage.db");
  EXPECT_NE(error(c).find("'socket.path'"), std::string::npos);
  std::filesystem::create_directories(dir.path() / "state");
  std::filesystem::create_directory_symlink(dir.path() / "state", dir.path() / "alias");
  c.socket_path = dir.file("alias/mirage.db");
  EXPECT_NE(error(c).find("'socket.path'"), std::string::npos);
  c.socket_path = c.store_path + "-wal";
  EXPECT_NE(error(c).find("'socket.path'"), std::string::npos);
}

TEST_F(CheckFixture, SocketPathInsideTheStoreOrTheStoreInsideTheSocketIsRefused) {
  DaemonConfig c = config();
  c.socket_path = c.store_path + "/m.sock";
  EXPECT_NE(error(c).find("'socket.path'"), std::string::npos);
  c = config();
  c.store_path = c.socket_path + "/mirage.db";
  EXPECT_NE(error(c).find("'socket.path'"), std::string::npos);
}

TEST_F(CheckFixture, AnythingButASocketAtTheSocketPathIsRefused) {
  DaemonConfig c = config();
  write(c.socket_path, "mine");
  const std::string e = error(c);
  EXPECT_NE(e.find("field 'socket.path': " + c.socket_path + " is a regular file"),
            std::string::npos)
      << e;
  std::filesystem::remove(c.socket_path);
  std::filesystem::create_directory(c.socket_path);
  EXPECT_NE(error(c).find("is a directory"), std::string::npos);
}

TEST_F(CheckFixture, TooLongSocketPathIsRefused) {
  DaemonConfig c = config();
  c.socket_path = "/tmp/" + std::string(110, 's') + ".sock";
  const std::string e = error(c);
  EXPECT_NE(e.find("field 'socket.path'"), std::string::npos) << e;
  EXPECT_NE(e.find("at most 107"), std::string::npos) << e;
}

TEST_F(CheckFixture, SocketDirectoryThatCannotBeCreatedIsRefused) {
  DaemonConfig c = config();
  write(dir.file("plain"), "x");
  c.socket_path = dir.file("plain/sub/m.sock");
  const std::string e = error(c);
  EXPECT_NE(e.find("field 'socket.path'"), std::string::npos) << e;
  EXPECT_NE(e.find(dir.file("plain") + " is not a directory"), std::string::npos) << e;
}

TEST_F(CheckFixture, UnwritableDirectoriesAreRefused) {
  std::filesystem::create_directories(dir.path() / "ro");
  const std::string errors = testing::as_unprivileged_user({dir.path()}, [&] {
    ::chmod(dir.file("ro").c_str(), 0500);
    DaemonConfig c = config();
    c.store_path = dir.file("ro/mirage.db");
    std::string out = error(c) + "\n";
    c = config();
    c.socket_path = dir.file("ro/new/m.sock");
    out += error(c);
    ::chmod(dir.file("ro").c_str(), 0700);
    return out;
  });
  const auto cut = errors.find('\n');
  ASSERT_NE(cut, std::string::npos) << errors;
  EXPECT_NE(errors.substr(0, cut).find("field 'store.path'"), std::string::npos) << errors;
  EXPECT_NE(errors.substr(0, cut).find("not writable"), std::string::npos) << errors;
  EXPECT_NE(errors.substr(cut).find("field 'socket.path'"), std::string::npos) << errors;
  EXPECT_NE(errors.substr(cut).find("not writable"), std::string::npos) << errors;
}

TEST_F(CheckFixture, StoreThatIsADirectoryOrNotADatabaseIsRefused) {
  DaemonConfig c = config();
  std::filesystem::create_directories(c.store_path);
  EXPECT_NE(error(c).find("field 'store.path': " + c.store_path + " is a directory"),
            std::string::npos)
      << error(c);
  c.store_path = dir.file("notes.txt");
  write(c.store_path, "my notes, not a database\n");
  EXPECT_NE(error(c).find("is not a SQLite database"), std::string::npos) << error(c);
  c.store_path = dir.file("plain/mirage.db");
  write(dir.file("plain"), "x");
  EXPECT_NE(error(c).find("'store.path'"), std::string::npos);
  // A real store, and an empty file (SQLite makes one of it), are fine.
  c = config();
  std::filesystem::remove(c.store_path);
  { CampaignStore store(c.store_path); }
  EXPECT_EQ(error(c), "");
  c.store_path = dir.file("empty.db");
  write(c.store_path, "");
  EXPECT_EQ(error(c), "");
}

TEST_F(CheckFixture, ARiskFrontierThatCannotBeReadIsRefusedByItsLine) {
  DaemonConfig c =
      parse_daemon_config("[policy]\nfrontier = \"" + dir.file("f.toml") + "\"\n", "m.toml");
  c.store_path = dir.file("state/mirage.db");
  c.socket_path = dir.file("run/mirage.sock");
  c.sbatch = "/bin/true";
  EXPECT_EQ(c.frontier_file, dir.file("f.toml"));
  EXPECT_NE(error(c).find("f.toml does not exist"), std::string::npos) << error(c);
  write(c.frontier_file, "trace = \"x\"\n[[point]]\npolicy = \"average@2h\"\n");
  EXPECT_NE(error(c).find("field 'policy.frontier'"), std::string::npos) << error(c);
  EXPECT_NE(error(c).find("a point needs policy"), std::string::npos) << error(c);
  write(c.frontier_file,
        "[[point]]\npolicy = \"average@2h\"\nmean_interruption_h = 1\nmean_overlap_h = 0.5\n");
  EXPECT_EQ(error(c), "");
  EXPECT_EQ(c.controller_config().frontier_file, c.frontier_file);
  // A point the daemon could never run: quantile without the waits it reads.
  write(c.frontier_file,
        "[[point]]\npolicy = \"quantile@0.8\"\nmean_interruption_h = 1\nmean_overlap_h = 0.5\n");
  EXPECT_NE(error(c).find("holds quantile@0.8, which reads the distribution of the successor's "
                          "wait: give [policy] wait_distribution"),
            std::string::npos)
      << error(c);
}

TEST_F(CheckFixture, AWaitDistributionThatCannotBeReadIsRefusedByItsLine) {
  DaemonConfig c = parse_daemon_config(
      "[policy]\ndefault = \"quantile@0.7\"\nwait_distribution = \"" + dir.file("w.toml") + "\"\n",
      "m.toml");
  c.store_path = dir.file("state/mirage.db");
  c.socket_path = dir.file("run/mirage.sock");
  c.sbatch = "/bin/true";
  EXPECT_EQ(c.controller_config().wait_distribution_file, dir.file("w.toml"));
  EXPECT_NE(error(c).find("w.toml does not exist"), std::string::npos) << error(c);
  write(c.wait_distribution_file, "chain_nodes = 1\nbins = 3\n");
  EXPECT_NE(error(c).find("field 'policy.wait_distribution'"), std::string::npos) << error(c);
  EXPECT_NE(error(c).find(":2: field 'bins': unknown key"), std::string::npos) << error(c);
  // quantile as the default, with nothing to read: refused by name.
  c.wait_distribution_file.clear();
  EXPECT_NE(error(c).find("field 'policy.default': quantile@0.7 reads the distribution of the "
                          "successor's wait: give [policy] wait_distribution"),
            std::string::npos)
      << error(c);
}

TEST_F(CheckFixture, UnknownDefaultPolicyIsRefused) {
  DaemonConfig c = config();
  c.default_policy = "psychic";
  const std::string e = error(c);
  EXPECT_NE(e.find("field 'policy.default': unknown policy 'psychic'"), std::string::npos) << e;
  EXPECT_NE(e.find("reactive, average"), std::string::npos) << e;
  c.default_policy = "oracle";
  EXPECT_NE(error(c).find("'policy.default'"), std::string::npos);
  c.default_policy = dir.file("missing.mirage-model");
  EXPECT_NE(error(c).find("missing.mirage-model does not exist"), std::string::npos) << error(c);
  for (const char* known :
       {"reactive", "average", "forecast", "forecast-recent", "static@6h", "average@-30m"}) {
    c.default_policy = known;
    EXPECT_EQ(error(c), "") << known;
  }
  // A model file is checked for being there and readable, not loaded.
  c.default_policy = dir.file("m.mirage-model");
  write(c.default_policy, "not loaded by the check");
  EXPECT_EQ(error(c), "");
}

TEST_F(CheckFixture, AnSbatchThatCannotBeRunIsRefused) {
  DaemonConfig c = config();
  c.sbatch = dir.file("sbatch");
  EXPECT_EQ(error(c), "m.toml: field 'cluster.sbatch': " + dir.file("sbatch") + " does not exist");
  write(c.sbatch, "#!/bin/sh\n");
  EXPECT_NE(error(c).find("is not an executable file"), std::string::npos) << error(c);
  c.backend = Backend::kSimulator;  // submits in-process: no sbatch needed
  EXPECT_EQ(error(c), "");
}

TEST_F(CheckFixture, MissingTraceOrSlurmConfIsRefused) {
  DaemonConfig c = config();
  c.slurm_conf = dir.file("slurm.conf");
  EXPECT_NE(error(c).find("field 'cluster.slurm_conf'"), std::string::npos);
  c = config();
  c.backend = Backend::kSimulator;
  c.sim_trace = dir.file("t.swf");
  EXPECT_NE(error(c).find("field 'simulator.trace'"), std::string::npos);
}

}  // namespace
}  // namespace mirage::daemon

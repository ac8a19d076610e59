// The daemon's TOML config: every key read, and every mistake named by file, line and key.
#include <gtest/gtest.h>

#include <csignal>

#include "mirage/core/Error.h"
#include "mirage/daemon/DaemonConfig.h"

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
  EXPECT_EQ(cc.earliest_submission, 12 * kHour);
  EXPECT_EQ(cc.handoff_signal, SIGUSR2);
}

TEST(DaemonConfig, DefaultsFillTheRest) {
  const auto c = parse_daemon_config("", "m.toml");
  EXPECT_EQ(c.backend, Backend::kSlurm);
  EXPECT_EQ(c.poll_interval, 30);
  EXPECT_EQ(c.handoff_signal, SIGUSR1);
  EXPECT_FALSE(c.store_path.empty());
  EXPECT_FALSE(c.socket_path.empty());
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

}  // namespace
}  // namespace mirage::daemon

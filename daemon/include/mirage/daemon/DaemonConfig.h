#pragma once
// The daemon's TOML configuration. Strict: an unknown section or key, or a value of the wrong
// type, is an InputError naming the file, the line and the key ("mirage.toml:12: field
// 'poll.interval': expected a duration such as \"30s\" or 30, got true"). Durations are
// strings ("30s", "10m", "12h", "2d", or Slurm's "HH:MM:SS") or integers (seconds).
// daemon/config/mirage.example.toml documents every key.
#include <string>

#include "mirage/core/Time.h"
#include "mirage/daemon/CampaignController.h"

namespace mirage::daemon {

enum class Backend { kSlurm, kSimulator };

struct DaemonConfig {
  std::string source;  // the file it was read from, for messages

  // [cluster]
  Backend backend = Backend::kSlurm;
  std::string slurm_conf;  // empty: $SLURM_CONF, then /etc/slurm/slurm.conf
  std::string partition;   // observed, and used by campaigns that name none; empty: the default
  std::string account;

  // [poll]
  Seconds poll_interval = 30;
  Seconds cluster_every = 5 * kMinute;  // partitions and nodes
  Seconds backoff_max = 5 * kMinute;    // longest wait between tries while slurmctld is down

  // [simulator]
  std::string sim_trace;  // empty: the sample trace compiled into mirage
  double sim_speed = 600;
  Seconds sim_warmup = 2 * kDay;
  int sim_nodes = 0;  // 0: from the trace
  int sim_gpus_per_node = 0;
  Seconds sim_checkpoint = 2 * kMinute;  // a signalled simulated job stops this long after

  // [store]
  std::string store_path;

  // [socket]
  std::string socket_path;
  std::size_t max_request_bytes = 64 * 1024;
  int max_clients = 32;
  Seconds client_idle_timeout = 60;

  // [policy]
  std::string default_policy = "reactive";
  Seconds decision_interval = 10 * kMinute;
  Seconds fallback_lead = kMinute;

  // [guard]
  int max_campaigns_per_user = 20;
  Seconds earliest_submission = 0;  // 0: no window
  int max_retries = 2;
  Seconds retry_delay = kMinute;

  // [handoff]
  int handoff_signal = 10;  // SIGUSR1
  Seconds handoff_grace = 5 * kMinute;

  // [log]
  std::string log_level = "info";
  std::string log_file;  // empty: stderr (the journal under systemd)

  ControllerConfig controller_config() const;
};

// Reads and checks a config file. Throws InputError.
DaemonConfig load_daemon_config(const std::string& path);
// Same from text; `name` is used in messages.
DaemonConfig parse_daemon_config(const std::string& text, const std::string& name);

// Default locations: $XDG_RUNTIME_DIR/mirage/mirage.sock (else /tmp/mirage-<uid>/mirage.sock)
// and $XDG_STATE_HOME/mirage/mirage.db (else ~/.local/state/mirage/mirage.db).
std::string default_socket_path();
std::string default_store_path();
// "~/x" -> "$HOME/x"; $VAR and ${VAR} are expanded.
std::string expand_path(const std::string& path);

// "USR1", "SIGUSR1", "10" -> 10; -1 when unknown.
int parse_signal(const std::string& text);

}  // namespace mirage::daemon

#pragma once
// The daemon's TOML configuration. Strict: an unknown section or key, a value of the wrong
// type or out of its range, or an unset $VAR in a path, is an InputError naming the file, the
// line and the key ("mirage.toml:12: field 'poll.interval': expected at most 1h, got 7200").
// Durations are strings ("30s", "10m", "12h", "2d", or Slurm's "HH:MM:SS") or integers
// (seconds). Paths expand ~ and $VARS; a relative one starts at the config file's own folder
// (`name`'s), whichever directory the command that reads it runs in. daemon/config/
// mirage.example.toml documents every key and its range.
//
// Ranges, so that no value overflows a later computation (seconds to milliseconds, a limit
// added to a time) or makes the daemon spin:
//   cluster.sbatch_timeout 1s..1h; poll.interval 1s..1h; poll.cluster_every, poll.backoff_max
//   1s..1d; simulator.warmup 0..3650d; simulator.checkpoint 0..1d; socket.idle_timeout 1s..1d;
//   policy.decision_interval 1s..1d; policy.fallback_lead 0..30d; policy.fallback_chain bool;
//   guard.earliest_submission 0..365d; guard.retry_delay 0..1d; handoff.grace 0..7d;
//   simulator.speed 0.001..1e6; simulator.nodes 0..1048576; simulator.gpus_per_node 0..1024;
//   socket.max_request_bytes 1024..16777216; socket.max_clients 1..10000;
//   guard.max_campaigns_per_user 1..1000000; guard.max_retries 0..1000.
#include <string>

#include "mirage/core/Time.h"
#include "mirage/daemon/campaigns/CampaignController.h"

namespace mirage::daemon {

enum class Backend { kSlurm, kSimulator };

struct DaemonConfig {
  std::string source;  // the file it was read from, for messages

  // [cluster]
  Backend backend = Backend::kSlurm;
  std::string slurm_conf;  // empty: $SLURM_CONF, then /etc/slurm/slurm.conf
  std::string sbatch;      // the sbatch that submits segments; empty: the first on $PATH
  Seconds sbatch_timeout = 2 * kMinute;  // killed after this; the tag settles the outcome
  std::string partition;  // observed, and used by campaigns that name none; empty: the default
  std::string account;

  // [poll]
  Seconds poll_interval = 30;
  Seconds cluster_every = 5 * kMinute;  // partitions and nodes
  Seconds backoff_max = 5 * kMinute;    // longest wait between tries while slurmctld is down

  // [simulator]
  std::string sim_trace;  // empty: the sample trace compiled into mirage
  // What the trace leaves out of its cluster: none, infer, auto (TRACE.calibration.toml, else
  // infer) or a calibration file (simulator/CalibrationFile.h).
  std::string sim_calibration = "auto";
  double sim_speed = 600;
  Seconds sim_warmup = 2 * kDay;
  int sim_nodes = 0;  // 0: from the trace
  int sim_gpus_per_node = 0;
  Seconds sim_checkpoint = 2 * kMinute;  // a signalled simulated job stops this long after

  // [store]
  std::string store_path;
  // --store-moved (not a config key): the store at store_path was moved there from the place it
  // was made, which is gone; it is bound to its new path instead of refused as a copy.
  bool store_moved = false;

  // [socket]
  std::string socket_path;
  // A 4 MiB script (kMaxScriptBytes) base64-encoded is 5.6 MB; the rest is the environment.
  std::size_t max_request_bytes = 8 << 20;
  int max_clients = 32;
  Seconds client_idle_timeout = 60;

  // [policy]
  std::string default_policy = compiled_default_policy();
  std::string frontier_file;  // a risk frontier (mirage eval --save-frontier): for --max-overlap
  std::string wait_distribution_file;  // mirage trace waits: what `quantile` reads
  Seconds decision_interval = 10 * kMinute;
  Seconds fallback_lead = kMinute;
  bool fallback_chain = true;  // campaigns that do not say keep a successor queued behind

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

// What parsing cannot know, checked against this machine by both `mirage daemon --check` and the
// start: the store is a writable SQLite file (or can be made), the socket path fits a Unix socket,
// its directory can be made, and nothing but a stale socket sits there; socket, store (and its
// SQLite files) and log are distinct, aliases resolved; the default policy is known, or a model
// file that exists and is readable (not loaded). Throws InputError naming the key at fault.
void validate_daemon_config(const DaemonConfig& config);

// Default locations: $XDG_RUNTIME_DIR/mirage/mirage.sock (else /tmp/mirage-<uid>/mirage.sock)
// and $XDG_STATE_HOME/mirage/mirage.db (else ~/.local/state/mirage/mirage.db).
std::string default_socket_path();
std::string default_store_path();
// "~/x" -> "$HOME/x"; $VAR and ${VAR} are expanded; a '$' followed by no name is kept. Throws
// InputError naming the variable when one is unset or empty.
std::string expand_path(const std::string& path);

// "USR1", "SIGUSR1", "10" -> 10; -1 when unknown.
int parse_signal(const std::string& text);

}  // namespace mirage::daemon

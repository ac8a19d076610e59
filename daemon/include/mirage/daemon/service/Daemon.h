#pragma once
// The service: one Asio event loop owns the timers, the control socket and the decisions; every
// SlurmClient call runs on one dedicated Slurm thread (libslurm is neither thread-safe nor
// non-blocking) and its result comes back to the loop as a posted completion.
//
// Each tick (poll.interval): on the Slurm thread, one bulk job dump (incremental through
// last_update), plus partitions and nodes every poll.cluster_every; then on the loop, the
// QueueSnapshot, the snapshot history on the encoder's 10-minute grid (kept in SQLite), the
// controller's tick, and its actions sent back to the Slurm thread. While the controller is
// unreachable the polls back off exponentially with jitter up to poll.backoff_max.
#include <memory>
#include <string>

#include "mirage/daemon/service/DaemonConfig.h"
#include "mirage/daemon/slurm/Clock.h"
#include "mirage/daemon/slurm/SlurmClient.h"

namespace mirage::daemon {

class Daemon {
 public:
  Daemon(DaemonConfig config, std::unique_ptr<SlurmClient> client,
         std::shared_ptr<const Clock> clock);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Serves until SIGTERM / SIGINT (when handle_signals; SIGHUP and SIGPIPE are then ignored) or
  // stop(); returns the exit status.
  int run(bool handle_signals = true);
  // Thread-safe: asks run() to return.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The cluster a config names and the clock it runs on: libslurm (submitting through sbatch) and
// the system clock, or the simulator replaying config.sim_trace (the trace text given here when
// that is empty) on its own accelerated clock. The daemon and `mirage tick` alike.
struct SlurmBackend {
  std::unique_ptr<SlurmClient> client;
  std::shared_ptr<const Clock> clock;
};
SlurmBackend make_slurm_backend(const DaemonConfig& config, std::string_view default_trace_text,
                                const std::string& default_trace_name);

// A seam for test programs: wraps every client make_slurm_backend makes. The crash tests' build
// of the program (tests/support/FaultInjection.cpp) kills itself through it; the product sets none.
using SlurmClientDecorator = std::unique_ptr<SlurmClient> (*)(std::unique_ptr<SlurmClient>);
void set_slurm_client_decorator(SlurmClientDecorator decorator);

// The daemon for `config`: the libslurm client, or the simulator replaying config.sim_trace
// (the trace text given here when that is empty).
std::unique_ptr<Daemon> make_daemon(const DaemonConfig& config, std::string_view default_trace_text,
                                    const std::string& default_trace_name);

// Where the simulator backend keeps its cluster (clock and the daemon's jobs) for a store.
std::string simulated_cluster_path(const std::string& store_path);

// Sets spdlog up from the config's [log] section.
void configure_logging(const DaemonConfig& config);

}  // namespace mirage::daemon

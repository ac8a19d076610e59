// `mirage tick`: one pass over the campaigns of a daemon config's store, for sites where no
// long-lived process may run on the login nodes (Slurm's scrontab runs it every few minutes).
#include <fmt/format.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <thread>

#include "Commands.h"
#include "EmbeddedSample.h"
#include "SlurmReleaseGate.h"
#include "mirage/core/Error.h"
#include "mirage/daemon/service/Daemon.h"
#include "mirage/daemon/service/DaemonConfig.h"
#include "mirage/daemon/service/Tick.h"
#include "mirage/daemon/store/StoreLock.h"

namespace mirage::cli {

namespace {

struct TickOptions {
  std::string config;
  bool store_moved = false;
};

int run_tick(const TickOptions& o) {
  daemon::DaemonConfig config = daemon::load_daemon_config(o.config);
  config.store_moved = o.store_moved;
  // Checked before the store is opened: a pass on misread replies, or none at all, touches nothing.
  if (const auto slurm = check_cluster_release(config, "tick");
      slurm && slurm->verdict != daemon::SlurmReleaseCheck::Verdict::kFit)
    return 1;
  ::umask(0077);  // the store, its WAL and the logs are the user's alone
  daemon::configure_logging(config);
  daemon::SlurmBackend backend =
      daemon::make_slurm_backend(config, embedded_sample_trace(), embedded_sample_name());
  const daemon::Clock& clock = *backend.clock;
  const auto wait_until = [&clock](Seconds t) {
    while (clock.now() < t) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  };
  const daemon::TickResult r = daemon::run_tick(config, *backend.client, clock, wait_until);
  if (!r.ran && r.holder_passes) {
    fmt::print("mirage tick: store {} is in use by {}; it makes the pass, nothing to do\n",
               escape_control(config.store_path), escape_control(r.held_by));
    return 0;
  }
  if (!r.ran) {  // a holder that makes no pass: no pass was made
    fmt::print(stderr,
               "mirage tick: store {} is in use by {}, which makes no pass{}; this tick's pass "
               "was skipped (the next tick makes it)\n",
               escape_control(config.store_path), escape_control(r.held_by),
               r.waited_s > 0 ? fmt::format(" (waited {:g} s for it)", r.waited_s) : "");
    return 3;
  }
  fmt::print(
      "mirage tick: {} campaign(s) under way; {} submitted, {} released, {} signalled, {} "
      "cancelled{}\n",
      r.campaigns, r.submitted, r.released, r.signalled, r.cancelled,
      r.unresolved ? fmt::format("; {} submission(s) to settle next tick", r.unresolved) : "");
  return 0;
}

}  // namespace

void register_tick_command(CLI::App& app) {
  auto o = std::make_shared<TickOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tick",
      "One pass over the campaigns (poll, settle, decide, submit, hand-off) without a daemon, "
      "then exit: for scrontab or cron");
  cmd->add_option("--config", o->config, "The daemon's TOML config (its store, cluster, policy)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_flag("--store-moved", o->store_moved, kStoreMovedHelp);
  cmd->callback([o] {
    try {
      const int rc = run_tick(*o);
      if (rc != 0) throw CLI::RuntimeError(rc);
    } catch (const daemon::StoreOwnerError& e) {
      throw InputError({o->config, 0, "store.path"}, e.what());
    }
  });
}

}  // namespace mirage::cli

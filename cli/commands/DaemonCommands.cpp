// `mirage daemon`, `mirage status` and `mirage trace export`: running the service, asking it how
// it is, and exporting what it observed on the cluster.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "Commands.h"
#include "EmbeddedSample.h"
#include "SlurmReleaseGate.h"
#include "mirage/core/Error.h"
#include "mirage/core/FeatureEncoder.h"
#include "mirage/daemon/control/ControlProtocol.h"
#include "mirage/daemon/control/ControlServer.h"
#include "mirage/daemon/service/Daemon.h"
#include "mirage/daemon/service/DaemonConfig.h"
#include "mirage/daemon/service/StoreControl.h"
#include "mirage/daemon/store/CampaignStore.h"
#include "mirage/daemon/store/StoreLock.h"

namespace mirage::cli {

using json = nlohmann::json;

void DaemonSocketOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--socket", socket,
                 "The daemon's control socket (default: $MIRAGE_SOCKET, else the one in "
                 "--config, else $XDG_RUNTIME_DIR/mirage/mirage.sock)");
  cmd.add_option("--config", config,
                 store_without_daemon
                     ? "Read the socket path from this daemon config file; with no daemon "
                       "answering there, work on its store directly"
                     : "Read the socket path from this daemon config file")
      ->check(CLI::ExistingFile);
}

std::string DaemonSocketOptions::resolve() const {
  if (!socket.empty()) return socket;
  if (const char* env = std::getenv("MIRAGE_SOCKET"); env && *env) return env;
  if (!config.empty()) return daemon::load_daemon_config(config).socket_path;
  return daemon::default_socket_path();
}

namespace {

// The request served on the config's store, saying so on stderr (stdout may be --json).
json ask_store(const DaemonSocketOptions& where, const std::string& socket, const json& request) {
  const daemon::DaemonConfig config = daemon::load_daemon_config(where.config);
  ::umask(0077);
  daemon::configure_logging(config);  // never stdout: it may carry --json
  if (config.log_file.empty()) spdlog::set_level(spdlog::level::warn);
  daemon::SlurmBackend backend =
      daemon::make_slurm_backend(config, embedded_sample_trace(), embedded_sample_name());
  json reply = daemon::serve_on_store(config, request, static_cast<std::uint32_t>(::getuid()),
                                      *backend.client, *backend.clock);
  std::cerr << "mirage: no daemon at " << escape_control(socket) << "; used the store "
            << escape_control(config.store_path) << " directly"
            << (request.value("op", "") == "add" ? " (the next `mirage tick` submits)" : "")
            << "\n";
  return reply;
}

}  // namespace

// Runs a request; prints the error and returns nullopt when it fails (exit status in `rc`).
std::optional<json> ask_daemon(const DaemonSocketOptions& where, const json& request, int& rc) {
  const std::string socket = where.resolve();
  bool maybe_done = false;  // an add went out and no answer came back
  try {
    try {
      // Configs without a [socket] path share the default socket: the daemon refuses a request
      // meant for another store than its own.
      json sent = request;
      if (!where.config.empty())
        sent["store"] = daemon::load_daemon_config(where.config).store_path;
      try {
        return daemon::call_daemon_keyed(socket, sent);
      } catch (const daemon::RequestError& e) {
        // A daemon from before requests named their store refuses the key, having done nothing:
        // it is asked as before.
        if (!sent.contains("store") || std::string(e.what()).rfind("store: unknown key", 0) != 0)
          throw;
      }
      return daemon::call_daemon_keyed(socket, request);
    } catch (const daemon::ControlClientError& e) {
      maybe_done = e.request_sent();
      if (!where.store_without_daemon || where.config.empty()) throw;
    }
    return ask_store(where, socket, request);
  } catch (const daemon::ControlClientError& e) {  // also a store another holds
    rc = 3;
    std::cerr << "mirage: " << escape_control(e.what()) << "\n";
    if (maybe_done && daemon::carries_request_key(request))
      std::cerr << "mirage: the daemon may have added the campaign: run the same command again "
                   "with --request-key "
                << request.at("campaign").at("request_key").get<std::string>()
                << " (a key adds at most one campaign), or look with `mirage campaign list`\n";
  } catch (const daemon::RequestError& e) {  // may quote the request's text back
    rc = 1;
    std::cerr << "mirage: " << escape_control(e.what()) << "\n";
    // The daemon knows the store the request named, not the file that named it.
    if (!where.config.empty() &&
        std::string(e.what()).find("give [socket] path") != std::string::npos)
      std::cerr << "mirage: that config: " << escape_control(where.config) << "\n";
  } catch (const daemon::StoreOwnerError& e) {
    rc = 1;
    std::cerr << "mirage: " << escape_control(e.what()) << "\n";
  }
  return std::nullopt;
}

namespace {

struct DaemonOptions {
  std::string config;
  bool check = false;
  bool store_moved = false;
};

int run_daemon(const DaemonOptions& o) {
  daemon::DaemonConfig config = daemon::load_daemon_config(o.config);
  config.store_moved = o.store_moved;
  daemon::validate_daemon_config(config);  // the same checks for --check and the start
  const auto slurm = check_cluster_release(config, o.check ? "daemon --check" : "daemon");
  using Verdict = daemon::SlurmReleaseCheck::Verdict;
  if (o.check) {
    if (slurm && slurm->verdict != Verdict::kFit) return 1;
    fmt::print("{}: ok (backend {}, store {}, socket {}{})\n", o.config,
               config.backend == daemon::Backend::kSlurm ? "slurm" : "simulator", config.store_path,
               config.socket_path,
               slurm ? fmt::format("; built for Slurm {}, libslurm.so.{} loaded, slurmctld {}",
                                   daemon::built_slurm_release(), slurm->loaded_api,
                                   slurm->controller_release)
                     : "");
    return 0;
  }
  // A controller away at the start is what the daemon rides out (it backs off and polls again);
  // one of another release would be misread on every poll.
  if (slurm && slurm->verdict == Verdict::kMismatch) return 1;
  ::umask(0077);  // the store, its WAL and the logs are the user's alone
  daemon::configure_logging(config);
  auto d = daemon::make_daemon(config, embedded_sample_trace(), embedded_sample_name());
  return d->run();
}

std::string age(double seconds) {
  const auto s = static_cast<Seconds>(seconds);
  if (s < 0) return "never";
  return format_short_duration(s) + " ago";
}

struct StatusOptions {
  DaemonSocketOptions where;
  bool json = false;
};

int run_status(const StatusOptions& o) {
  int rc = 0;
  const auto reply = ask_daemon(o.where, {{"op", "status"}}, rc);
  if (!reply) return rc;
  const json& d = reply->at("daemon");
  if (o.json) {
    std::cout << d.dump(2) << "\n";
    return 0;
  }
  const json& q = d.at("queue");
  const json& rpc = d.at("rpc");
  std::string campaigns;
  for (const auto& [state, n] : d.at("campaigns").items())
    campaigns += (campaigns.empty() ? "" : ", ") + fmt::format("{} {}", n.get<int>(), state);
  fmt::print("daemon        pid {}, up {}s, backend {}\n", d.at("pid").get<long>(),
             d.at("uptime_s").get<long long>(), d.at("backend").get<std::string>());
  fmt::print("controller    {} ({} polls, last {}{})\n",
             d.at("controller_reachable").get<bool>() ? "reachable" : "UNREACHABLE",
             d.at("polls").get<long long>(), age(d.at("last_poll_age_s").get<double>()),
             d.at("failed_polls").get<long long>() > 0
                 ? fmt::format(", {} failed since", d.at("failed_polls").get<long long>())
                 : "");
  fmt::print("partition     {} ({} nodes x {} GPUs)\n", d.at("partition").get<std::string>(),
             d.at("nodes").get<int>(), d.at("gpus_per_node").get<int>());
  fmt::print("queue         {} pending, {} running; mean wait of the last {} starts {}\n",
             q.at("pending").get<long>(), q.at("running").get<long>(),
             q.at("recent_starts").get<int>(),
             format_short_duration(static_cast<Seconds>(q.at("recent_mean_wait_s").get<double>())));
  if (q.contains("pending_by_state") && !q.at("pending_by_state").empty()) {
    std::string states;
    for (const auto& [state, n] : q.at("pending_by_state").items())
      states += fmt::format("{}{} {}", states.empty() ? "" : ", ", n.get<int>(), state);
    fmt::print("pending       {} (as slurmctld's reasons say)\n", states);
  }
  fmt::print("history       {} of {} snapshots\n", d.at("history_snapshots").get<int>(),
             FeatureEncoder::kWindow);
  fmt::print("campaigns     {}\n", campaigns.empty() ? "none" : campaigns);
  if (const auto n = d.value("segments_fate_unknown", 0); n > 0)
    fmt::print(
        "held          {} segment(s) whose job left the queue unseen and may have run: `mirage "
        "campaign show` says which, `mirage campaign settle` decides\n",
        n);
  if (const auto why = d.value("store_error", std::string()); !why.empty())
    fmt::print("STORE         cannot be written: {}; nothing is submitted until it can\n",
               escape_control(why));
  if (d.contains("waits") && d.at("waits").is_object())
    fmt::print("waits         {} (the latest jobs)\n",
               escape_control(d.at("waits").at("summary").get<std::string>()));
  if (d.contains("wait_predictor") && d.at("wait_predictor").is_string())
    fmt::print("predictor     {}\n", escape_control(d.at("wait_predictor").get<std::string>()));
  fmt::print("slurm RPCs    {} total, {:.2f} per tick ({:.2f} job dumps per tick)\n",
             rpc.at("total").get<long long>(), rpc.at("per_tick").get<double>(),
             rpc.at("job_dumps_per_tick").get<double>());
  fmt::print("cycle         {:.1f} ms (max {:.1f} ms)\n", d.at("cycle_ms").at("last").get<double>(),
             d.at("cycle_ms").at("max").get<double>());
  fmt::print("memory        {:.1f} MiB resident\n", d.at("rss_kib").get<double>() / 1024);
  fmt::print("store         {}\n", d.at("store").get<std::string>());
  return 0;
}

}  // namespace

void register_daemon_commands(CLI::App& app) {
  auto d = std::make_shared<DaemonOptions>();
  CLI::App* cmd = app.add_subcommand(
      "daemon",
      "Run the campaign service in the foreground (systemd: daemon/systemd/mirage.service)");
  cmd->add_option("--config", d->config, "TOML config (see daemon/config/mirage.example.toml)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_flag("--check", d->check, "Check the config and exit");
  cmd->add_flag("--store-moved", d->store_moved, kStoreMovedHelp);
  cmd->callback([d] {
    const int rc = run_daemon(*d);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });

  auto s = std::make_shared<StatusOptions>();
  CLI::App* status =
      app.add_subcommand("status", "Ask the running daemon how it and the cluster are");
  s->where.add_to(*status);
  status->add_flag("--json", s->json, "Print the daemon's JSON status");
  status->callback([s] {
    const int rc = run_status(*s);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace mirage::cli

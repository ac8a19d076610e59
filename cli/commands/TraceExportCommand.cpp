// `mirage trace export`: the jobs the daemon observed on the cluster, as an SWF trace a user can
// replay, calibrate and train on (the daemon's store keeps them as it sees them finish).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "Commands.h"
#include "mirage/core/Error.h"
#include "mirage/daemon/control/ControlProtocol.h"
#include "mirage/daemon/control/ControlServer.h"
#include "mirage/daemon/service/DaemonConfig.h"
#include "mirage/daemon/store/CampaignStore.h"
#include "mirage/daemon/store/StoreLock.h"
#include "mirage/daemon/store/TraceExport.h"

namespace mirage::cli {
namespace {

using json = nlohmann::json;

struct ExportOptions {
  std::string store;
  std::string config;
  std::string out;
  std::string partition;
};

void print_export(std::size_t jobs, const std::string& partition, const std::string& out) {
  fmt::print("wrote {} jobs ({}) to {}\n", jobs,
             partition.empty() ? "all partitions" : "partition " + partition, out);
}

int run_export(const ExportOptions& o) {
  const std::string out = std::filesystem::absolute(o.out).string();
  // The daemon holds its store for its life (no other process may open it): ask it first.
  if (o.store.empty()) {
    const std::string socket = o.config.empty() ? daemon::default_socket_path()
                                                : daemon::load_daemon_config(o.config).socket_path;
    try {
      json req = {{"op", "export"}, {"out", out}};
      if (!o.partition.empty()) req["partition"] = o.partition;
      const json reply = daemon::call_daemon(socket, req);
      print_export(reply.at("jobs").get<std::size_t>(), reply.at("partition").get<std::string>(),
                   o.out);
      return 0;
    } catch (const daemon::ControlClientError&) {  // no daemon there: the store itself
    }
  }
  std::string path = o.store;
  if (path.empty())
    path = o.config.empty() ? daemon::default_store_path()
                            : daemon::load_daemon_config(o.config).store_path;
  if (::access(path.c_str(), R_OK) != 0)
    throw InputError({path, 0, ""}, "no daemon store here (give --store or --config)");
  // The store is one process's at a time: a tick or a campaign command finishing is waited for.
  std::string held_by;
  const auto lock = daemon::StoreLock::acquire(path, "mirage trace export", 30, &held_by);
  if (!lock)
    throw std::runtime_error("store " + path + " is in use by " + held_by +
                             "; with a daemon on it, give --config so that the daemon is asked");
  daemon::CampaignStore store(path);
  const auto e = daemon::export_store(store, o.partition, out);
  print_export(e.jobs, e.partition, o.out);
  return 0;
}

}  // namespace

void register_trace_export_command(CLI::App& trace) {
  auto e = std::make_shared<ExportOptions>();
  CLI::App* ex = trace.add_subcommand(
      "export",
      "Write the jobs the daemon observed on the cluster as an SWF trace (for retraining)");
  ex->add_option("--out", e->out, "SWF file to write")->required();
  ex->add_option("--store", e->store,
                 "The daemon's store (default: from --config, else the default)");
  ex->add_option("--config", e->config, "The daemon's config file, to find the store")
      ->check(CLI::ExistingFile);
  ex->add_option("--partition", e->partition,
                 "Only this partition (default: the one the daemon watches)");
  ex->callback([e] { run_export(*e); });
}

}  // namespace mirage::cli

// `mirage trace export`: the jobs the daemon observed on the cluster, as an SWF trace a user can
// replay, calibrate and train on (the daemon's store keeps them as it sees them finish).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "Commands.h"
#include "mirage/core/Error.h"
#include "mirage/daemon/CampaignStore.h"
#include "mirage/daemon/DaemonConfig.h"
#include "mirage/daemon/TraceExport.h"

namespace mirage::cli {
namespace {

using json = nlohmann::json;

struct ExportOptions {
  std::string store;
  std::string config;
  std::string out;
  std::string partition;
};

int run_export(const ExportOptions& o) {
  std::string path = o.store;
  if (path.empty())
    path = o.config.empty() ? daemon::default_store_path()
                            : daemon::load_daemon_config(o.config).store_path;
  if (::access(path.c_str(), R_OK) != 0)
    throw InputError({path, 0, ""}, "no daemon store here (give --store or --config)");
  daemon::CampaignStore store(path);
  daemon::TraceExportOptions options;
  const json machine = json::parse(store.value("machine").empty() ? "{}" : store.value("machine"));
  options.partition = o.partition.empty() ? machine.value("partition", std::string()) : o.partition;
  options.machine_nodes = machine.value("nodes", 0);
  options.gpus_per_node = machine.value("gpus_per_node", 0);
  const auto jobs = store.finished_observed_jobs();
  std::ofstream f(o.out);
  if (!f) throw std::runtime_error("cannot write " + o.out);
  const std::size_t n = daemon::export_swf(jobs, options, f);
  f.close();
  fmt::print("wrote {} jobs ({}) to {}\n", n,
             options.partition.empty() ? "all partitions" : "partition " + options.partition,
             o.out);
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

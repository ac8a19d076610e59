// `mirage forecast`: when will a pending job start? mirage's forecast of a job already in the
// queue (daemon/JobForecast.h), by the priorities slurmctld reports and by the age and size
// weights alone, from one job dump of the daemon config's cluster.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>

#include "Commands.h"
#include "EmbeddedSample.h"
#include "mirage/core/Error.h"
#include "mirage/core/Time.h"
#include "mirage/daemon/control/ControlProtocol.h"
#include "mirage/daemon/service/Daemon.h"
#include "mirage/daemon/service/DaemonConfig.h"
#include "mirage/daemon/slurm/JobForecast.h"

namespace mirage::cli {

namespace {

using json = nlohmann::json;

struct ForecastOptions {
  std::string config;
  std::vector<JobId> jobs;
  bool json_out = false;
};

json time_or_null(Seconds t) {
  return t == kUnknownTime ? json(nullptr) : json(t);
}

std::string when(Seconds t, Seconds now) {
  if (t == kUnknownTime) return "no start within the forecast's horizon";
  return fmt::format("{} (in {})", format_iso_time(t), format_short_duration(t - now));
}

int run_forecast(const ForecastOptions& o) {
  const daemon::DaemonConfig config = daemon::load_daemon_config(o.config);
  daemon::configure_logging(config);  // never stdout: it may carry --json
  daemon::SlurmBackend backend =
      daemon::make_slurm_backend(config, embedded_sample_trace(), embedded_sample_name());
  const daemon::JobDump dump = backend.client->load_jobs(0);
  const std::vector<daemon::PartitionInfo> parts = backend.client->load_partitions();
  const daemon::PartitionInfo* partition = daemon::choose_partition(parts, config.partition);
  if (!partition)
    throw InputError({o.config, 0, "cluster.partition"},
                     fmt::format("partition '{}' is not on the cluster",
                                 config.partition.empty() ? "(default)" : config.partition));
  json out = json::array();
  // What the plan knew of the partition beside the jobs.
  const json seen = daemon::partition_knowledge_json(*partition);
  int missing = 0;
  for (const JobId id : o.jobs) {
    const auto f = daemon::forecast_job(dump.jobs, *partition, id, dump.taken,
                                        static_cast<std::uint32_t>(::getuid()));
    if (!f) {
      ++missing;
      if (!o.json_out) fmt::print("job {}: not pending in partition {}\n", id, partition->name);
      out.push_back({{"job", id}, {"pending", false}, {"cluster", seen}});
      continue;
    }
    if (o.json_out) {
      out.push_back(
          {{"job", f->job},
           {"pending", true},
           {"now", f->now},
           {"state", to_string(f->state)},
           {"reason", f->reason},
           {"priority", f->priority == kUnknownPriority ? json(nullptr) : json(f->priority)},
           {"accrued_s", f->accrued},
           {"held_by_limit", f->held_by_limit},
           {"reported_start", time_or_null(f->reported_start)},
           {"recomputed_start", time_or_null(f->recomputed_start)},
           {"cluster", seen}});
      continue;
    }
    fmt::print("job {}: pending ({}), priority {}, accruing age for {}\n", id,
               f->reason.empty() ? std::string(to_string(f->state)) : f->reason,
               f->priority == kUnknownPriority ? std::string("not reported")
                                               : fmt::format("{:g}", f->priority),
               format_short_duration(f->accrued));
    if (f->state != PendingState::kEligible && !f->held_by_limit) {
      fmt::print("  it cannot start as it is ({}): no forecast\n", to_string(f->state));
      continue;
    }
    if (f->held_by_limit)
      fmt::print("  held by its user's limits: not before the user's first running job ends\n");
    fmt::print("  forecast start {}, by the priorities slurmctld reports\n",
               when(f->reported_start, f->now));
    fmt::print("  {} by age and size alone\n", when(f->recomputed_start, f->now));
  }
  if (o.json_out) fmt::print("{}\n", out.dump(2));
  return missing > 0 ? 1 : 0;
}

}  // namespace

void register_forecast_command(CLI::App& app) {
  auto o = std::make_shared<ForecastOptions>();
  CLI::App* cmd = app.add_subcommand(
      "forecast",
      "When will a pending job start? mirage's forecast from the queue as slurmctld reports it");
  cmd->add_option("--config", o->config, "The daemon's TOML config (its cluster and partition)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--job", o->jobs, "Slurm job id(s) of pending jobs")->required();
  cmd->add_flag("--json", o->json_out, "One JSON array, a record per job");
  cmd->callback([o] {
    const int rc = run_forecast(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace mirage::cli

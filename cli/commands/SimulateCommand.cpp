// mirage simulate: replay a trace through the simulator and print the summary.
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "ClusterOptions.h"
#include "Commands.h"
#include "SampleTraces.h"
#include "TraceReplay.h"
#include "mirage/simulator/SimulationSummary.h"
#include "mirage/simulator/Simulator.h"
#include "mirage/traces/Trace.h"

namespace mirage::cli {
namespace {

struct SimulateOptions {
  std::string trace;  // empty: the embedded sample
  TraceOptions trace_options;
  ClusterOptions cluster;
  std::string out;
  bool json = false;
};

void write_jobs_csv(const std::string& path, const Trace& trace, const Simulator& sim) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << "job_id,user,submit,nodes,gpus_per_node,time_limit_s,runtime_s,real_start,real_end,"
       "sim_start,sim_end,real_wait_s,sim_wait_s\n";
  for (std::size_t i = 0; i < trace.jobs.size(); ++i) {
    const Job& j = trace.jobs[i];
    const auto idx = static_cast<SimJobIndex>(i);
    const Seconds ss = sim.start_time(idx), se = sim.end_time(idx);
    // From its submission in the replay: a job that follows another's end is submitted then.
    const Seconds sim_wait = ss == kUnknownTime ? kUnknownTime : ss - sim.submit_time(idx);
    f << j.id << ',' << j.user << ',' << j.submit << ',' << j.nodes << ',' << j.gpus_per_node << ','
      << sim.job(idx).time_limit << ',' << sim.job(idx).runtime << ',' << j.start << ',' << j.end
      << ',' << ss << ',' << se << ',' << j.wait() << ',' << sim_wait << '\n';
  }
}

int run_simulate(const SimulateOptions& o) {
  TraceReplay replay = prepare_replay(o.trace, o.trace_options, o.cluster);
  const Trace& trace = replay.trace;
  const ClusterSpec& spec = replay.spec;
  const std::size_t oversized = replay.oversized;

  auto jobs = std::make_shared<const std::vector<SimJobSpec>>(to_sim_jobs(trace.jobs));
  Simulator sim(spec, jobs);
  const auto t0 = std::chrono::steady_clock::now();
  sim.run_to_completion();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const SimulationSummary s = summarize(sim, wall);
  if (!o.out.empty()) write_jobs_csv(o.out, trace, sim);

  if (o.json) {
    nlohmann::json j = {
        {"trace", trace.source},
        {"nodes", spec.nodes},
        {"gpus_per_node", spec.gpus_per_node},
        {"allocation", std::string(to_string(spec.allocation))},
        {"backfill", std::string(to_string(spec.scheduler.backfill))},
        {"jobs", s.jobs},
        {"dropped_oversized", oversized},
        {"skipped_rows", trace.report.skipped_total()},
        {"span_s", s.span},
        {"wall_seconds", s.wall_seconds},
        {"jobs_per_second", s.jobs_per_second},
        {"utilization", s.utilization},
        {"mean_wait_s", s.mean_wait_s},
        {"median_wait_s", s.median_wait_s},
        {"p90_wait_s", s.p90_wait_s},
        {"mean_bounded_slowdown", s.mean_bounded_slowdown},
        {"backfill_starts", s.backfill_starts},
    };
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  fmt::print("trace            {}\n", trace.source);
  fmt::print("machine          {}, {} allocation, backfill {}\n", spec.describe(),
             to_string(spec.allocation), to_string(spec.scheduler.backfill));
  fmt::print("jobs             {}", s.jobs);
  if (oversized) fmt::print(" ({} larger than the machine dropped)", oversized);
  if (trace.report.skipped_total())
    fmt::print(" ({} rows skipped while reading)", trace.report.skipped_total());
  fmt::print("\n");
  fmt::print("simulated span   {} ({} .. {})\n", format_short_duration(s.span),
             format_iso_time(s.first_submit), format_iso_time(s.last_end));
  fmt::print("wall time        {:.3f} s ({:.0f} jobs/s)\n", s.wall_seconds, s.jobs_per_second);
  fmt::print("utilisation      {:.1f}%\n", 100 * s.utilization);
  fmt::print("wait             mean {}  median {}  p90 {}\n",
             format_short_duration(static_cast<Seconds>(s.mean_wait_s)),
             format_short_duration(static_cast<Seconds>(s.median_wait_s)),
             format_short_duration(static_cast<Seconds>(s.p90_wait_s)));
  fmt::print("bounded slowdown {:.2f} (mean, {} s bound)\n", s.mean_bounded_slowdown,
             kSlowdownBound);
  fmt::print("backfill starts  {}\n", s.backfill_starts);
  if (!o.out.empty()) fmt::print("per-job results  {}\n", o.out);
  return 0;
}

}  // namespace

void register_simulate_command(CLI::App& app) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Replay a trace through the Slurm-like simulator and print the summary");
  cmd->add_option("--trace", o->trace,
                  "Trace file (SWF, sacct; .gz read directly). Default: the embedded sample")
      ->transform(sample_trace())
      ->check(CLI::ExistingFile);
  o->trace_options.add_to(*cmd);
  o->cluster.add_to(*cmd);
  cmd->add_option("--out", o->out, "Write each job's simulated and real start/end to this CSV");
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->callback([o] {
    const int rc = run_simulate(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace mirage::cli

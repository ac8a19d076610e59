// `mirage trace waits FILE`: fit the distribution of a chain successor's wait from a log (what the
// `quantile` policy reads) and save it, for `mirage eval --wait-distribution` and the daemon's
// `[policy] wait_distribution`.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "ClusterOptions.h"
#include "Commands.h"
#include "SampleTraces.h"
#include "SegmentFlags.h"
#include "TimeFlags.h"
#include "WaitFit.h"
#include "mirage/agents/WaitDistribution.h"
#include "mirage/core/Error.h"

namespace mirage::cli {
namespace {

struct WaitsOptions {
  std::string file;
  std::string out;
  SegmentFlags segment;
  std::string from, to;
  TraceOptions trace_options;
  ClusterOptions cluster;
};

void run_waits(const WaitsOptions& o) {
  Trace trace = read_trace(o.file, o.trace_options.to_read_options());
  ClusterSpec spec = o.cluster.to_spec(trace);
  o.cluster.calibrate(trace, spec);  // the priority weights the forecast ranks the queue by
  WaitDistributionSpec w;
  w.nodes = o.segment.nodes;
  w.gpus_per_node = o.segment.gpus_per_node;
  w.time_limit = o.segment.time_limit();
  w.from = parse_time_flag(o.from, "--from");
  w.to = parse_time_flag(o.to, "--to");
  if (w.to <= w.from) throw InputError({"", 0, "--to"}, "must be after --from");
  const WaitDistribution d = fit_wait_distribution(trace, spec, w);
  write_wait_distribution(o.out, d);
  fmt::print("wait distribution of {} written to {}: {}\n", trace.source, o.out, describe(d));
  fmt::print("  {:>16} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "planned wait up to", "jobs",
             "5%", "25%", "median", "75%", "95%");
  for (std::size_t i = 0; i < d.bins.size(); ++i) {
    const WaitDistribution::Bin& b = d.bins[i];
    const auto at = [&](int level) {
      return format_short_duration(b.waits[static_cast<std::size_t>(level)]);
    };
    fmt::print("  {:>16} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
               i + 1 == d.bins.size() ? std::string("any") : format_short_duration(b.planned_up_to),
               b.jobs, at(1), at(5), at(10), at(15), at(19));
  }
}

}  // namespace

void register_trace_waits_command(CLI::App& trace) {
  auto o = std::make_shared<WaitsOptions>();
  CLI::App* cmd = trace.add_subcommand(
      "waits",
      "Fit how long a chain's successor waits, from the real waits of the log's jobs of its size "
      "in the queue they met, for the quantile policy");
  cmd->add_option("FILE", o->file, "Trace file with real start times")
      ->required()
      ->transform(sample_trace())
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", o->out, "Where to write it (a TOML file)")->required();
  o->segment.add_to(*cmd);
  cmd->add_option("--from", o->from, "Fit on jobs submitted from (YYYY-MM-DD[THH:MM:SS], UTC)")
      ->required();
  cmd->add_option("--to", o->to, "... until (exclusive)")->required();
  o->trace_options.add_to(*cmd);
  o->cluster.add_to(*cmd, /*command_has_segment=*/true);
  cmd->callback([o] { run_waits(*o); });
}

}  // namespace mirage::cli

// `mirage trace waits FILE`: fit the distribution of a chain successor's wait from a log (what the
// `quantile` policy reads) and save it, for `mirage eval --wait-distribution` and the daemon's
// `[policy] wait_distribution`; with --check, judge such a file or a wait model on a later window
// instead (TraceWaitsCheck.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "ClusterOptions.h"
#include "Commands.h"
#include "SampleTraces.h"
#include "SegmentFlags.h"
#include "TimeFlags.h"
#include "TraceWaitsCheck.h"
#include "Validators.h"
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
  std::string check;  // a file to judge instead of fitting
  bool json = false;
  bool no_replays = false;
  std::vector<double> adaptive_steps;
  std::vector<std::size_t> class_minimums;
  std::vector<double> weighted_decays;
  std::vector<std::size_t> weighted_class_minimums;
  bool user_streams = false;
};

void run_waits(const WaitsOptions& o) {
  if (!o.check.empty()) {
    WaitCheckOptions c;
    c.trace_file = o.file;
    c.file = o.check;
    c.from = o.from;
    c.to = o.to;
    c.out = o.out;
    c.json = o.json;
    c.no_replays = o.no_replays;
    c.adaptive_steps = o.adaptive_steps;
    c.class_minimums = o.class_minimums;
    c.weighted_decays = o.weighted_decays;
    c.weighted_class_minimums = o.weighted_class_minimums;
    c.user_streams = o.user_streams;
    c.trace_options = o.trace_options;
    c.cluster = o.cluster;
    run_wait_check(c);
    return;
  }
  if (o.out.empty()) throw InputError({"", 0, "--out"}, "required: where to write the fit");
  if (o.json) throw InputError({"", 0, "--json"}, "only with --check");
  if (!o.adaptive_steps.empty()) throw InputError({"", 0, "--adaptive-steps"}, "only with --check");
  if (!o.class_minimums.empty())
    throw InputError({"", 0, "--adaptive-class-minimums"}, "only with --check");
  if (!o.weighted_decays.empty())
    throw InputError({"", 0, "--weighted-decays"}, "only with --check");
  if (!o.weighted_class_minimums.empty())
    throw InputError({"", 0, "--weighted-class-minimums"}, "only with --check");
  if (o.user_streams) throw InputError({"", 0, "--user-streams"}, "only with --check");
  Trace trace = read_trace(o.file, o.trace_options.to_read_options());
  ClusterSpec spec = o.cluster.to_spec(trace);
  o.cluster.calibrate(trace, spec);  // the priority weights the forecast ranks the queue by
  o.segment.note_old_meaning(spec.nodes);
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
  cmd->add_option("--out", o->out,
                  "Where to write it (a TOML file); with --check, a CSV of each judged job's real "
                  "wait and stated quantiles");
  o->segment.add_to(*cmd);
  cmd->add_option("--check", o->check,
                  "Judge this wait model or binned distribution on the jobs submitted in --from .. "
                  "--to (after its fit) beside the binned fit, the forecast and the replays")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--json", o->json, "With --check: one JSON object instead of the table");
  cmd->add_flag("--no-replays", o->no_replays, "With --check: leave the two replays out");
  cmd->add_option(
         "--adaptive-steps", o->adaptive_steps,
         "With --check: also state the file's quantiles recalibrated adaptively with "
         "these steps (a row each, beside the adaptive row's 0.005), to choose one on a fit "
         "window's last month")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--adaptive-class-minimums", o->class_minimums,
                  "With --check: also state the file's quantiles recalibrated adaptively with one "
                  "state per size class, in force once its class has this many waits (the pooled "
                  "state before; a row each), and with the pooled state alone, to choose the "
                  "daemon's minimum on a fit window's last month")
      ->delimiter(',');
  cmd->add_option("--weighted-decays", o->weighted_decays,
                  "With --check: also state the file's quantiles recalibrated by weighted "
                  "conformal per size class with these decays of an outcome's weight (a row each)")
      ->delimiter(',')
      ->check(number_above_zero_to(1.0));
  cmd->add_option("--weighted-class-minimums", o->weighted_class_minimums,
                  "With --check: also state the file's quantiles recalibrated by weighted "
                  "conformal with one state per size class, in force once its class has this "
                  "many waits (a row each), and with the pooled state alone, to choose the "
                  "daemon's minimum on a fit window's last month")
      ->delimiter(',');
  cmd->add_flag("--user-streams", o->user_streams,
                "With --check: also state the daemon's rule fed only the most active user's jobs "
                "of each size class (30 or more), as a daemon learns from one user's successors, "
                "and score every row on that user's jobs");
  cmd->add_option("--from", o->from,
                  "Fit on jobs submitted from (YYYY-MM-DD[THH:MM:SS], UTC); with --check, judge "
                  "them")
      ->required();
  cmd->add_option("--to", o->to, "... until (exclusive)")->required();
  o->trace_options.add_to(*cmd);
  o->cluster.add_to(*cmd, /*command_has_segment=*/true);
  cmd->callback([o] { run_waits(*o); });
}

}  // namespace mirage::cli

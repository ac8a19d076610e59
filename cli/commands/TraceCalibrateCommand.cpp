// `mirage trace calibrate FILE`: infer what the log leaves out of its cluster and save it beside
// the trace (TRACE.calibration.toml), for a person to read and edit and for every replay to use.
// The inference goes through the calibration cache (CalibrationCache.h) as every replay's does: a
// calibration another command inferred is written without inferring it again, and one inferred
// here is not inferred again by the replays after it.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <optional>

#include "ClusterOptions.h"
#include "Commands.h"
#include "SampleTraces.h"
#include "TimeFlags.h"
#include "Validators.h"
#include "mirage/core/Time.h"
#include "mirage/simulator/Calibration.h"
#include "mirage/simulator/CalibrationCache.h"
#include "mirage/simulator/CalibrationFile.h"
#include "mirage/simulator/ForwardCalibration.h"

namespace mirage::cli {
namespace {

struct CalibrateOptions {
  std::string file;
  std::string out;
  std::string capacity_window = "1d";
  double capacity_share = CalibrationSettings{}.capacity_share;
  bool share_given = false;
  bool feedback = false;
  TraceOptions trace_options;
  ClusterOptions cluster;
};

void run_calibrate(const CalibrateOptions& o) {
  const Trace trace = read_trace(o.file, o.trace_options.to_read_options());
  const ClusterSpec spec = o.cluster.to_spec(trace);
  CalibrationSettings settings = o.cluster.inference_settings();
  settings.capacity_window = parse_duration_flag(o.capacity_window, "--capacity-window");
  settings.capacity_share = o.capacity_share;
  settings.choose_capacity_share = !o.share_given;  // a share asked for is kept, not chosen
  settings.feedback = o.feedback;
  // --fit-until saves the forward fit a replay of the later days would use (ClusterOptions).
  std::optional<Seconds> until;
  if (!o.cluster.fit_until.empty()) until = parse_time_flag(o.cluster.fit_until, "--fit-until");
  const CachedCalibration cached = cached_or_inferred(
      trace.source, calibration_cache_key(trace.jobs, spec, settings, until), [&] {
        return until ? infer_calibration_before(trace.jobs, *until, spec, settings)
                     : infer_calibration(trace.jobs, spec, settings);
      });
  fmt::print(stderr, "mirage: {}\n", describe_cached(cached, trace.source));
  if (until)
    fmt::print(
        "fitted on the jobs submitted before {} (--fit-until) and carried past it: the last four "
        "weeks' room repeated, no down window foreseen\n",
        format_iso_time(*until));
  const Calibration& c = cached.calibration;
  const std::string out = o.out.empty() ? calibration_path(o.file) : o.out;
  write_calibration(c, settings, spec.nodes, trace.source, out);
  fmt::print("calibration of {} ({} nodes) written to {}\n", trace.source, spec.nodes, out);
  // Every model reads the waits the jobs had: without starts there is no evidence for any.
  if (std::none_of(trace.jobs.begin(), trace.jobs.end(), [](const Job& j) { return j.started(); }))
    fmt::print(
        "  the log gives no real start time for its {} jobs: nothing could be inferred, and "
        "the replay uses the flags alone\n",
        trace.jobs.size());
  const std::string limits = c.describe_limits();
  fmt::print("  user limits   {} running jobs, {} nodes per user (0: none){}\n",
             c.user_limits.max_running_jobs, c.user_limits.max_running_nodes,
             limits.empty() ? "" : " (" + limits + ")");
  const std::string room = c.describe_room();
  const std::string evidence = c.describe_room_evidence();
  fmt::print("  capacity      {}, {:.1f} nodes unavailable on average{}{}\n",
             c.describe_congestion(), c.mean_unavailable, evidence.empty() ? "" : ": " + evidence,
             room.empty() ? "" : "; " + room);
  fmt::print("  boundaries    {}\n",
             c.boundaries.empty() ? std::string("none (jobs ran across every hour of the week)")
                                  : "no job ran across " + c.describe_boundaries());
  fmt::print("  down          {}\n",
             c.down.empty()
                 ? std::string("none (no stretch without a start while the machine idled)")
                 : describe_down_windows(c.down) +
                       ": no job started in them though the machine stood idle and "
                       "one that fitted waited");
  const std::string links = c.describe_links();
  fmt::print(
      "  dependencies  {} jobs replayed as dependent on their user's earlier job, {} of them "
      "members of arrays the log ran a few at a time{}\n",
      c.dependencies.size(), c.array_members, links.empty() ? "" : " (" + links + ")");
  if (c.feedback)
    fmt::print(
        "  feedback      {} jobs submitted within {} of their user's earlier job's end, "
        "replayed as submitted that long after its replayed end ({})\n",
        c.followers.size(), format_short_duration(settings.feedback_within),
        settings.feedback ? std::string("asked for") : c.describe_feedback_choice());
  else
    fmt::print("  feedback      {} (--feedback forces it)\n", c.describe_feedback_choice());
  if (const auto& p = c.priority)
    fmt::print("  priority      {}: {}\n", describe_weights(*p), describe_evidence(*p));
  else
    fmt::print(
        "  priority      not fitted: no job has a real start (the default weights, or "
        "--slurm-conf's, apply)\n");
}

}  // namespace

void register_trace_calibrate_command(CLI::App& trace) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = trace.add_subcommand(
      "calibrate",
      "Infer what a log leaves out of its cluster (user limits, capacity over time, weekly "
      "boundaries, down windows, dependencies) and save it beside the trace");
  cmd->add_option("FILE", o->file, "Trace file with real start times")
      ->required()
      ->transform(sample_trace())
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", o->out, "Where to write it (default: FILE.calibration.toml)");
  cmd->add_option("--capacity-window", o->capacity_window,
                  "One capacity figure per window of this length: shorter follows the log's "
                  "waits job by job more closely, longer the waits of long chained jobs "
                  "(docs/results/fidelity.md)")
      ->capture_default_str();
  CLI::Option* share =
      cmd->add_option("--capacity-share", o->capacity_share,
                      "A congested window's room: the most nodes the log's jobs held for at least "
                      "this share of it (0: the most at any moment). Without it, 0, 0.25 and "
                      "0.35 are replayed and 0.25 kept unless another's replay lies less far "
                      "outside the fidelity targets")
          ->check(number_between(0.0, 1.0))
          ->capture_default_str();
  cmd->add_flag("--feedback", o->feedback,
                "Replay a job its user submitted within 10 minutes of an earlier job's end as "
                "submitted that long after that job's replayed end, and choose the rest with it "
                "(without it, tried by replay where the replay misses a fidelity target: "
                "docs/results/fidelity.md)");
  o->trace_options.add_to(*cmd);
  o->cluster.add_to(*cmd);
  cmd->callback([o, share] {
    o->share_given = share->count() > 0;
    run_calibrate(*o);
  });
}

}  // namespace mirage::cli

#include "ClusterOptions.h"

#include <fmt/format.h>

#include <algorithm>

#include "mirage/core/Error.h"
#include "mirage/simulator/Calibration.h"
#include "mirage/simulator/CalibrationFile.h"

namespace mirage::cli {

void ClusterOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--nodes", nodes, "Nodes in the machine (default: from the trace header)")
      ->check(CLI::Range(1, 65535));
  cmd.add_option("--gpus-per-node", gpus_per_node, "GPUs per node")->check(CLI::NonNegativeNumber);
  cmd.add_option("--allocation", allocation, "whole-node (exclusive) or gpu (GPU-granular)")
      ->check(CLI::IsMember({"whole-node", "gpu"}))
      ->capture_default_str();
  scheduler_flags.push_back(
      cmd.add_option(
             "--backfill", backfill,
             "Backfill: slurm (reserve for every job tested), easy (only the top job), none")
          ->check(CLI::IsMember({"easy", "slurm", "none"}))
          ->capture_default_str());
  scheduler_flags.push_back(cmd.add_option("--sched-interval", sched_interval, "sched_interval (s)")
                                ->check(CLI::PositiveNumber)
                                ->capture_default_str());
  scheduler_flags.push_back(cmd.add_option("--bf-interval", bf_interval, "bf_interval (s)")
                                ->check(CLI::PositiveNumber)
                                ->capture_default_str());
  scheduler_flags.push_back(cmd.add_option("--bf-window", bf_window_min, "bf_window (minutes)")
                                ->check(CLI::PositiveNumber)
                                ->capture_default_str());
  scheduler_flags.push_back(cmd.add_option("--bf-resolution", bf_resolution, "bf_resolution (s)")
                                ->check(CLI::PositiveNumber)
                                ->capture_default_str());
  scheduler_flags.push_back(cmd.add_option("--bf-max-job-test", bf_max_job_test, "bf_max_job_test")
                                ->check(CLI::PositiveNumber)
                                ->capture_default_str());
  scheduler_flags.push_back(
      cmd.add_option("--bf-max-job-user", bf_max_job_user,
                     "bf_max_job_user: jobs of one user backfill considers per pass (0: no limit)")
          ->check(CLI::NonNegativeNumber)
          ->capture_default_str());
  priority_flags.push_back(cmd.add_option("--priority-weight-age", weight_age, "PriorityWeightAge")
                               ->check(CLI::NonNegativeNumber)
                               ->capture_default_str());
  priority_flags.push_back(
      cmd.add_option("--priority-weight-job-size", weight_job_size, "PriorityWeightJobSize")
          ->check(CLI::NonNegativeNumber)
          ->capture_default_str());
  priority_flags.push_back(
      cmd.add_flag("--priority-favor-small", favor_small,
                   "PriorityFavorSmall: the job size factor grows as the job gets smaller"));
  priority_flags.push_back(
      cmd.add_option("--priority-max-age", max_age_min, "PriorityMaxAge (minutes)")
          ->check(CLI::PositiveNumber)
          ->capture_default_str());
  priority_flags.push_back(cmd.add_option("--priority-weight-fairshare", weight_fairshare,
                                          "PriorityWeightFairshare (every user an equal share)")
                               ->check(CLI::NonNegativeNumber)
                               ->capture_default_str());
  priority_flags.push_back(
      cmd.add_option("--priority-decay-half-life", decay_half_life_min,
                     "PriorityDecayHalfLife (minutes) of the usage fairshare counts")
          ->check(CLI::PositiveNumber)
          ->capture_default_str());
  cmd.add_option("--calibration", calibration,
                 "What the log leaves out (user limits, capacity over time, dependencies): none "
                 "(the log's jobs alone on the whole machine), infer (from the log), auto (the "
                 "file beside the trace, TRACE.calibration.toml, else infer) or a calibration "
                 "file")
      ->capture_default_str();
}

ClusterSpec ClusterOptions::to_spec(const Trace& trace) const {
  ClusterSpec spec;
  spec.nodes = nodes > 0 ? nodes : trace.machine_nodes;
  if (spec.nodes <= 0)
    throw InputError({trace.source, 0, "--nodes"},
                     "the trace does not say how many nodes the machine has; give --nodes");
  spec.gpus_per_node = gpus_per_node > 0 ? gpus_per_node : trace.machine_gpus_per_node;
  if (allocation == "gpu") {
    spec.allocation = AllocationMode::kGpuGranular;
    if (spec.gpus_per_node <= 0)
      throw InputError({"", 0, "--gpus-per-node"}, "GPU-granular allocation needs --gpus-per-node");
  }
  spec.scheduler.backfill = *parse_backfill_mode(backfill);
  spec.scheduler.sched_interval = sched_interval;
  spec.scheduler.bf_interval = bf_interval;
  spec.scheduler.bf_window = bf_window_min * kMinute;
  spec.scheduler.bf_resolution = bf_resolution;
  spec.scheduler.bf_max_job_test = bf_max_job_test;
  spec.scheduler.bf_max_job_user = bf_max_job_user;
  spec.priority.weight_age = weight_age;
  spec.priority.weight_job_size = weight_job_size;
  spec.priority.favor_small = favor_small;
  spec.priority.max_age = max_age_min * kMinute;
  spec.priority.weight_fairshare = weight_fairshare;
  spec.priority.decay_half_life = decay_half_life_min * kMinute;
  return spec;
}

void ClusterOptions::calibrate(Trace& trace, ClusterSpec& spec) const {
  std::string said;
  Calibration c = resolve_calibration(calibration, trace.jobs, trace.source, spec, said);
  // Weights given on the command line are the user's word: they win over fitted ones.
  const bool flags_given = std::any_of(priority_flags.begin(), priority_flags.end(),
                                       [](const CLI::Option* o) { return o->count() > 0; });
  if (c.priority && flags_given) {
    c.priority.reset();
    said += " (priority weights from the flags, not the calibration)";
  }
  if (c.scheduler && std::any_of(scheduler_flags.begin(), scheduler_flags.end(),
                                 [](const CLI::Option* o) { return o->count() > 0; })) {
    c.scheduler.reset();
    said += " (scheduler settings from the flags, not the calibration)";
  }
  if (!said.empty()) fmt::print(stderr, "mirage: {}\n", said);
  apply_calibration(c, spec, trace.jobs);
}

void TraceOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--format", format, "Trace format: auto, swf, sacct, sacct-fixed")
      ->capture_default_str();
  cmd.add_flag("--lenient", lenient,
               "Skip malformed rows (and jobs larger than the machine) and count them");
}

TraceReadOptions TraceOptions::to_read_options() const {
  TraceReadOptions r;
  r.format = parse_trace_format(format);
  r.lenient = lenient;
  return r;
}

}  // namespace mirage::cli

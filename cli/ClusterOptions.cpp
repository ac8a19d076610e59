#include "ClusterOptions.h"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>

#include "RenamedFlags.h"
#include "TimeFlags.h"
#include "Validators.h"
#include "mirage/core/Error.h"
#include "mirage/simulator/Calibration.h"
#include "mirage/simulator/CalibrationCache.h"
#include "mirage/simulator/CalibrationFile.h"
#include "mirage/simulator/ForwardCalibration.h"
#include "mirage/simulator/SlurmConf.h"

namespace mirage::cli {

void ClusterOptions::add_to(CLI::App& cmd, bool command_has_segment) {
  cmd.add_option("--cluster-nodes", nodes, "Nodes in the machine (default: from the trace header)")
      ->check(whole_number(1, 65535));
  if (!command_has_segment)
    add_renamed_option(cmd, "--nodes", "--cluster-nodes", nodes)->check(whole_number(1, 65535));
  cmd.add_option("--gpus-per-node", gpus_per_node, "GPUs per node")->check(whole_number(0));
  cmd.add_option("--allocation", allocation, "whole-node (exclusive) or gpu (GPU-granular)")
      ->check(CLI::IsMember({"whole-node", "gpu"}))
      ->capture_default_str();
  cmd.add_option("--slurm-conf", slurm_conf,
                 "The site's slurm.conf: SchedulerParameters (bf_*, sched_interval) and the "
                 "Priority* weights by Slurm's own names (default: Slurm's scheduler settings, "
                 "age and job size weights 1000, or what the calibration file gives)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--priority-calc-period", priority_calc_period,
                 "Minutes between slurmctld's recomputations of the pending jobs' priorities "
                 "(slurm.conf's PriorityCalcPeriod; Slurm's default 5): the queue is ranked by "
                 "the figures of the period's start. 0: recomputed at every pass (the default "
                 "without --slurm-conf)")
      ->check(whole_number(0, 24 * 60));
  cmd.add_option("--calibration", calibration,
                 "What the log leaves out (user limits, capacity over time, dependencies): none "
                 "(the log's jobs alone on the whole machine), infer (from the log), auto (the "
                 "file beside the trace, TRACE.calibration.toml, else infer) or a calibration "
                 "file")
      ->capture_default_str();
  cmd.add_option("--fit-until", fit_until,
                 "Infer the calibration from the jobs submitted before this date only and carry "
                 "it past (YYYY-MM-DD[THH:MM:SS], UTC): the replay of the days after it forward, "
                 "as for a month the fit never saw");
  cmd.add_option("--null-tests", null_tests,
                 "Which inferred parts must stand out from what the log shows without them "
                 "before they are kept: all, none, or a comma list of room (hidden room), links "
                 "(dependencies), rank (priority weights), feedback, limits (user limits); one "
                 "left out is kept as the log shows it (docs/simulator.md)")
      ->check(CLI::Validator(
          [](const std::string& value) -> std::string {
            if (value == "all" || value == "none") return "";
            std::stringstream list(value);
            for (std::string part; std::getline(list, part, ',');)
              if (part != "room" && part != "links" && part != "rank" && part != "feedback" &&
                  part != "limits")
                return fmt::format(
                    "expected all, none or a list of room, links, rank, feedback, limits; got '{}'",
                    part);
            return "";
          },
          "all|none|room,links,rank,feedback,limits"))
      ->capture_default_str();
}

CalibrationSettings ClusterOptions::inference_settings() const {
  CalibrationSettings s;
  if (null_tests == "all") return s;
  const std::string list = "," + null_tests + ",";
  s.test_room = list.find(",room,") != std::string::npos;
  s.test_links = list.find(",links,") != std::string::npos;
  s.test_rank = list.find(",rank,") != std::string::npos;
  s.test_feedback = list.find(",feedback,") != std::string::npos;
  s.test_limits = list.find(",limits,") != std::string::npos;
  return s;
}

ClusterSpec ClusterOptions::to_spec(const Trace& trace) const {
  ClusterSpec spec;
  spec.nodes = nodes > 0 ? nodes : trace.machine_nodes;
  if (spec.nodes <= 0)
    throw InputError({trace.source, 0, "--cluster-nodes"},
                     "the trace does not say how many nodes the machine has; give --cluster-nodes");
  spec.gpus_per_node = gpus_per_node > 0 ? gpus_per_node : trace.machine_gpus_per_node;
  if (allocation == "gpu") {
    spec.allocation = AllocationMode::kGpuGranular;
    if (spec.gpus_per_node <= 0)
      throw InputError({"", 0, "--gpus-per-node"}, "GPU-granular allocation needs --gpus-per-node");
  }
  if (!slurm_conf.empty()) {
    SlurmConf conf = read_slurm_conf(slurm_conf, spec);
    for (const std::string& note : conf.notes)
      fmt::print(stderr, "mirage: {}: {}\n", slurm_conf, note);
    spec = std::move(conf.spec);
  }
  apply_priority_calc_period(spec);
  return spec;
}

void ClusterOptions::apply_priority_calc_period(ClusterSpec& spec) const {
  if (priority_calc_period >= 0)
    spec.scheduler.priority_calc_period = static_cast<Seconds>(priority_calc_period) * kMinute;
}

Calibration ClusterOptions::calibrate(Trace& trace, ClusterSpec& spec) const {
  std::string said;
  Calibration c;
  if (!fit_until.empty()) {
    if (calibration != "auto" && calibration != "infer")
      throw InputError({"", 0, "--fit-until"},
                       fmt::format("infers the calibration from the earlier jobs; it cannot be "
                                   "used with --calibration {}",
                                   calibration));
    const Seconds until = parse_time_flag(fit_until, "--fit-until");
    const CalibrationSettings settings = inference_settings();
    const CachedCalibration cached = cached_or_inferred(
        trace.source, calibration_cache_key(trace.jobs, spec, settings, until),
        [&] { return infer_calibration_before(trace.jobs, until, spec, settings); });
    c = cached.calibration;
    said = fmt::format(
        "{}, fitted on the jobs submitted before {} and carried past it: the last four weeks' "
        "room repeated, no down window foreseen",
        describe_cached(cached, trace.source), format_iso_time(until));
  } else {
    c = resolve_calibration(calibration, trace.jobs, trace.source, spec, said,
                            inference_settings());
  }
  // The site's slurm.conf is its word: it wins over weights and settings fitted to the log.
  if (!slurm_conf.empty() && (c.priority || c.scheduler)) {
    c.priority.reset();
    c.scheduler.reset();
    said += " (scheduler and priority settings from " + slurm_conf + ", not the calibration)";
  }
  if (!said.empty()) fmt::print(stderr, "mirage: {}\n", said);
  apply_calibration(c, spec, trace.jobs);
  apply_priority_calc_period(spec);  // the flag wins over a calibration file's [scheduler] too
  return c;
}

std::string ClusterOptions::describe_fit(const std::string& trace_source) const {
  if (!fit_until.empty())
    return fmt::format(
        "replay calibrated forward: fitted on the jobs submitted before {} (--fit-until), "
        "carried past it",
        format_iso_time(parse_time_flag(fit_until, "--fit-until")).substr(0, 10));
  if (calibration == "none")
    return "replay uncalibrated (--calibration none): the log's jobs alone on the whole machine";
  std::string file = calibration;
  if (calibration == "auto")
    file = std::filesystem::exists(calibration_path(trace_source)) ? calibration_path(trace_source)
                                                                   : std::string("infer");
  if (file == "infer")
    return "replay calibrated in sample: fitted on the whole log, the judged window included "
           "(--fit-until DATE fits it on the months before)";
  return fmt::format("replay calibrated from {}: fitted where that file was", file);
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

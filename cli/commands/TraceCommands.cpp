// `mirage trace info FILE`: what a job log contains and what the reader did to it.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "Commands.h"
#include "RenamedFlags.h"
#include "SampleTraces.h"
#include "Validators.h"
#include "mirage/core/Time.h"
#include "mirage/traces/Trace.h"
#include "mirage/traces/TraceStats.h"

namespace mirage::cli {
namespace {

struct InfoOptions {
  std::string file;
  std::string format = "auto";
  bool lenient = false;
  int nodes = 0;
  bool json = false;
};

// A mean or a span in the one format of human output ("2d4h"), to the nearest second.
std::string human_duration(double seconds) {
  return format_short_duration(static_cast<Seconds>(std::llround(seconds)));
}

std::string machine_source(const Trace& trace, const TraceStats& stats, int override_nodes) {
  if (override_nodes > 0) return "--cluster-nodes";
  if (trace.machine_nodes > 0)
    return trace.machine_source.empty() ? "trace header" : trace.machine_source;
  if (stats.jobs == 0) return "unknown";
  return "largest job: the trace does not state the machine size, give it with --cluster-nodes";
}

void run_info(const InfoOptions& o) {
  TraceReadOptions options;
  options.format = parse_trace_format(o.format);
  options.lenient = o.lenient;
  const auto t0 = std::chrono::steady_clock::now();
  const Trace trace = read_trace(o.file, options);
  const double read_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const TraceStats st = compute_trace_stats(trace, o.nodes);
  const TraceReadReport& r = trace.report;

  if (o.json) {
    nlohmann::json j;
    j["file"] = o.file;
    j["format"] = std::string(to_string(trace.format));
    j["rows"] = r.rows;
    j["jobs"] = st.jobs;
    j["first_submit"] = st.jobs ? format_iso_time(st.first_submit) : "";
    j["last_end"] = st.jobs ? format_iso_time(st.last_end) : "";
    j["span_s"] = st.span;
    j["machine_nodes"] = st.machine_nodes;
    j["machine_nodes_source"] = machine_source(trace, st, o.nodes);
    j["largest_job_nodes"] = st.largest_job_nodes;
    j["load"] = st.load;
    j["mean_wait_s"] = st.mean_wait_s;
    j["median_wait_s"] = st.median_wait_s;
    j["p90_wait_s"] = st.p90_wait_s;
    j["max_wait_s"] = st.max_wait_s;
    j["mean_runtime_s"] = st.mean_runtime_s;
    j["mean_time_limit_s"] = st.mean_time_limit_s;
    j["skipped"] = nlohmann::json::object();
    for (const auto& [reason, count] : r.skipped) j["skipped"][reason] = count;
    j["adjusted"] = nlohmann::json::object();
    for (const auto& [reason, count] : r.adjusted) j["adjusted"][reason] = count;
    j["examples"] = r.examples;
    j["read_s"] = std::round(read_s * 1000) / 1000;
    std::cout << j.dump(2) << "\n";
    return;
  }

  std::string out;
  auto line = [&](std::string_view key, const std::string& value) {
    out += value.empty() ? fmt::format("{}:\n", key)
                         : fmt::format("{:<10}{}\n", std::string(key) + ":", value);
  };
  line("trace", fmt::format("{} ({})", o.file, to_string(trace.format)));
  line("jobs", fmt::format("{} kept of {} data rows", st.jobs, r.rows));
  if (st.jobs > 0)
    line("span", fmt::format("{} ({} s), first submit {}, last end {}",
                             human_duration(static_cast<double>(st.span)), st.span,
                             format_iso_time(st.first_submit), format_iso_time(st.last_end)));
  if (st.machine_nodes > 0)
    line("machine", fmt::format("{} nodes (from {}); largest job {} nodes", st.machine_nodes,
                                machine_source(trace, st, o.nodes), st.largest_job_nodes));
  else
    line("machine", "unknown (give it with --cluster-nodes)");
  line("load",
       fmt::format("{:.3f} (node-seconds used / machine node-seconds over the span)", st.load));
  line("wait", fmt::format("mean {}, median {}, p90 {}, max {} (recorded start - submit)",
                           human_duration(st.mean_wait_s), human_duration(st.median_wait_s),
                           human_duration(st.p90_wait_s), human_duration(st.max_wait_s)));
  line("runtime", fmt::format("mean {}", human_duration(st.mean_runtime_s)));
  line("limit", fmt::format("mean {}", human_duration(st.mean_time_limit_s)));
  line("skipped", fmt::format("{} rows", r.skipped_total()));
  for (const auto& [reason, count] : r.skipped) out += fmt::format("  {:>9}  {}\n", count, reason);
  line("adjusted", r.adjusted.empty() ? "nothing" : "jobs kept, noted or repaired:");
  for (const auto& [reason, count] : r.adjusted) out += fmt::format("  {:>9}  {}\n", count, reason);
  if (!r.examples.empty()) {
    line("examples", "");
    for (const auto& e : r.examples) out += fmt::format("  {}\n", e);
  }
  line("read in", fmt::format("{:.3f} s", read_s));
  std::cout << out;
}

}  // namespace

void register_trace_commands(CLI::App& app) {
  CLI::App* trace = app.add_subcommand("trace", "Inspect job traces (SWF or sacct logs)");
  trace->require_subcommand(1);
  auto options = std::make_shared<InfoOptions>();
  CLI::App* info = trace->add_subcommand(
      "info", "Read a trace and print its size, span, load, waits and what the reader skipped");
  info->add_option("FILE", options->file,
                   "Trace file (SWF, sacct --parsable2 or sacct text; "
                   "gzip-compressed files are read directly)")
      ->required()
      ->transform(sample_trace())
      ->check(CLI::ExistingFile);
  info->add_option("--format", options->format, "Trace format (default: detect from content)")
      ->check(CLI::IsMember({"auto", "swf", "sacct", "sacct-fixed"}))
      ->capture_default_str();
  info->add_flag("--lenient", options->lenient,
                 "Skip and count malformed rows instead of stopping at the first");
  info->add_option("--cluster-nodes", options->nodes,
                   "Machine size in nodes for the load figure (default: from the trace header, "
                   "else the largest job)")
      ->check(whole_number(1));
  add_renamed_option(*info, "--nodes", "--cluster-nodes", options->nodes)->check(whole_number(1));
  info->add_flag("--json", options->json, "Print one JSON object instead of text");
  info->callback([options] { run_info(*options); });
  register_trace_fidelity_command(*trace);
  register_trace_calibrate_command(*trace);
  register_trace_export_command(*trace);
  register_trace_waits_command(*trace);
  register_trace_refit_waits_command(*trace);
}

}  // namespace mirage::cli

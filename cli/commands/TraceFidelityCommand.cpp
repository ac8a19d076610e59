// `mirage trace fidelity FILE`: replay a log and hold every job's simulated wait against the wait
// it really had, overall, by size class and by month, with the targets the simulator is held to.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "Commands.h"
#include "RenamedFlags.h"
#include "SampleTraces.h"
#include "TimeFlags.h"
#include "TraceReplay.h"
#include "mirage/agents/ReactiveWhatIf.h"
#include "mirage/core/Error.h"
#include "mirage/core/Time.h"
#include "mirage/simulator/Fidelity.h"
#include "mirage/simulator/Simulator.h"

namespace mirage::cli {
namespace {

struct FidelityOptions {
  std::string file;
  TraceOptions trace_options;
  ClusterOptions cluster;
  std::string from, to;
  std::string svg;
  bool json = false;
  std::string what_if_nodes = "auto";
  std::string what_if_time = "auto";
  std::string what_if_every;  // empty: 4 h, or coarser so that a long log gets at most 200
};

// The node counts of --what-if-nodes that the machine can run; "none" gives none, "auto" the
// log's most common size of each class.
std::vector<int> what_if_sizes(const std::string& text, int machine_nodes,
                               const std::vector<Job>& jobs, Seconds from, Seconds to) {
  std::vector<int> sizes;
  if (text == "none" || text.empty()) return sizes;
  if (text == "auto") {
    for (int n : typical_chain_sizes(jobs, from, to))
      if (n <= machine_nodes) sizes.push_back(n);
    return sizes;
  }
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    int n = 0;
    try {
      std::size_t used = 0;
      n = std::stoi(item, &used);
      if (used != item.size()) n = 0;
    } catch (const std::exception&) {
      n = 0;
    }
    if (n <= 0)
      throw InputError({"", 0, "--what-if-nodes"},
                       fmt::format("expected node counts like 1,8 or none, got '{}'", item));
    if (n <= machine_nodes) sizes.push_back(n);
  }
  return sizes;
}

nlohmann::json to_json(const ReactiveWhatIf& w) {
  return {{"nodes", w.nodes},
          {"time_limit_s", w.time_limit},
          {"successors", w.successors},
          {"truncated", w.truncated},
          {"compared", w.compared},
          {"sim_mean_wait_s", w.sim_mean_wait_s},
          {"sim_median_wait_s", w.sim_median_wait_s},
          {"sim_over_1h", w.sim_over_1h},
          {"real_jobs", w.real_jobs},
          {"real_mean_wait_s", w.real_mean_wait_s},
          {"real_median_wait_s", w.real_median_wait_s},
          {"real_over_1h", w.real_over_1h},
          {"ratio", w.ratio},
          {"on_target", w.on_target()},
          {"lone_jobs", w.lone_jobs},
          {"lone_mean_wait_s", w.lone_mean_wait_s},
          {"lone_median_wait_s", w.lone_median_wait_s},
          {"lone_ratio", w.lone_ratio},
          {"lone_on_target", w.lone_on_target()},
          {"log_successors", w.log_successors},
          {"log_compared", w.log_compared},
          {"log_truncated", w.log_truncated},
          {"log_dropped", w.log_dropped},
          {"log_sim_mean_wait_s", w.log_sim_mean_wait_s},
          {"log_sim_median_wait_s", w.log_sim_median_wait_s},
          {"log_sim_over_1h", w.log_sim_over_1h},
          {"log_real_jobs", w.log_real_jobs},
          {"log_real_mean_wait_s", w.log_real_mean_wait_s},
          {"log_ratio", w.log_ratio},
          {"log_on_target", w.log_on_target()}};
}

nlohmann::json to_json(const WaitFidelity& f) {
  return {{"group", f.group},
          {"jobs", f.jobs},
          {"real_mean_s", f.real_mean_s},
          {"sim_mean_s", f.sim_mean_s},
          {"real_median_s", f.real_median_s},
          {"sim_median_s", f.sim_median_s},
          {"real_p90_s", f.real_p90_s},
          {"sim_p90_s", f.sim_p90_s},
          {"real_over_1h", f.real_over_1h},
          {"sim_over_1h", f.sim_over_1h},
          {"rank_correlation", f.rank_correlation},
          {"mean_ratio", f.mean_ratio},
          {"on_target",
           {{"ratio", f.ratio_on_target()},
            {"share_over_1h", f.share_on_target()},
            {"rank_correlation", f.correlation_on_target()}}}};
}

std::string hours(double s) {
  return fmt::format("{:.2f}", s / 3600.0);
}

void print_row(const WaitFidelity& f) {
  fmt::print(
      "{:<11} {:>7}  {:>6} {:>6}  {:>6} {:>6}  {:>6} {:>6}  {:>4.0f}% {:>4.0f}%  {:>5.2f}  "
      "{:>5.2f}  {}\n",
      f.group, f.jobs, hours(f.real_mean_s), hours(f.sim_mean_s), hours(f.real_median_s),
      hours(f.sim_median_s), hours(f.real_p90_s), hours(f.sim_p90_s), 100 * f.real_over_1h,
      100 * f.sim_over_1h, f.rank_correlation, f.mean_ratio,
      fmt::format("{}{}{}", f.ratio_on_target() ? "" : " ratio", f.share_on_target() ? "" : " >1h",
                  f.correlation_on_target() ? "" : " rank")
          .substr(0, 100));
}

// Real against simulated wait, one point a job (at most 20,000, evenly thinned), log axes with a
// minute added so zero waits show; the diagonal is a perfect replay.
void write_svg(const std::string& path, const std::vector<WaitPair>& pairs,
               const std::string& title) {
  const std::size_t stride = std::max<std::size_t>(1, pairs.size() / 20000);
  std::ostringstream gp;
  for (const char* cls : {"1 node", "2-7 nodes", "8+ nodes"}) {
    gp << "$c" << (cls[0] == '1' ? 1 : cls[0] == '2' ? 2 : 8) << " << EOD\n";
    std::size_t n = 0;
    for (std::size_t i = 0; i < pairs.size(); i += stride)
      if (size_class(pairs[i].nodes) == cls) {
        gp << (static_cast<double>(pairs[i].real_wait) + 60) / 3600 << ' '
           << (static_cast<double>(pairs[i].sim_wait) + 60) / 3600 << '\n';
        ++n;
      }
    if (n == 0) gp << "NaN NaN\n";
    gp << "EOD\n";
  }
  gp << "set terminal svg size 800,760 dynamic font 'sans,11'\n"
     << "set output '" << path << "'\n"
     << "set title '" << title << "' noenhanced\n"
     << "set logscale xy\nset xrange [0.01:1000]\nset yrange [0.01:1000]\nset size ratio 1\n"
     << "set xlabel 'real wait + 1 min (h)'\nset ylabel 'simulated wait + 1 min (h)'\n"
     << "set grid\nset key top left\n"
     << "plot $c1 using 1:2 with points pt 7 ps 0.25 title '1 node', "
     << "$c2 using 1:2 with points pt 7 ps 0.25 title '2-7 nodes', "
     << "$c8 using 1:2 with points pt 7 ps 0.35 title '8+ nodes', "
     << "x with lines lc rgb 'black' title 'simulated = real'\n";
  const std::string script = path + ".gp";
  std::ofstream(script) << gp.str();
  const std::string cmd = "gnuplot '" + script + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0)
    fmt::print(stderr, "mirage trace fidelity: gnuplot not available; the plot script is {}\n",
               script);
  else
    std::remove(script.c_str());
}

// With --fit-until, the same window replayed with the calibration fitted on the whole log, the
// judged month included: how much of the forward figures' miss is the month the fit never saw.
std::optional<FidelityReport> in_sample_report(const FidelityOptions& o, Trace trace, Seconds from,
                                               Seconds to) {
  ClusterOptions whole = o.cluster;
  whole.fit_until.clear();
  const TraceReplay replay = prepare_replay(std::move(trace), o.trace_options, whole);
  double wall = 0;
  const auto waits = replayed_waits(replay, wall);
  std::size_t without_start = 0;
  const auto pairs = pair_waits(replay.trace.jobs, *waits, from, to, without_start);
  if (pairs.empty()) return std::nullopt;
  return measure_fidelity(pairs);
}

void run_fidelity(const FidelityOptions& o) {
  Trace trace = read_trace_or_sample(o.file, o.trace_options);
  // Kept as read for the in-sample replay beside a forward one (calibrating writes into the jobs).
  std::optional<Trace> as_read;
  if (!o.cluster.fit_until.empty()) as_read = trace;
  const TraceReplay replay = prepare_replay(std::move(trace), o.trace_options, o.cluster);
  // A forward replay is judged on the month after the fit unless told otherwise.
  const Seconds until =
      o.cluster.fit_until.empty() ? 0 : parse_time_flag(o.cluster.fit_until, "--fit-until");
  const Seconds from = !o.from.empty() ? parse_time_flag(o.from, "--from") : until;
  const Seconds to = !o.to.empty() ? parse_time_flag(o.to, "--to")
                     : until > 0   ? until + 30 * kDay
                                   : 0;
  if (from > 0 && to > 0 && to <= from) throw InputError({"", 0, "--to"}, "must be after --from");
  if (until > 0 && from < until)
    throw InputError({"", 0, "--from"},
                     fmt::format("a forward replay is judged after --fit-until ({}); got {}",
                                 format_iso_time(until), format_iso_time(from)));

  double wall = 0;
  const auto waits = replayed_waits(replay, wall);
  const std::optional<FidelityReport> in_sample =
      as_read ? in_sample_report(o, std::move(*as_read), from, to) : std::nullopt;

  std::size_t without_start = 0;
  const auto pairs = pair_waits(replay.trace.jobs, *waits, from, to, without_start);
  if (pairs.empty())
    throw InputError(
        {replay.trace.source, 0, ""},
        without_start > 0
            ? fmt::format("fidelity cannot be measured: the log gives no real start time for its "
                          "{} jobs{} (a replay still works: mirage simulate)",
                          without_start, from || to ? " in that window" : "")
            : std::string("no jobs submitted in that window"));
  const FidelityReport r = measure_fidelity(pairs);

  // The what-if: reactive successors sampled over the compared window (the whole log without one).
  ReactiveWhatIfConfig w;
  const Seconds fixed_limit =
      o.what_if_time == "auto" ? 0 : parse_duration_flag(o.what_if_time, "--what-if-time");
  w.from = from > 0 ? from : replay.trace.jobs.front().submit;
  w.to = to > 0 ? to : replay.trace.jobs.back().submit;
  w.every = o.what_if_every.empty()
                ? std::max<Seconds>(4 * kHour, (w.to - w.from) / 200 / kHour * kHour)
                : parse_duration_flag(o.what_if_every, "--what-if-every");
  // Each size on its own thread: a size's base replays run one after another, so the sizes side
  // by side fill the cores (reported in the order asked).
  std::vector<std::future<ReactiveWhatIf>> sized;
  for (int n : what_if_sizes(o.what_if_nodes, replay.spec.nodes, replay.trace.jobs, from, to)) {
    w.nodes = n;
    w.time_limit = fixed_limit > 0 ? fixed_limit : long_time_limit(replay.trace.jobs, n, from, to);
    if (w.time_limit <= 0) continue;
    // A GPU-granular machine is asked for whole nodes, as the real multi-node jobs were.
    w.gpus_per_node =
        replay.spec.allocation == AllocationMode::kGpuGranular ? replay.spec.gpus_per_node : 0;
    sized.push_back(std::async(std::launch::async, [&replay, w] {
      return check_reactive_what_if(replay.trace, replay.spec, w);
    }));
  }
  std::vector<ReactiveWhatIf> what_ifs;
  for (auto& s : sized) what_ifs.push_back(s.get());
  const std::string machine = fmt::format("{}, backfill {}", replay.spec.describe(),
                                          to_string(replay.spec.scheduler.backfill));
  if (!o.svg.empty()) write_svg(o.svg, pairs, replay.trace.source + " (" + machine + ")");

  if (o.json) {
    nlohmann::json j{{"trace", replay.trace.source},
                     {"machine", machine},
                     {"compared", pairs.size()},
                     {"without_real_start", without_start},
                     {"dropped_oversized", replay.oversized},
                     {"replay_wall_s", wall},  // 0 where the calibration's replay was taken
                     {"replay_from_calibration", replay.calibrated_waits != nullptr},
                     {"overall", to_json(r.overall)},
                     {"by_size", nlohmann::json::array()},
                     {"by_month", nlohmann::json::array()},
                     {"by_user_queue", nlohmann::json::array()},
                     {"twins",
                      {{"pairs", r.twins.pairs},
                       {"unnamed_user_pairs", r.twins.unnamed_pairs},
                       {"real_with_twin", r.twins.real_with_twin},
                       {"sim_with_real", r.twins.sim_with_real}}}};
    for (const auto& f : r.by_size) j["by_size"].push_back(to_json(f));
    for (const auto& f : r.by_month) j["by_month"].push_back(to_json(f));
    for (const auto& f : r.by_user_queue) j["by_user_queue"].push_back(to_json(f));
    if (until > 0) j["fit_until"] = format_iso_time(until);
    if (in_sample) {
      j["in_sample"] = {{"overall", to_json(in_sample->overall)},
                        {"by_size", nlohmann::json::array()}};
      for (const auto& f : in_sample->by_size) j["in_sample"]["by_size"].push_back(to_json(f));
    }
    j["reactive_what_if"] = nlohmann::json::array();
    for (const auto& x : what_ifs) j["reactive_what_if"].push_back(to_json(x));
    std::cout << j.dump(2) << "\n";
    return;
  }
  fmt::print("trace     {}\nmachine   {}\n", replay.trace.source, machine);
  if (until > 0)
    fmt::print("forward   calibration fitted on the jobs submitted before {}, judged on {} to {}\n",
               format_iso_time(until), format_iso_time(from), format_iso_time(to));
  fmt::print(
      "compared  {} jobs{}{} ({})\n", pairs.size(),
      without_start ? fmt::format(", {} without a real start left out", without_start) : "",
      replay.oversized ? fmt::format(", {} larger than the machine dropped", replay.oversized) : "",
      replay.calibrated_waits ? std::string("the replay the calibration chose")
                              : fmt::format("replay {:.2f} s", wall));
  fmt::print(
      "targets   mean ratio sim/real 0.75..1.33, share over 1 h within 7 points, rank "
      "correlation >= 0.5; a group's misses are named last\n\n");
  fmt::print("{:<11} {:>7}  {:>13}  {:>13}  {:>13}  {:>11}  {:>5}  {:>5}\n", "", "", "mean h",
             "median h", "p90 h", "> 1 h", "rank", "ratio");
  fmt::print("{:<11} {:>7}  {:>6} {:>6}  {:>6} {:>6}  {:>6} {:>6}  {:>5} {:>5}  {:>5}  {:>5}  {}\n",
             "group", "jobs", "real", "sim", "real", "sim", "real", "sim", "real", "sim", "corr",
             "", "misses");
  print_row(r.overall);
  for (const auto& f : r.by_size) print_row(f);
  for (const auto& f : r.by_user_queue) print_row(f);
  for (const auto& f : r.by_month) print_row(f);
  if (in_sample) {
    fmt::print(
        "\nin sample: the same jobs, the calibration fitted on the whole log (this window "
        "included)\n");
    print_row(in_sample->overall);
    for (const auto& f : in_sample->by_size) print_row(f);
  }
  if (!r.by_user_queue.empty())
    fmt::print(
        "\nlone        its user had nothing pending when it was submitted (as a chain's "
        "successor)\n"
        "behind own  it queued behind its own user's pending jobs\n");
  if (r.twins.pairs > 0)
    fmt::print(
        "\ntwins     {} pairs of jobs alike in all a replay sees (nodes, limit within 25%, "
        "submitted\n          within 10 min, other users): a real wait's rank correlation with "
        "its twin's {:.2f},\n          the replay's with the real waits on the same jobs {:.2f}\n",
        r.twins.pairs, r.twins.real_with_twin, r.twins.sim_with_real);
  if (r.twins.unnamed_pairs > 0)
    fmt::print(
        "          {} of the pairs are of jobs whose user the log does not name: they may be one "
        "user's\n          jobs, which wait more alike, so the agreement is an upper bound\n",
        r.twins.unnamed_pairs);
  if (!what_ifs.empty()) {
    fmt::print(
        "\nreactive what-if: a chain's successor (a sample every {}) against the real jobs of its "
        "size submitted within {} of it (each successor weighing the same), and against those of "
        "them that were lone (their user had nothing pending); target ratio 0.67..1.5\n",
        format_short_duration(w.every), format_short_duration(w.near));
    fmt::print("{:<6} {:>11} {:>10}  {:>13}  {:>13}  {:>11}  {:>9}  {:>5}  {:>15}  {:>5}\n",
               "nodes", "limit", "successors", "mean wait h", "median h", "> 1 h", "real jobs",
               "ratio", "lone jobs  h", "ratio");
    fmt::print("{:<6} {:>11} {:>10}  {:>6} {:>6}  {:>6} {:>6}  {:>5} {:>5}\n", "", "", "", "sim",
               "real", "sim", "real", "sim", "real");
    for (const auto& x : what_ifs) {
      std::string note;
      if (x.successors == 0) {
        note = "  (no sample: the log is shorter than two segments)";
      } else if (x.real_jobs == 0) {
        note = "  (no real jobs of this size)";
      } else {
        if (!x.on_target()) note += " ratio";
        if (x.lone_jobs > 0 && !x.lone_on_target()) note += " lone";
        if (x.compared < x.successors)
          note += fmt::format("  ({} without real jobs near: left out)", x.successors - x.compared);
        if (!note.empty()) note = " " + note;
      }
      const std::string lone = x.lone_jobs > 0
                                   ? fmt::format("{:>8} {:>6}  {:>5.2f}", x.lone_jobs,
                                                 hours(x.lone_mean_wait_s), x.lone_ratio)
                                   : fmt::format("{:>8} {:>6}  {:>5}", "-", "-", "-");
      fmt::print(
          "{:<6} {:>11} {:>10}  {:>6} {:>6}  {:>6} {:>6}  {:>4.0f}% {:>4.0f}%  {:>9}  {:>5.2f}  "
          "{}{}\n",
          x.nodes, format_short_duration(x.time_limit), x.successors, hours(x.sim_mean_wait_s),
          hours(x.real_mean_wait_s), hours(x.sim_median_wait_s), hours(x.real_median_wait_s),
          100 * x.sim_over_1h, 100 * x.real_over_1h, x.real_jobs, x.ratio, lone, note);
    }
    fmt::print(
        "\nthe log's own jobs chained: each real job of that size and limit (at most {} of them) "
        "followed by a reactive successor of its user, held against the real jobs near it (a "
        "chain's predecessor is load the log never had; these predecessors' load was in it)\n",
        w.log_predecessors);
    fmt::print("{:<6} {:>11} {:>10}  {:>13}  {:>8}  {:>6}  {:>9}  {:>5}\n", "nodes", "limit",
               "successors", "mean wait h", "median h", "> 1 h", "real jobs", "ratio");
    fmt::print("{:<6} {:>11} {:>10}  {:>6} {:>6}  {:>8}  {:>6}\n", "", "", "", "sim", "real", "sim",
               "sim");
    for (const auto& x : what_ifs) {
      if (x.log_successors == 0 || x.log_real_jobs == 0) {
        fmt::print("{:<6} {:>11} {:>10}  (no real job of this size to chain or compare)\n", x.nodes,
                   format_short_duration(x.time_limit), x.log_successors);
        continue;
      }
      std::string note = x.log_on_target() ? "" : "  ratio";
      if (x.log_dropped > 0)
        note += fmt::format("  ({} left out: too near the log's end)", x.log_dropped);
      if (x.log_compared < x.log_successors)
        note += fmt::format("  ({} without real jobs near: left out)",
                            x.log_successors - x.log_compared);
      fmt::print("{:<6} {:>11} {:>10}  {:>6} {:>6}  {:>8}  {:>5.0f}%  {:>9}  {:>5.2f}{}\n", x.nodes,
                 format_short_duration(x.time_limit), x.log_successors,
                 hours(x.log_sim_mean_wait_s), hours(x.log_real_mean_wait_s),
                 hours(x.log_sim_median_wait_s), 100 * x.log_sim_over_1h, x.log_real_jobs,
                 x.log_ratio, note);
    }
  }
  if (!o.svg.empty()) fmt::print("\nplot      {}\n", o.svg);
}

}  // namespace

void register_trace_fidelity_command(CLI::App& trace) {
  auto o = std::make_shared<FidelityOptions>();
  CLI::App* cmd = trace.add_subcommand(
      "fidelity", "Replay a log and compare each job's simulated wait with the wait it really had");
  cmd->add_option("FILE", o->file,
                  "Trace file with real start times (SWF, sacct; .gz read directly)")
      ->required()
      ->transform(sample_trace())
      ->check(CLI::ExistingFile);
  o->trace_options.add_to(*cmd);
  o->cluster.add_to(*cmd);
  cmd->add_option("--from", o->from,
                  "Compare only jobs submitted from this date (YYYY-MM-DD[THH:MM:SS], UTC); the "
                  "replay still starts with the log");
  cmd->add_option("--to", o->to, "Compare only jobs submitted before this date");
  cmd->add_option("--svg", o->svg, "Plot real against simulated waits to this SVG file");
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->add_option("--what-if-nodes", o->what_if_nodes,
                  "Check reactive chain successors of these node counts against the real jobs of "
                  "their size ('auto': the log's most common size of each class; 'none': skip)")
      ->capture_default_str();
  cmd->add_option("--what-if-time", o->what_if_time,
                  "The what-if chain's segment time limit, as sbatch --time or 2d ('auto': the "
                  "90th percentile of the limits the log's jobs of that size asked for)")
      ->capture_default_str();
  add_renamed_option(*cmd, "--what-if-limit", "--what-if-time", o->what_if_time);
  cmd->add_option("--what-if-every", o->what_if_every,
                  "Spacing of the what-if's samples (default 4 h, coarser on long logs)");
  cmd->callback([o] { run_fidelity(*o); });
}

}  // namespace mirage::cli

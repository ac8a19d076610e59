// validate_slurm: how faithful is mirage's simulator to the real Slurm controller?
//
//   validate_slurm cut     --trace T --out workload.csv     cut + compress a window of a trace
//   validate_slurm collect --workload W --jobcomp F --t0 T --out real.csv
//   validate_slurm compare --workload W --real real.csv --slurm-conf slurm.conf [--json]
//
// run_validation.sh chains them around a real replay (replay.sh) on the cluster of
// tests/slurm/cluster.sh. `compare` replays the same jobs in mirage::Simulator with the scheduler
// configuration read from the same slurm.conf, once per backfill mode, and reports per-job
// start-time errors and start-order agreement.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "Validation.h"
#include "mirage/core/Error.h"
#include "mirage/simulator/Simulator.h"
#include "mirage/simulator/SlurmConf.h"
#include "mirage/traces/Trace.h"

namespace mv = mirage::validation;
using mirage::Seconds;

namespace {

constexpr const char* kDefaultFrom = "2023-02-17T00:00:00";

// "# key=value" comment lines of a workload CSV (cut writes compress=..., source=...).
std::map<std::string, std::string> read_comment_meta(const std::string& path) {
  std::map<std::string, std::string> meta;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# ", 0) != 0) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos || line.find(' ', 2) < eq) continue;
    meta[line.substr(2, eq - 2)] = line.substr(eq + 1);
  }
  return meta;
}

// ---- cut ----------------------------------------------------------------------------------

struct CutArgs {
  std::string trace;
  std::string out;
  std::string from = kDefaultFrom;
  mv::CutOptions options;
};

int do_cut(const CutArgs& a) {
  mv::CutOptions options = a.options;
  auto from = mirage::parse_iso_time(a.from);
  if (!from)
    throw mirage::InputError({"", 0, "--from"},
                             "expected YYYY-MM-DDTHH:MM:SS, got '" + a.from + "'");
  options.from = *from;
  mirage::Trace trace = mirage::read_trace(a.trace);
  mv::CutReport report;
  auto jobs = mv::cut_workload(trace.jobs, options, &report);

  Seconds total_work = 0;
  for (const auto& j : jobs) total_work += j.runtime * j.nodes;
  std::vector<std::string> comments = {
      "workload for tests/validation (validate_slurm cut); times in compressed seconds",
      fmt::format("source={}", a.trace),
      fmt::format("window={}..{}", mirage::format_iso_time(report.first_submit),
                  mirage::format_iso_time(report.last_submit)),
      fmt::format("compress={}", options.compress),
      fmt::format("max_nodes={}", options.max_nodes),
      fmt::format("runtime_floor={} runtime_cap={} limit_margin={}", options.min_runtime,
                  options.max_runtime, options.limit_margin),
  };
  mv::write_workload_csv(a.out, jobs, comments);

  std::map<int, int> by_nodes;
  for (const auto& j : jobs) ++by_nodes[j.nodes];
  std::string nodes_mix;
  for (auto [n, c] : by_nodes) nodes_mix += fmt::format(" {}n:{}", n, c);
  std::string skipped;
  for (const auto& [why, n] : report.skipped) skipped += fmt::format(" {} ({})", n, why);
  std::cerr << fmt::format(
      "cut: {} jobs submitted {} .. {} ({:.1f} h of the trace) -> {} s at {}x; mix{}; "
      "runtimes floored {} capped {}; nodes clipped {}; node-seconds {}; skipped{}\n",
      jobs.size(), mirage::format_iso_time(report.first_submit),
      mirage::format_iso_time(report.last_submit),
      static_cast<double>(report.last_submit - report.first_submit) / 3600.0,
      jobs.back().submit_offset, options.compress, nodes_mix, report.runtime_floored,
      report.runtime_capped, report.nodes_clipped, total_work, skipped.empty() ? " none" : skipped);
  return 0;
}

// ---- collect ------------------------------------------------------------------------------

int do_collect(const std::string& workload_path, const std::string& jobcomp, Seconds t0,
               const std::string& out) {
  auto workload = mv::read_workload_csv(workload_path);
  auto real = mv::read_jobcomp(jobcomp, t0, workload);
  mv::write_real_csv(out, real);
  std::size_t not_completed = 0;
  for (const auto& r : real) {
    if (r.state == "COMPLETED") continue;
    if (++not_completed <= 5)
      std::cerr << fmt::format("collect: job v{} (Slurm job {}) ended {}\n", r.id, r.slurm_id,
                               r.state);
  }
  std::cerr << fmt::format("collect: {} jobs, {} not COMPLETED\n", real.size(), not_completed);
  return not_completed == 0 ? 0 : 4;
}

// ---- compare ------------------------------------------------------------------------------

struct CompareArgs {
  std::string workload;
  std::string real;
  std::string slurm_conf;
  int nodes = 4;
  int gpus_per_node = 4;
  std::string submit = "real";
  std::string runtime = "planned";
  int overhead_ms = 0;      // added to every simulated runtime: Slurm's node turnaround
  int unit_ms = 1000;       // the simulator's time unit: 1000 runs it in seconds, 100 in tenths
  int fit_overhead_ms = 0;  // > 0: per mode, the overhead_ms in [0, this] that fits best
  std::vector<std::string> modes = {"slurm", "easy", "none"};
  double compress = 0;  // 0: from the workload file
  bool json = false;
  std::string details;
  std::optional<double> min_order;
  std::optional<double> max_median;
  bool require_backfill_gain = false;
};

struct ModeResult {
  std::string mode;
  mv::Agreement agreement;
  std::vector<mv::SimOutcome> sim;
  mirage::Simulator::Counters counters;
  int overhead_ms = 0;
};

ModeResult simulate(const mirage::ClusterSpec& spec, mirage::BackfillMode mode,
                    const std::vector<mv::WorkloadJob>& workload,
                    const std::vector<mv::RealJob>& real, const CompareArgs& a) {
  // The simulator wants jobs in submit order; ties keep Slurm's job id order, which is the order
  // jobs were submitted in (and Slurm's tie-break between equal priorities).
  std::vector<std::size_t> order(workload.size());
  std::iota(order.begin(), order.end(), 0);
  auto submit_of = [&](std::size_t i) {
    return a.submit == "real" ? real[i].submit : workload[i].submit_offset;
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    if (submit_of(x) != submit_of(y)) return submit_of(x) < submit_of(y);
    return real[x].slurm_id < real[y].slurm_id;
  });
  // The simulator counts in whole units; with --unit-ms below 1000 every duration and instant is
  // scaled up, so that a sub-second overhead can be modelled, and results are truncated back to
  // whole seconds as slurmctld records them.
  const Seconds f = 1000 / a.unit_ms;
  auto jobs = std::make_shared<std::vector<mirage::SimJobSpec>>();
  for (std::size_t i : order) {
    mirage::SimJobSpec s;
    s.submit = submit_of(i) * f;
    s.nodes = workload[i].nodes;
    s.gpus_per_node = spec.gpus_per_node;
    s.time_limit = workload[i].limit * f;
    s.runtime = (a.runtime == "real" ? std::max<Seconds>(1, real[i].end - real[i].start)
                                     : workload[i].runtime) *
                    f +
                a.overhead_ms / a.unit_ms;
    jobs->push_back(s);
  }
  mirage::ClusterSpec c = spec;
  c.scheduler.backfill = mode;
  c.scheduler.sched_interval *= f;
  c.scheduler.bf_interval *= f;
  c.scheduler.bf_window *= f;
  c.scheduler.bf_resolution *= f;
  c.priority.max_age *= f;
  mirage::Simulator sim(c, std::const_pointer_cast<const std::vector<mirage::SimJobSpec>>(jobs));
  sim.run_to_completion();

  ModeResult r;
  r.mode = std::string(mirage::to_string(mode));
  r.sim.resize(workload.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    const auto idx = static_cast<mirage::SimJobIndex>(k);
    r.sim[order[k]] = {(*jobs)[k].submit / f, sim.start_time(idx) / f, sim.end_time(idx) / f};
  }
  r.agreement = mv::compare_starts(real, r.sim);
  r.counters = sim.counters();
  r.overhead_ms = a.overhead_ms;
  return r;
}

nlohmann::json to_json(const mv::Agreement& g, double compress) {
  return {{"jobs", g.jobs},
          {"mean_abs_error_s", g.mean_abs_error},
          {"median_abs_error_s", g.median_abs_error},
          {"p90_abs_error_s", g.p90_abs_error},
          {"max_abs_error_s", g.max_abs_error},
          {"mean_error_s", g.mean_error},
          {"trace_time",
           {{"mean_abs_error_h", g.mean_abs_error * compress / 3600},
            {"median_abs_error_h", g.median_abs_error * compress / 3600},
            {"p90_abs_error_h", g.p90_abs_error * compress / 3600}}},
          {"order_pairs", g.pairs},
          {"order_agreement", g.order_agreement},
          {"mean_wait_real_s", g.mean_wait_real},
          {"mean_wait_sim_s", g.mean_wait_sim},
          {"makespan_real_s", g.makespan_real},
          {"makespan_sim_s", g.makespan_sim}};
}

int do_compare(const CompareArgs& args) {
  CompareArgs a = args;
  auto workload = mv::read_workload_csv(a.workload);
  auto real = mv::read_real_csv(a.real);
  if (real.size() != workload.size())
    throw mirage::InputError({a.real, 0, ""}, fmt::format("{} jobs, but the workload has {}",
                                                          real.size(), workload.size()));
  double compress = a.compress;
  if (compress <= 0) {
    auto meta = read_comment_meta(a.workload);
    compress = meta.count("compress") ? std::stod(meta["compress"]) : 1.0;
  }
  mirage::ClusterSpec base;
  base.nodes = a.nodes;
  base.gpus_per_node = a.gpus_per_node;
  base.allocation = mirage::AllocationMode::kWholeNode;
  mirage::SlurmConf conf = mirage::read_slurm_conf(a.slurm_conf, base);
  const auto& sp = conf.spec.scheduler;
  const auto& pr = conf.spec.priority;

  std::vector<mirage::BackfillMode> modes;
  for (const auto& m : a.modes) {
    auto mode = mirage::parse_backfill_mode(m);
    if (!mode) throw mirage::InputError({"", 0, "--modes"}, "unknown backfill mode '" + m + "'");
    modes.push_back(*mode);
  }
  if (modes.empty()) throw mirage::InputError({"", 0, "--modes"}, "no backfill mode given");
  // One free parameter, the node turnaround, fitted for each mode on its own (so the baselines
  // get the same chance) in steps of the unit.
  std::vector<ModeResult> results;
  for (auto mode : modes) {
    if (a.fit_overhead_ms <= 0) {
      results.push_back(simulate(conf.spec, mode, workload, real, a));
      continue;
    }
    std::optional<ModeResult> best;
    for (int o = 0; o <= a.fit_overhead_ms; o += a.unit_ms) {
      CompareArgs trial = a;
      trial.overhead_ms = o;
      ModeResult r = simulate(conf.spec, mode, workload, real, trial);
      if (!best || r.agreement.mean_abs_error < best->agreement.mean_abs_error) best = std::move(r);
    }
    results.push_back(std::move(*best));
  }

  // Driver lag: how late the real submissions were against the plan.
  double lag_sum = 0;
  Seconds lag_max = 0;
  for (std::size_t i = 0; i < real.size(); ++i) {
    const Seconds lag = real[i].submit - workload[i].submit_offset;
    lag_sum += static_cast<double>(lag);
    lag_max = std::max(lag_max, lag);
  }
  const double lag_mean = real.empty() ? 0 : lag_sum / static_cast<double>(real.size());

  if (!a.details.empty()) {
    std::ofstream out(a.details);
    if (!out) throw mirage::InputError({a.details, 0, ""}, "cannot create file");
    out << "id,nodes,limit_s,runtime_s,submit_real,start_real,end_real";
    for (const auto& r : results) out << ",submit_" << r.mode << ",start_" << r.mode;
    out << "\n";
    for (std::size_t i = 0; i < real.size(); ++i) {
      out << workload[i].id << ',' << workload[i].nodes << ',' << workload[i].limit << ','
          << workload[i].runtime << ',' << real[i].submit << ',' << real[i].start << ','
          << real[i].end;
      for (const auto& r : results) out << ',' << r.sim[i].submit << ',' << r.sim[i].start;
      out << "\n";
    }
  }

  // Bounds apply to the first mode (slurm by default): the configuration slurm.conf describes.
  std::vector<std::string> failures;
  if (!results.empty()) {
    const auto& g = results.front().agreement;
    if (a.min_order && g.order_agreement < *a.min_order)
      failures.push_back(
          fmt::format("order agreement {:.3f} < {:.3f}", g.order_agreement, *a.min_order));
    if (a.max_median && g.median_abs_error > *a.max_median)
      failures.push_back(fmt::format("median |start error| {:.1f} s > {:.1f} s", g.median_abs_error,
                                     *a.max_median));
    if (a.require_backfill_gain) {
      auto none = std::find_if(results.begin(), results.end(),
                               [](const ModeResult& r) { return r.mode == "none"; });
      if (none != results.end() && none != results.begin() &&
          none->agreement.mean_abs_error <= g.mean_abs_error)
        failures.push_back(fmt::format(
            "backfill=none is as close to Slurm as backfill={} (mean |error| {:.1f} s <= {:.1f} s)",
            results.front().mode, none->agreement.mean_abs_error, g.mean_abs_error));
    }
  }

  if (a.json) {
    nlohmann::json j;
    j["jobs"] = workload.size();
    j["compress"] = compress;
    j["submit"] = a.submit;
    j["runtime"] = a.runtime;
    j["unit_ms"] = a.unit_ms;
    j["overhead_fitted"] = a.fit_overhead_ms > 0;
    j["config"] = {{"nodes", conf.spec.nodes},
                   {"gpus_per_node", conf.spec.gpus_per_node},
                   {"sched_interval", sp.sched_interval},
                   {"bf_interval", sp.bf_interval},
                   {"bf_window_s", sp.bf_window},
                   {"bf_resolution", sp.bf_resolution},
                   {"bf_max_job_test", sp.bf_max_job_test},
                   {"weight_age", pr.weight_age},
                   {"weight_job_size", pr.weight_job_size},
                   {"max_age_s", pr.max_age}};
    j["notes"] = conf.notes;
    j["submit_lag_s"] = {{"mean", lag_mean}, {"max", lag_max}};
    for (const auto& r : results) {
      j["modes"][r.mode] = to_json(r.agreement, compress);
      j["modes"][r.mode]["backfill_starts"] = r.counters.backfill_starts;
      j["modes"][r.mode]["overhead_ms"] = r.overhead_ms;
    }
    j["failures"] = failures;
    j["ok"] = failures.empty();
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format(
        "faithfulness: mirage::Simulator vs slurmctld, {} jobs, time compressed {}x "
        "(1 s here = {:.1f} min of the trace)\n",
        workload.size(), compress, compress / 60.0);
    std::cout << fmt::format(
        "config (from {}): {} nodes x {} GPUs, whole nodes; sched_interval={} bf_interval={} "
        "bf_window={}m bf_resolution={} bf_max_job_test={}; PriorityWeightJobSize={} "
        "PriorityWeightAge={} PriorityMaxAge={}s\n",
        a.slurm_conf, conf.spec.nodes, conf.spec.gpus_per_node, sp.sched_interval, sp.bf_interval,
        sp.bf_window / 60, sp.bf_resolution, sp.bf_max_job_test, pr.weight_job_size, pr.weight_age,
        pr.max_age);
    for (const auto& n : conf.notes) std::cout << "note: " << n << "\n";
    std::cout << fmt::format(
        "simulator input: submit={} runtime={} overhead={}, unit {} ms; real submissions lagged "
        "the plan by {:.2f} s "
        "on average (max {} s)\n\n",
        a.submit, a.runtime,
        a.fit_overhead_ms > 0
            ? fmt::format("fitted per mode in 0..{} ms (below)", a.fit_overhead_ms)
            : fmt::format("{} ms", a.overhead_ms),
        a.unit_ms, lag_mean, lag_max);
    std::cout << fmt::format("{:<34}", "");
    for (const auto& r : results) std::cout << fmt::format("{:>16}", "backfill=" + r.mode);
    std::cout << "\n";
    auto row = [&](const std::string& label, auto value) {
      std::cout << fmt::format("{:<34}", label);
      for (const auto& r : results) std::cout << fmt::format("{:>16}", value(r));
      std::cout << "\n";
    };
    auto secs = [](double v) { return fmt::format("{:.2f} s", v); };
    auto hours = [&](double v) { return fmt::format("{:.2f} h", v * compress / 3600.0); };
    row("start error |sim-real|: mean",
        [&](const ModeResult& r) { return secs(r.agreement.mean_abs_error); });
    row("                        median",
        [&](const ModeResult& r) { return secs(r.agreement.median_abs_error); });
    row("                        p90",
        [&](const ModeResult& r) { return secs(r.agreement.p90_abs_error); });
    row("                        max",
        [&](const ModeResult& r) { return secs(r.agreement.max_abs_error); });
    row("signed mean (sim - real)",
        [&](const ModeResult& r) { return secs(r.agreement.mean_error); });
    row("in trace time: mean",
        [&](const ModeResult& r) { return hours(r.agreement.mean_abs_error); });
    row("               median",
        [&](const ModeResult& r) { return hours(r.agreement.median_abs_error); });
    row("               p90",
        [&](const ModeResult& r) { return hours(r.agreement.p90_abs_error); });
    row("start-order agreement", [&](const ModeResult& r) {
      return fmt::format("{:.1f}%", 100.0 * r.agreement.order_agreement);
    });
    row("mean wait: sim (real)", [&](const ModeResult& r) {
      return fmt::format("{:.1f} ({:.1f}) s", r.agreement.mean_wait_sim,
                         r.agreement.mean_wait_real);
    });
    row("makespan: sim (real)", [&](const ModeResult& r) {
      return fmt::format("{} ({}) s", r.agreement.makespan_sim, r.agreement.makespan_real);
    });
    row("node turnaround added to runtimes",
        [&](const ModeResult& r) { return fmt::format("{} ms", r.overhead_ms); });
    row("jobs started by backfill (sim)",
        [&](const ModeResult& r) { return std::to_string(r.counters.backfill_starts); });
    if (!results.empty())
      std::cout << fmt::format(
          "order agreement over {} job pairs whose real starts are > 1 s apart\n",
          results.front().agreement.pairs);
    for (const auto& f : failures) std::cout << "FAIL: " << f << "\n";
    if (failures.empty() && (a.min_order || a.max_median)) std::cout << "PASS: within bounds\n";
  }
  return failures.empty() ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"validate_slurm: replay a workload in mirage's simulator and compare with Slurm"};
  app.require_subcommand(1);

  CutArgs cut;
  auto* c =
      app.add_subcommand("cut", "cut a window of a real trace into a compressed workload CSV");
  c->add_option("--trace", cut.trace, "trace file (SWF or sacct, gzip allowed)")->required();
  c->add_option("--out", cut.out, "workload CSV to write")->required();
  c->add_option("--jobs", cut.options.jobs, "jobs in the workload")->capture_default_str();
  c->add_option("--from", cut.from, "window start: first usable job submitted at or after (UTC)")
      ->capture_default_str();
  c->add_option("--compress", cut.options.compress, "time compression factor")
      ->capture_default_str();
  c->add_option("--max-nodes", cut.options.max_nodes, "node counts map to min(nodes, this)")
      ->capture_default_str();
  c->add_option("--min-runtime", cut.options.min_runtime, "runtime floor, compressed seconds")
      ->capture_default_str();
  c->add_option("--max-runtime", cut.options.max_runtime, "runtime cap, compressed seconds")
      ->capture_default_str();
  c->add_option("--limit-margin", cut.options.limit_margin,
                "keep runtime <= limit - this many seconds")
      ->capture_default_str();

  std::string workload, jobcomp, out;
  Seconds t0 = 0;
  auto* k = app.add_subcommand("collect", "turn the jobcomp record of a replay into real.csv");
  k->add_option("--workload", workload, "workload CSV that was replayed")->required();
  k->add_option("--jobcomp", jobcomp, "JobCompLoc file of the cluster")->required();
  k->add_option("--t0", t0, "Unix time of the replay's offset 0")->required();
  k->add_option("--out", out, "real-results CSV to write")->required();

  CompareArgs cmp;
  auto* m = app.add_subcommand("compare", "simulate the workload and compare with the real run");
  m->add_option("--workload", cmp.workload, "workload CSV")->required();
  m->add_option("--real", cmp.real, "real-results CSV (collect)")->required();
  m->add_option("--slurm-conf", cmp.slurm_conf, "slurm.conf the real run used")->required();
  m->add_option("--nodes", cmp.nodes, "nodes of the cluster")->capture_default_str();
  m->add_option("--gpus-per-node", cmp.gpus_per_node, "GPUs per node")->capture_default_str();
  m->add_option("--submit", cmp.submit,
                "simulator submit times: 'real' (as recorded by slurmctld) or 'planned'")
      ->check(CLI::IsMember({"real", "planned"}))
      ->capture_default_str();
  m->add_option("--runtime", cmp.runtime,
                "simulator runtimes: 'planned' (the sleep) or 'real' (recorded end - start)")
      ->check(CLI::IsMember({"planned", "real"}))
      ->capture_default_str();
  m->add_option("--overhead-ms", cmp.overhead_ms,
                "added to every simulated runtime, standing for the time Slurm takes to release "
                "a node and reschedule after a job ends (a multiple of --unit-ms)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  m->add_option("--fit-overhead-ms", cmp.fit_overhead_ms,
                "fit --overhead-ms in [0, this] in steps of --unit-ms: the value with the least "
                "mean |start error| for the first mode (0: no fit)")
      ->check(CLI::NonNegativeNumber);
  m->add_option("--unit-ms", cmp.unit_ms, "simulator time unit in ms (divides 1000)")
      ->check(CLI::IsMember({1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000}))
      ->capture_default_str();
  m->add_option("--modes", cmp.modes, "backfill modes to simulate; bounds apply to the first")
      ->delimiter(',')
      ->capture_default_str();
  m->add_option("--compress", cmp.compress, "compression factor (default: from the workload)");
  m->add_flag("--json", cmp.json, "machine-readable output");
  m->add_option("--details", cmp.details, "per-job CSV of real and simulated times");
  m->add_option("--min-order-agreement", cmp.min_order, "fail (exit 3) below this share");
  m->add_option("--max-median-abs-error", cmp.max_median, "fail (exit 3) above this, seconds");
  m->add_flag("--require-backfill-gain", cmp.require_backfill_gain,
              "fail unless the first mode is closer to Slurm (mean |error|) than backfill=none");

  try {
    app.parse(argc, argv);
    if (*c) return do_cut(cut);
    if (*k) return do_collect(workload, jobcomp, t0, out);
    if (*m) return do_compare(cmp);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const mirage::InputError& e) {
    std::cerr << "validate_slurm: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "validate_slurm: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// Simulator speed on the real traces: whole-trace replay, one Mirage-protocol episode, fork().
// Prints figures; it asserts nothing (tests do that).
//
//   simulator_bench [--traces DIR] [--quick]
//
// DIR defaults to $MIRAGE_TRACES, else the real-logs folder set at configure time (its layout:
// docs/traces.md).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "mirage/simulator/Simulator.h"
#include "mirage/traces/Trace.h"

using namespace mirage;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

ClusterSpec whole_node_machine(int nodes, BackfillMode mode) {
  ClusterSpec c;
  c.nodes = nodes;
  c.scheduler.backfill = mode;
  return c;
}

// Jobs that fit the machine (real logs hold a few that do not).
std::vector<Job> fitting(const std::vector<Job>& jobs, int nodes) {
  std::vector<Job> out;
  std::copy_if(jobs.begin(), jobs.end(), std::back_inserter(out),
               [&](const Job& j) { return j.nodes <= nodes; });
  return out;
}

void bench_replay(const std::string& path, int nodes_override) {
  auto t0 = Clock::now();
  Trace trace = read_trace(path, {TraceFormat::kAuto, true});
  const double read_s = seconds_since(t0);
  const int nodes = nodes_override > 0 ? nodes_override : trace.machine_nodes;
  auto jobs =
      std::make_shared<const std::vector<SimJobSpec>>(to_sim_jobs(fitting(trace.jobs, nodes)));
  for (auto mode : {BackfillMode::kSlurm, BackfillMode::kEasy}) {
    Simulator sim(whole_node_machine(nodes, mode), jobs);
    t0 = Clock::now();
    sim.run_to_completion();
    const double s = seconds_since(t0);
    fmt::print(
        "replay  {:<36} {:>7} jobs  {:>4} nodes  backfill {:<5}  read {:6.2f} s  replay {:6.2f} s"
        "  {:>9.0f} jobs/s  ({} backfill passes)\n",
        std::filesystem::path(path).filename().string(), jobs->size(), nodes, to_string(mode),
        read_s, s, static_cast<double>(jobs->size()) / s, sim.counters().backfill_passes);
  }
}

// One episode as in the Mirage paper's simulator: empty cluster, the trace jobs submitted in
// [t, t + 5 days], the predecessor (chain_nodes, 2880-minute limit, runs it all) submitted at
// t + 2 days; the successor submitted when the predecessor ends (reactive); run until it starts.
double episode(const std::vector<SimJobSpec>& all, Seconds t, int nodes, int chain_nodes) {
  const Seconds limit = 2880 * kMinute;
  auto lo = std::lower_bound(all.begin(), all.end(), t,
                             [](const SimJobSpec& s, Seconds v) { return s.submit < v; });
  auto hi = std::lower_bound(lo, all.end(), t + 5 * kDay,
                             [](const SimJobSpec& s, Seconds v) { return s.submit < v; });
  auto slice = std::make_shared<const std::vector<SimJobSpec>>(lo, hi);
  Simulator sim(whole_node_machine(nodes, BackfillMode::kSlurm), slice);
  sim.set_recording(false);
  sim.run_until(t + 2 * kDay);
  SimJobSpec pred;
  pred.nodes = chain_nodes;
  pred.time_limit = limit;
  pred.runtime = limit;
  const SimJobIndex p = sim.submit(pred);
  sim.run_until_started(p, t + 5 * kDay);
  const Seconds pred_end = sim.start_time(p) + limit;
  sim.run_until(pred_end);
  SimJobSpec succ = pred;
  const SimJobIndex s = sim.submit(succ);
  sim.run_until_started(s, pred_end + 30 * kDay);
  return static_cast<double>(sim.start_time(s) - pred_end);
}

void bench_episodes(const std::string& ls6, bool quick) {
  Trace trace = read_trace(ls6, {TraceFormat::kAuto, true});
  const int nodes = 88;
  const auto all = to_sim_jobs(fitting(trace.jobs, nodes));
  const Seconds feb1 = *parse_iso_time("2023-02-01");
  for (int chain : {1, 8}) {
    std::vector<double> times;
    double gap_sum = 0;
    const int samples = quick ? 12 : 132;
    for (int i = 0; i < samples; ++i) {
      auto t0 = Clock::now();
      // Windows past the end of the log get fewer jobs; keep them: this measures speed only.
      gap_sum += episode(all, feb1 + i * 4 * kHour, nodes, chain);
      times.push_back(seconds_since(t0));
    }
    fmt::print(
        "episode LS6 88 nodes, {}-node chain: {} samples, median {:.1f} ms, max {:.1f} ms"
        " (reactive mean gap {:.2f} h)\n",
        chain, samples, 1000 * median(times), 1000 * *std::max_element(times.begin(), times.end()),
        gap_sum / samples / 3600.0);
  }
}

void bench_fork(const std::string& ls6) {
  // A state holding about 1,000 jobs: a 1,000-job cut of LS6, replayed to its middle.
  Trace trace = read_trace(ls6, {TraceFormat::kAuto, true});
  auto jobs_all = to_sim_jobs(fitting(trace.jobs, 88));
  const Seconds jan1 = *parse_iso_time("2023-01-01");
  auto start = std::lower_bound(jobs_all.begin(), jobs_all.end(), jan1,
                                [](const SimJobSpec& s, Seconds v) { return s.submit < v; });
  auto cut = std::make_shared<const std::vector<SimJobSpec>>(start, start + 1000);
  Simulator sim(whole_node_machine(88, BackfillMode::kSlurm), cut);
  sim.run_until((*cut)[500].submit);
  const int reps = 2000;
  auto t0 = Clock::now();
  std::size_t sink = 0;
  for (int i = 0; i < reps; ++i) {
    Simulator f = sim.fork();
    sink += f.pending_count();
  }
  const double per = seconds_since(t0) / reps;
  fmt::print("fork    1,000-job state ({} pending, {} running): {:.1f} us per fork{}\n",
             sim.pending_count(), sim.running_count(), per * 1e6, sink == 0 ? " " : "");

  // The whole LS6 log replayed to 2023-02-01: what evaluation forks from.
  auto full = std::make_shared<const std::vector<SimJobSpec>>(jobs_all);
  Simulator big(whole_node_machine(88, BackfillMode::kSlurm), full);
  big.set_recording(false);
  big.run_until(*parse_iso_time("2023-02-01"));
  t0 = Clock::now();
  for (int i = 0; i < reps; ++i) {
    Simulator f = big.fork();
    sink += f.pending_count();
  }
  fmt::print(
      "fork    full LS6 replay at 2023-02-01 ({} jobs in trace, {} pending, {} running): "
      "{:.1f} us per fork\n",
      full->size(), big.pending_count(), big.running_count(), seconds_since(t0) / reps * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  const char* from_env = std::getenv("MIRAGE_TRACES");
  std::string dir = from_env && *from_env ? from_env : MIRAGE_TRACES;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--traces" && i + 1 < argc)
      dir = argv[++i];
    else if (a == "--quick")
      quick = true;
    else {
      fmt::print(stderr, "usage: simulator_bench [--traces DIR] [--quick]\n");
      return 2;
    }
  }
  const std::string ls6 = dir + "/gpu/tacc-ls6/ls6-a100-until-2023-02.log.gz";
  if (!std::filesystem::exists(ls6)) {
    fmt::print(stderr, "simulator_bench: {} not found (give --traces DIR)\n", ls6);
    return 2;
  }
  bench_fork(ls6);
  bench_episodes(ls6, quick);
  bench_replay(ls6, 88);
  for (const char* f : {"KTH-SP2-1996-2.1-cln.swf.gz", "SDSC-SP2-1998-4.2-cln.swf.gz",
                        "CTC-SP2-1996-3.1-cln.swf.gz", "HPC2N-2002-2.2-cln.swf.gz"}) {
    const std::string p = dir + "/swf-classic/" + f;
    if (quick && std::string(f).find("HPC2N") == std::string::npos) continue;
    if (std::filesystem::exists(p)) bench_replay(p, 0);
  }
  return 0;
}

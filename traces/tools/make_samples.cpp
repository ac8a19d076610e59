// Generates the small sample traces shipped in traces/samples/ (synthetic; no real log is
// copied). Deterministic: a fixed seed, std::mt19937_64 (fully specified by the standard) and
// our own uniform/exponential draws (the standard library's distributions differ between
// implementations). Only libm's log/pow/sin could differ in the last bit between platforms.
//
//   make_samples OUTPUT_DIR
//
// writes OUTPUT_DIR/sample-gpu-cluster.swf and OUTPUT_DIR/sample-sacct.txt.
//
// Each workload is drawn (arrivals with a daily cycle, sizes, limits, runtimes), then "run" on
// its machine by a small FCFS + EASY-backfill scheduler so that the recorded start times are
// feasible (never more nodes busy than the machine has) and queues build as on a loaded cluster.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numbers>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "mirage/core/Time.h"

namespace {

using mirage::kDay;
using mirage::kHour;
using mirage::kMinute;
using mirage::Seconds;

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  // Uniform in [0, 1), from the top 53 bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double exponential(double mean) { return -mean * std::log(1.0 - uniform()); }
  // Index drawn with the given weights.
  std::size_t pick(const std::vector<double>& weights) {
    double total = 0;
    for (double w : weights) total += w;
    double x = uniform() * total;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (x < weights[i]) return i;
      x -= weights[i];
    }
    return weights.size() - 1;
  }

 private:
  std::mt19937_64 engine_;
};

struct GenJob {
  Seconds submit = 0;
  Seconds limit = 0;
  Seconds runtime = 0;
  int nodes = 1;
  int gpus_per_node = 0;
  int user = 0;
  int kind = 0;  // workload-specific label (job name, exit state)
  bool hit_limit = false;
  Seconds start = -1;
};

// Arrival times of about `count` jobs over [0, horizon): a Poisson process whose rate follows a
// daily cycle (peak mid-afternoon, trough before dawn) and is lower at weekends.
std::vector<Seconds> arrivals(Rng& rng, std::size_t count, Seconds horizon) {
  auto rate = [](double t) {
    const double day_phase = std::fmod(t, static_cast<double>(kDay)) / static_cast<double>(kDay);
    const double daily = 1.0 + 0.7 * std::sin(2 * std::numbers::pi * (day_phase - 0.375));
    const long weekday = static_cast<long>(t / static_cast<double>(kDay)) % 7;  // 0 = Monday
    return daily * (weekday >= 5 ? 0.5 : 1.0);
  };
  // Cumulative intensity on a one-minute grid, scaled so that its total equals `count`.
  const std::size_t steps = static_cast<std::size_t>(horizon / kMinute);
  std::vector<double> cumulative(steps + 1, 0.0);
  for (std::size_t i = 0; i < steps; ++i)
    cumulative[i + 1] = cumulative[i] + rate(static_cast<double>(i * kMinute) + 30.0);
  const double scale = static_cast<double>(count) / cumulative.back();
  for (double& c : cumulative) c *= scale;
  // Unit-rate exponential gaps in intensity time, mapped back through the cumulative intensity.
  // The number of arrivals is itself Poisson, with mean `count`.
  std::vector<Seconds> times;
  std::size_t i = 0;
  for (double x = rng.exponential(1.0); x < cumulative.back(); x += rng.exponential(1.0)) {
    while (cumulative[i + 1] < x) ++i;
    const double frac = (x - cumulative[i]) / (cumulative[i + 1] - cumulative[i]);
    times.push_back(static_cast<Seconds>(static_cast<double>(i * kMinute) + frac * kMinute));
  }
  return times;
}

// FCFS with EASY backfilling, whole-node allocation: planning uses time limits, jobs end at
// their true runtime. Sets every job's start. `jobs` must be sorted by submit.
void schedule(std::vector<GenJob>& jobs, int machine_nodes) {
  struct Running {
    Seconds end;       // true end
    Seconds expected;  // start + limit
    int nodes;
  };
  std::vector<Running> running;
  std::vector<std::size_t> queue;
  int free_nodes = machine_nodes;
  std::size_t next = 0;
  Seconds now = 0;
  auto start = [&](std::size_t j) {
    jobs[j].start = now;
    running.push_back({now + jobs[j].runtime, now + jobs[j].limit, jobs[j].nodes});
    free_nodes -= jobs[j].nodes;
  };
  while (next < jobs.size() || !queue.empty() || !running.empty()) {
    Seconds t = next < jobs.size() ? jobs[next].submit : INT64_MAX;
    for (const Running& r : running) t = std::min(t, r.end);
    now = t;
    for (std::size_t i = 0; i < running.size();) {
      if (running[i].end <= now) {
        free_nodes += running[i].nodes;
        running[i] = running.back();
        running.pop_back();
      } else {
        ++i;
      }
    }
    while (next < jobs.size() && jobs[next].submit <= now) queue.push_back(next++);
    // Main pass: start jobs in order while the head fits.
    std::size_t q = 0;
    while (q < queue.size() && jobs[queue[q]].nodes <= free_nodes) start(queue[q++]);
    queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(q));
    if (queue.empty()) continue;
    // The head is blocked: reserve for it at the earliest time enough nodes free up (by limits).
    std::vector<std::pair<Seconds, int>> ends;
    for (const Running& r : running) ends.emplace_back(r.expected, r.nodes);
    std::sort(ends.begin(), ends.end());
    int available = free_nodes;
    Seconds shadow = now;
    for (const auto& [end, nodes] : ends) {
      if (available >= jobs[queue[0]].nodes) break;
      available += nodes;
      shadow = end;
    }
    int extra = available - jobs[queue[0]].nodes;
    for (std::size_t k = 1; k < queue.size();) {
      GenJob& job = jobs[queue[k]];
      const bool fits_now = job.nodes <= free_nodes;
      const bool done_before_shadow = now + job.limit <= shadow;
      if (fits_now && (done_before_shadow || job.nodes <= extra)) {
        if (!done_before_shadow) extra -= job.nodes;
        start(queue[k]);
        queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        ++k;
      }
    }
  }
}

// Scales the runtimes of jobs that did not hit their limit so that the offered load over the
// arrival horizon is `load` (the draws fix the shape, this fixes the level).
void calibrate(std::vector<GenJob>& jobs, int machine_nodes, Seconds horizon, double load) {
  double fixed = 0, scalable = 0;
  for (const GenJob& j : jobs)
    (j.hit_limit ? fixed : scalable) += static_cast<double>(j.runtime) * j.nodes;
  const double target = load * machine_nodes * static_cast<double>(horizon);
  const double factor = std::clamp((target - fixed) / scalable, 0.05, 1.0);
  std::printf("%zu jobs: runtimes that did not hit the limit scaled by %.3f for load %.2f\n",
              jobs.size(), factor, load);
  for (GenJob& j : jobs)
    if (!j.hit_limit)
      j.runtime =
          std::clamp<Seconds>(std::llround(static_cast<double>(j.runtime) * factor), 1, j.limit);
}

// ---------------------------------------------------------------------------------------------
// sample-gpu-cluster.swf: ~3000 jobs, 3 weeks, 32 nodes with 4 GPUs each.

constexpr Seconds kSwfStart = 1709510400;  // 2024-03-04T00:00:00Z, a Monday
constexpr int kSwfNodes = 32;
constexpr int kSwfGpusPerNode = 4;

std::vector<GenJob> gpu_cluster_workload(Rng& rng, std::size_t count, Seconds horizon) {
  const std::vector<int> sizes = {1, 2, 3, 4, 6, 8, 12, 16};
  const std::vector<double> size_w = {0.45, 0.20, 0.02, 0.16, 0.02, 0.10, 0.01, 0.04};
  const std::vector<Seconds> limits = {30 * kMinute, kHour, 2 * kHour, 4 * kHour,
                                       12 * kHour,   kDay,  2 * kDay};
  const std::vector<double> limit_w = {0.12, 0.14, 0.14, 0.14, 0.10, 0.10, 0.26};
  std::vector<GenJob> jobs;
  for (Seconds submit : arrivals(rng, count, horizon)) {
    GenJob j;
    j.submit = submit;
    j.nodes = sizes[rng.pick(size_w)];
    j.limit = limits[rng.pick(limit_w)];
    // Users: a few heavy ones, a long tail.
    j.user = 1 + static_cast<int>(std::floor(std::pow(rng.uniform(), 2.0) * 40));
    // Short limits are run out more often than generous ones.
    const double p_hit = j.limit <= 2 * kHour ? 0.10 : j.limit <= 12 * kHour ? 0.04 : 0.015;
    const double u = rng.uniform();
    if (u < p_hit) {  // ran until killed at the limit
      j.runtime = j.limit;
      j.hit_limit = true;
      j.kind = 0;                   // status 0 (failed: timeout)
    } else if (u < p_hit + 0.20) {  // failed early: bad input, crash at start-up
      j.runtime = static_cast<Seconds>(rng.uniform(10, 15 * kMinute));
      j.kind = 0;
    } else {  // finished: log-uniform fraction of the limit (users ask for generous limits)
      j.runtime = static_cast<Seconds>(static_cast<double>(j.limit) *
                                       std::pow(10.0, rng.uniform(-3.0, 0.0)));
      j.kind = 1;
    }
    j.runtime = std::clamp<Seconds>(j.runtime, 1, j.limit);
    jobs.push_back(j);
  }
  calibrate(jobs, kSwfNodes, horizon, 0.85);
  schedule(jobs, kSwfNodes);
  return jobs;
}

void write_swf(const std::string& path, const std::vector<GenJob>& jobs) {
  std::ofstream out(path, std::ios::binary);
  Seconds last_end = 0;
  for (const GenJob& j : jobs) last_end = std::max(last_end, j.start + j.runtime);
  out << "; Version: 2.2\n"
         "; Computer: sample GPU cluster (32 nodes, 4 GPUs each)\n"
         "; Installation: synthetic sample shipped with mirage (traces/tools/make_samples.cpp)\n"
         "; Note: generated, not a real log. Processors are GPUs; jobs take whole nodes\n"
         ";       (4 GPUs each), so allocated processors are 4 x nodes.\n"
         "; Note: start times come from a FCFS + EASY backfill run of the generator.\n"
         "; MaxJobs: "
      << jobs.size() << "\n; MaxRecords: " << jobs.size()
      << "\n"
         "; Preemption: No\n"
         "; UnixStartTime: "
      << kSwfStart
      << "\n"
         "; TimeZone: 0\n"
         "; TimeZoneString: UTC\n"
         "; StartTime: "
      << mirage::format_iso_time(kSwfStart)
      << "\n; EndTime:   " << mirage::format_iso_time(kSwfStart + last_end)
      << "\n; MaxNodes: " << kSwfNodes << "\n; MaxProcs: " << kSwfNodes * kSwfGpusPerNode
      << "\n"
         "; MaxQueues: 1\n"
         "; Queue: 1 gpu\n"
         "; MaxPartitions: 1\n"
         "; Partition: 1 gpu\n"
         ";\n";
  char line[256];
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const GenJob& j = jobs[i];
    const int procs = j.nodes * kSwfGpusPerNode;
    std::snprintf(
        line, sizeof line,
        "%5zu %7lld %6lld %6lld %3d %6s %3d %3d %6lld %3d %2d %3d %3d %3d %2d %2d %2d %2d\n", i + 1,
        static_cast<long long>(j.submit), static_cast<long long>(j.start - j.submit),
        static_cast<long long>(j.runtime), procs, "-1", -1, procs, static_cast<long long>(j.limit),
        -1, j.kind, j.user, 1 + (j.user - 1) / 8, -1, 1, 1, -1, -1);
    out << line;
  }
}

// ---------------------------------------------------------------------------------------------
// sample-sacct.txt: ~300 jobs, 5 days, 8 nodes with 4 A100s each, sacct --parsable2 layout.

constexpr Seconds kSacctStart = 1709510400 + 7 * kHour;  // 2024-03-04T07:00:00
constexpr int kSacctNodes = 8;

struct Submission {
  const char* name;
  double weight;
  std::vector<int> nodes;       // choices
  std::vector<Seconds> limits;  // choices
  int gpus_single_node;         // GPUs asked for by single-node jobs (0: all 4)
  int array_tasks;              // >0: submitted as an array of this many tasks
};

void write_sacct(const std::string& path, Rng& rng) {
  const std::vector<Submission> kinds = {
      {"train_llm", 0.05, {2, 4, 8}, {2 * kDay}, 0, 0},
      {"finetune", 0.15, {1, 2}, {12 * kHour, kDay}, 0, 0},
      {"eval", 0.30, {1}, {kHour, 2 * kHour}, 1, 0},
      {"preprocess", 0.12, {1}, {4 * kHour}, 1, 0},
      {"sweep", 0.08, {1}, {4 * kHour}, 2, 6},
      {"inference", 0.30, {1}, {30 * kMinute, kHour}, 2, 0},
  };
  std::vector<double> kind_w;
  for (const auto& k : kinds) kind_w.push_back(k.weight);
  const std::vector<const char*> users = {"aisha", "bruno", "chen", "dana", "emeka", "farah",
                                          "goran", "hana",  "ivan", "jun",  "kofi",  "lena"};

  const Seconds horizon = 5 * kDay;
  struct Meta {
    long base_id;
    int task;  // -1: not an array task
    std::size_t kind;
    int gpus;  // GPUs per node
  };
  std::vector<GenJob> jobs;
  std::vector<Meta> meta;
  long next_id = 41000;
  for (Seconds submit : arrivals(rng, 215, horizon)) {
    const std::size_t k = rng.pick(kind_w);
    const Submission& s = kinds[k];
    const int tasks = s.array_tasks > 0 ? s.array_tasks : 1;
    const int nodes = s.nodes[static_cast<std::size_t>(rng.uniform() * s.nodes.size())];
    const Seconds limit = s.limits[static_cast<std::size_t>(rng.uniform() * s.limits.size())];
    const int user = static_cast<int>(std::pow(rng.uniform(), 1.5) * users.size());
    const long id = next_id++;
    for (int t = 0; t < tasks; ++t) {
      GenJob j;
      j.submit = submit;
      j.nodes = nodes;
      j.limit = limit;
      j.user = user;
      const double u = rng.uniform();
      if (u < 0.08) {
        // Slurm kills a job some seconds after its limit (KillWait): TIMEOUT rows run past it.
        j.runtime = limit + static_cast<Seconds>(rng.uniform(5, 90));
        j.hit_limit = true;
        j.kind = 2;  // TIMEOUT
      } else if (u < 0.16) {
        j.runtime = static_cast<Seconds>(rng.uniform(20, 10 * kMinute));
        j.kind = 1;  // FAILED
      } else if (u < 0.20) {
        j.runtime = static_cast<Seconds>(rng.uniform(0.05, 0.5) * static_cast<double>(limit));
        j.kind = 3;  // CANCELLED while running
      } else {
        j.runtime =
            static_cast<Seconds>(static_cast<double>(limit) * std::pow(10.0, rng.uniform(-1.5, 0)));
        j.kind = 0;  // COMPLETED
      }
      if (!j.hit_limit) j.runtime = std::clamp<Seconds>(j.runtime, 1, limit);
      jobs.push_back(j);
      meta.push_back({id, s.array_tasks > 0 ? t : -1, k,
                      nodes > 1 || s.gpus_single_node == 0 ? 4 : s.gpus_single_node});
    }
  }
  // Keep the job <-> meta pairing through the scheduler (both are in submit order already).
  calibrate(jobs, kSacctNodes, horizon, 0.75);
  schedule(jobs, kSacctNodes);

  std::ofstream out(path, std::ios::binary);
  out << "JobID|JobName|User|Partition|Submit|Start|End|Timelimit|NNodes|AllocTRES|State|"
         "ExitCode\n";
  const char* states[] = {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED by "};
  const char* exits[] = {"0:0", "1:0", "0:15", "0:15"};
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const GenJob& j = jobs[i];
    const Meta& m = meta[i];
    std::string id = std::to_string(m.base_id);
    if (m.task >= 0) id += "_" + std::to_string(m.task);
    const int gpus = m.gpus * j.nodes;
    const int cpus = 32 * m.gpus * j.nodes;
    std::string state = states[j.kind];
    if (j.kind == 3) state += std::to_string(20000 + j.user);
    const char* partition = j.limit <= 2 * kHour ? "gpu-a100-dev" : "gpu-a100";
    out << id << '|' << kinds[m.kind].name << '|' << users[static_cast<std::size_t>(j.user)] << '|'
        << partition << '|' << mirage::format_iso_time(kSacctStart + j.submit) << '|'
        << mirage::format_iso_time(kSacctStart + j.start) << '|'
        << mirage::format_iso_time(kSacctStart + j.start + j.runtime) << '|'
        << mirage::format_slurm_duration(j.limit) << '|' << j.nodes << '|' << "billing=" << cpus
        << ",cpu=" << cpus << ",gres/gpu=" << gpus << ",mem=" << 125 * m.gpus * j.nodes
        << "G,node=" << j.nodes << '|' << state << '|' << exits[j.kind] << '\n';
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_samples OUTPUT_DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  Rng rng(20240304);
  const auto jobs = gpu_cluster_workload(rng, 3000, 21 * kDay);
  write_swf(dir + "/sample-gpu-cluster.swf", jobs);
  write_sacct(dir + "/sample-sacct.txt", rng);
  std::cout << "wrote " << dir << "/sample-gpu-cluster.swf and " << dir << "/sample-sacct.txt\n";
  return 0;
}

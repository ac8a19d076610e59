#pragma once
// Logs the simulator itself makes with known settings, for the tests and benchmarks of what the
// calibration recovers from them (tests/simulator/CalibrationRecoveryTest.cpp,
// bench/limit_recovery.cpp). The same seed gives the same log.
#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "mirage/simulator/Simulator.h"

namespace mirage::test {

inline constexpr Seconds kMadeLogStart = 1'700'000'000 / kDay * kDay;

// Three weeks of a 32-node machine's jobs from 12 users, about 0.9 offered load (a job every
// 1,500 s on average; `gap` sets it).
inline std::vector<Job> workload(unsigned seed, double gap = 1500) {
  std::mt19937_64 rng(seed);
  std::vector<Job> jobs;
  Seconds now = kMadeLogStart;
  for (JobId id = 1; now < kMadeLogStart + 21 * kDay; ++id) {
    now += static_cast<Seconds>(std::exponential_distribution<double>(1.0 / gap)(rng));
    Job j;
    j.id = id;
    j.user = "u" + std::to_string(rng() % 12);
    j.submit = j.start = now;
    j.nodes = 1 << (rng() % 4);
    j.time_limit = (1 + static_cast<Seconds>(rng() % 12)) * kHour;
    j.end = now + 60 + static_cast<Seconds>(rng() % static_cast<unsigned>(j.time_limit - 60));
    jobs.push_back(j);
  }
  return jobs;
}

// `jobs` as `users` users' (at random): fewer users run more jobs each, and a per-user limit
// holds more of them.
inline std::vector<Job> as_users(std::vector<Job> jobs, int users, unsigned seed) {
  std::mt19937_64 rng(seed);
  for (Job& j : jobs) j.user = "u" + std::to_string(rng() % static_cast<unsigned>(users));
  return jobs;
}

// The log `spec` makes of `jobs`: their submissions, starts and ends as the simulator ran them (a
// follower, Job::think, submitted that long after the job it follows ended), and neither
// dependencies nor followers, which a log does not record; in the order of their submission.
inline std::vector<Job> run_log(std::vector<Job> jobs, const ClusterSpec& spec) {
  Simulator sim(spec, std::make_shared<const std::vector<SimJobSpec>>(to_sim_jobs(jobs)));
  sim.run_to_completion();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Seconds run = jobs[i].end - jobs[i].start;
    jobs[i].submit = sim.submit_time(static_cast<SimJobIndex>(i));
    jobs[i].start = sim.start_time(static_cast<SimJobIndex>(i));
    jobs[i].end = jobs[i].start + run;
    jobs[i].after_any = 0;
    jobs[i].think = kUnknownTime;
  }
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const Job& a, const Job& b) { return a.submit < b.submit; });  // as logged
  return jobs;
}

// The machine the logs are made on: 32 nodes, Slurm's scheduler and priority defaults.
inline ClusterSpec made_log_machine() {
  ClusterSpec spec;
  spec.nodes = 32;
  return spec;
}

}  // namespace mirage::test

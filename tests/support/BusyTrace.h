#pragma once
// A busy 16-node machine for the tests of episodes, campaigns and learned agents: mean size 3.5
// nodes, mean runtime 3.25 h, a job every `gap` seconds on average (2,600 s: about 0.98 offered
// load), so queues come and go. The same seed gives the same log.
#include <random>

#include "mirage/traces/Trace.h"

namespace mirage::test {

inline constexpr Seconds kT0 = 1'700'000'000 / kDay * kDay;  // a midnight: the log's start

inline Trace busy_trace(unsigned seed, int days = 14, double gap = 2600) {
  std::mt19937_64 rng(seed);
  Trace t;
  t.source = "synthetic";
  t.machine_nodes = 16;
  Seconds now = kT0;
  JobId id = 1;
  while (now < kT0 + days * kDay) {
    now += static_cast<Seconds>(std::exponential_distribution<double>(1.0 / gap)(rng));
    Job j;
    j.id = id++;
    j.submit = now;
    j.nodes = 1 + static_cast<int>(rng() % 6);
    j.time_limit = (1 + static_cast<Seconds>(rng() % 12)) * kHour;
    j.start = now;  // recorded start is unused by the simulator
    j.end = now + static_cast<Seconds>(rng() % static_cast<unsigned>(j.time_limit));
    t.jobs.push_back(j);
  }
  return t;
}

}  // namespace mirage::test

#pragma once
// A wait distribution for the daemon's tests of recorded waits.
#include <string>

#include "TestSupport.h"
#include "mirage/agents/WaitDistribution.h"

namespace mirage::daemon::testing {

// A binned distribution of 1-node waits that says every job waits 0 to 30 minutes.
inline std::string write_short_waits(const TempDir& dir) {
  WaitDistribution d;
  d.spec.from = 1'600'000'000;
  d.spec.to = d.spec.from + 60 * kDay;
  WaitDistribution::Bin bin;
  bin.jobs = 40;
  for (int k = 0; k < WaitDistribution::kLevels; ++k)
    bin.waits[static_cast<std::size_t>(k)] = k * 90;
  d.bins.push_back(bin);
  const std::string file = dir.file("waits.toml");
  write_wait_distribution(file, d);
  return file;
}

}  // namespace mirage::daemon::testing

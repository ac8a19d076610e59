// The probe cache keys what the probes were computed under.
#include "LearnedFixtures.h"

namespace mirage::learned {
namespace {

class ProbeCacheTest : public LearnedTest {};

// Probes cached under one calibrated cluster are not read back under another: whatever holds
// jobs (boundaries, down windows) or moves their submissions (feedback's think time) keys the
// cache as capacity does.
TEST_F(ProbeCacheTest, ProbesOfAnotherCalibrationAreKeptApart) {
  const Trace trace = busy_trace(4, 8);
  ProbeSpec spec;
  spec.cluster.nodes = 16;
  const std::string plain = probe_fingerprint(trace, spec);
  ProbeSpec down = spec;
  down.cluster.down =
      std::make_shared<const std::vector<DownWindow>>(std::vector<DownWindow>{{kT0, kT0 + kDay}});
  ProbeSpec weekly = spec;
  weekly.cluster.boundaries = std::make_shared<const std::vector<WeeklyBoundaries>>(
      std::vector<WeeklyBoundaries>{{kT0, kT0 + kWeek, {7 * kHour}}});
  Trace followed = trace;
  followed.jobs.at(1).after_any = followed.jobs.at(0).id;
  followed.jobs.at(1).think = 60;
  Trace later = followed;
  later.jobs.at(1).think = 600;
  EXPECT_NE(probe_fingerprint(trace, down), plain);
  EXPECT_NE(probe_fingerprint(trace, weekly), plain);
  EXPECT_NE(probe_fingerprint(trace, down), probe_fingerprint(trace, weekly));
  EXPECT_NE(probe_fingerprint(followed, spec), probe_fingerprint(later, spec));
  EXPECT_EQ(probe_fingerprint(trace, spec), plain);

  // A window and a boundary span of no switch over the same days hold different things.
  ProbeSpec span = spec;
  span.cluster.boundaries = std::make_shared<const std::vector<WeeklyBoundaries>>(
      std::vector<WeeklyBoundaries>{{kT0, kT0 + kDay, {}}});
  EXPECT_NE(probe_fingerprint(trace, span), probe_fingerprint(trace, down));
}

}  // namespace
}  // namespace mirage::learned

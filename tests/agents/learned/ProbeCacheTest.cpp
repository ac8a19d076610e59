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

// Outcomes read in the log's real waits are not the replay's, nor those of real waits pooled
// otherwise: each world and its pooling keys the cache.
TEST_F(ProbeCacheTest, ProbesOfAnotherWorldAreKeptApart) {
  const Trace trace = busy_trace(4, 8);
  ProbeSpec replay;
  replay.cluster.nodes = 16;
  ProbeSpec logged = replay;
  logged.world = SuccessorWait::kLogged;
  ProbeSpec wider = logged;
  wider.logged_window = 7 * kDay;
  ProbeSpec more = logged;
  more.logged_jobs = 9;
  const std::string r = probe_fingerprint(trace, replay), l = probe_fingerprint(trace, logged);
  EXPECT_NE(r, l);
  EXPECT_NE(probe_fingerprint(trace, wider), l);
  EXPECT_NE(probe_fingerprint(trace, more), l);
  EXPECT_NE(probe_cache_file(path("c"), "t", trace, replay),
            probe_cache_file(path("c"), "t", trace, logged));
  // The replay's key does not move with the logged world's settings, which it does not read.
  ProbeSpec replay_wider = replay;
  replay_wider.logged_window = 7 * kDay;
  EXPECT_EQ(probe_fingerprint(trace, replay_wider), r);
}

// The logged world reads the log eval's does (ProbeSpec::yardstick_log): probes whose log marks
// other jobs dependent, and so leaves out other waits, are not these.
TEST_F(ProbeCacheTest, ProbesOfAnotherLoggedWorldsLogAreKeptApart) {
  const Trace trace = busy_trace(4, 8);
  ProbeSpec logged;
  logged.cluster.nodes = 16;
  logged.world = SuccessorWait::kLogged;
  Trace marked = trace;
  marked.jobs.at(5).after_any = marked.jobs.at(4).id;
  ProbeSpec as_read = logged, as_marked = logged;
  as_read.yardstick_log = std::make_shared<const Trace>(trace);
  as_marked.yardstick_log = std::make_shared<const Trace>(marked);
  const std::string l = probe_fingerprint(trace, as_read);
  EXPECT_NE(probe_fingerprint(trace, as_marked), l);
  EXPECT_NE(probe_fingerprint(marked, logged), probe_fingerprint(marked, as_read))
      << "the probed trace's marks are the replay's, not the logged world's";
  EXPECT_NE(probe_cache_file(path("c"), "t", trace, as_marked),
            probe_cache_file(path("c"), "t", trace, as_read));
  // The replay's key does not move with the logged world's log, which it does not read.
  ProbeSpec replay = as_read, replay_marked = as_marked;
  replay.world = replay_marked.world = SuccessorWait::kReplay;
  EXPECT_EQ(probe_fingerprint(trace, replay), probe_fingerprint(trace, replay_marked));
}

}  // namespace
}  // namespace mirage::learned

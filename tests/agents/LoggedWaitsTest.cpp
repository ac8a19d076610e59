// The logged world: a chain's segments wait what the log's real jobs of their shape, submitted
// nearest them, waited; and the table that holds it beside the replay's.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "mirage/agents/Evaluation.h"
#include "mirage/agents/LoggedWaits.h"
#include "mirage/agents/WorldComparison.h"
#include "mirage/simulator/Simulator.h"
#include "support/BusyTrace.h"

namespace mirage {
namespace {

using test::busy_trace;
using test::kT0;

Job real_job(JobId id, Seconds submit, Seconds wait, int nodes = 4, Seconds limit = 2 * kDay) {
  Job j;
  j.id = id;
  j.submit = submit;
  j.start = submit + wait;
  j.end = j.start + kHour;
  j.nodes = nodes;
  j.time_limit = limit;
  return j;
}

// A busy log whose jobs really waited: 0 to 4 hours by their id.
Trace waited_trace(unsigned seed, int days) {
  Trace t = busy_trace(seed, days);
  for (Job& j : t.jobs) {
    const Seconds run = j.end - j.start;
    j.start = j.submit + static_cast<Seconds>(j.id % 5) * kHour;
    j.end = j.start + run;
  }
  return t;
}

EvalConfig logged_eval(int segments = 2) {
  EvalConfig c;
  c.cluster.nodes = 16;
  c.episode.chain.nodes = 4;
  c.episode.chain.time_limit = c.episode.chain.runtime = 6 * kHour;
  c.episode.chain.segments = segments;
  c.episode.max_wait = kDay;
  c.from = kT0 + 2 * kDay;
  c.to = kT0 + 9 * kDay;
  c.every = 4 * kHour;
  c.policies = {"reactive", "average", "static@2h", "oracle"};
  c.threads = 2;
  c.world = SuccessorWait::kLogged;
  c.logged_window = kDay;
  c.logged_jobs = 3;
  return c;
}

TEST(LoggedWaits, AWaitIsTheMedianOfTheNearestRealJobsOfTheShape) {
  Trace t;
  const Seconds at = kT0 + 10 * kDay;
  t.jobs = {
      real_job(1, at - 2 * kDay, 50 * kHour),  // of the shape but far: left out for nearer ones
      real_job(2, at - 3 * kHour, 1 * kHour),
      real_job(3, at - kHour, 7 * kHour),
      real_job(4, at - 10, 9 * kHour, 1),              // 1 node: another size class
      real_job(5, at + 10, 9 * kHour, 4, 10 * kHour),  // asks less than half the segment's limit
      real_job(6, at + 2 * kHour, 3 * kHour, 6),       // 6 nodes: the same class as 4
      real_job(7, at + 5 * kHour, 20 * kHour, 8),      // 8+ nodes: another class
      real_job(8, at + 6 * kHour, 30 * kHour),
  };
  Job never = real_job(9, at + 1, 0);
  never.start = never.end = kUnknownTime;  // no real start: no real wait
  Job held = real_job(10, at - 1, 40 * kHour);
  held.after_any = 3;  // waited for another job's run, not for the queue
  t.jobs.push_back(never);
  t.jobs.push_back(held);
  std::sort(t.jobs.begin(), t.jobs.end(),
            [](const Job& a, const Job& b) { return a.submit < b.submit; });

  LoggedWaits waits(t, {4, 2 * kDay, 3 * kDay, 3});
  EXPECT_EQ(waits.shape_jobs(), 5u);
  // The 3 nearest of the shape: jobs 3 (1 h before), 6 (2 h after), 2 (3 h before): 7, 3, 1 h.
  EXPECT_EQ(waits.wait_at(at), 3 * kHour);
  LoggedWaits five(t, {4, 2 * kDay, 3 * kDay, 5});
  // All five of the shape: 50, 1, 7, 3, 30 h; their median.
  EXPECT_EQ(five.wait_at(at), 7 * kHour);
}

TEST(LoggedWaits, TooFewRealJobsOfTheShapeNearAnInstantGiveNoWait) {
  Trace t;
  t.jobs = {real_job(1, kT0, kHour), real_job(2, kT0 + kHour, kHour),
            real_job(3, kT0 + 5 * kDay, kHour)};
  LoggedWaits waits(t, {4, 2 * kDay, kDay, 3});
  EXPECT_FALSE(waits.wait_at(kT0).has_value()) << "the third is 5 days away, past the window";
  LoggedWaits two(t, {4, 2 * kDay, kDay, 2});
  EXPECT_EQ(two.wait_at(kT0), kHour);
  Trace no_starts = t;
  for (Job& j : no_starts.jobs) j.start = j.end = kUnknownTime;
  EXPECT_FALSE(LoggedWaits(no_starts, {4, 2 * kDay, kDay, 1}).log_has_starts());
}

// No real job asks half of a 48-hour segment: the class's longest limits speak for it, the
// longest first, as far as the log needs to give each wait its jobs, never past the top quartile.
TEST(LoggedWaits, ASparseShapeIsPooledFromTheLongestLimitsOfItsSizeClass) {
  const std::vector<Seconds> limits = {18 * kHour, 18 * kHour, 12 * kHour, 12 * kHour,
                                       12 * kHour, 6 * kHour,  4 * kHour,  2 * kHour,
                                       kHour,      kHour,      kHour,      kHour};
  EXPECT_EQ(pooled_floor(limits, 2 * kDay, 2), 18 * kHour) << "two ask 18 h: enough";
  EXPECT_EQ(pooled_floor(limits, 2 * kDay, 3), 12 * kHour) << "the next longest limit";
  // The top quartile of 12 limits starts at the third longest (12 h): no further.
  EXPECT_EQ(pooled_floor(limits, 2 * kDay, 8), 12 * kHour);
  EXPECT_EQ(pooled_floor(limits, 12 * kHour, 8), 6 * kHour) << "half the segment, not pooled";
  EXPECT_EQ(pooled_floor({}, 2 * kDay, 5), kDay);
  EXPECT_EQ(pooled_floor({3 * kDay}, 2 * kDay, 5), kDay) << "the quartile asks more than half";
}

TEST(LoggedWaits, TheTableSaysWhereTheShapeWasPooledAndTooFewJobsStillDropAWait) {
  // 4-node jobs every 6 hours for 20 days, none asking a day: in turn 18 h, 12 h and thrice 1 h.
  Trace t;
  for (int i = 0; i < 80; ++i) {
    const Seconds limit = i % 5 == 0 ? 18 * kHour : i % 5 == 1 ? 12 * kHour : kHour;
    t.jobs.push_back(real_job(i + 1, kT0 + i * 6 * kHour, (i % 4) * kHour, 4, limit));
  }
  LoggedWaits waits(t, {4, 2 * kDay, kDay, 3});
  EXPECT_TRUE(waits.pooled());
  // Spread evenly, the 16 jobs asking 18 h give 1.6 a 2-day window, short of 3; with 12 h, 3.2.
  EXPECT_EQ(waits.limit_floor(), 12 * kHour);
  EXPECT_EQ(waits.shape_jobs(), 32u);
  EXPECT_TRUE(waits.wait_at(kT0 + 10 * kDay).has_value());
  EXPECT_NE(waits.pooling().find("pooled: limits >= 12h, 3 jobs behind each wait"),
            std::string::npos)
      << waits.pooling();
  EXPECT_NE(waits.describe().find("asking 12h or more"), std::string::npos) << waits.describe();

  // A shape that enough jobs have is not pooled, and says nothing of it.
  LoggedWaits exact(t, {4, 12 * kHour, kDay, 3});
  EXPECT_FALSE(exact.pooled());
  EXPECT_EQ(exact.pooling(), "");

  // Pooled down to the top quartile (12 h) and still short, an instant with too few jobs near it
  // has no wait.
  Trace gap = t;
  std::erase_if(gap.jobs, [](const Job& j) {
    return j.submit >= kT0 + 8 * kDay && j.submit < kT0 + 12 * kDay;
  });
  LoggedWaits gapped(gap, {4, 2 * kDay, kDay, 3});
  EXPECT_TRUE(gapped.pooled());
  EXPECT_FALSE(gapped.wait_at(kT0 + 10 * kDay).has_value());
}

// In the logged world no segment starts before it was submitted, censored or not, reactive never
// overlaps by more than its lead, and the oracle is never worse than reactive on a boundary.
TEST(LoggedWaits,
     InTheLoggedWorldNoSuccessorStartsBeforeItsSubmissionAndReactiveOverlapsAtMostItsLead) {
  const Trace t = waited_trace(4, 12);
  EvalConfig c = logged_eval(3);
  const EvalReport r = evaluate(t, c);
  ASSERT_GT(r.sample_times.size(), 10u);
  const auto& reactive = r.outcomes.at("reactive");
  const auto& oracle = r.outcomes.at("oracle");
  for (const auto& [name, outs] : r.outcomes)
    for (const auto& o : outs) {
      EXPECT_FALSE(o.episode.lacks_logged_wait);
      for (const auto& b : o.episode.boundaries) {
        EXPECT_GE(b.successor_start, b.successor_submit) << name << " at " << o.sample_time;
        EXPECT_GE(b.predecessor_start, b.predecessor_submit) << name << " at " << o.sample_time;
        if (name == "reactive" && !b.truncated) {
          EXPECT_LE(b.overlap(c.episode.chain), c.episode.reactive_lead) << o.sample_time;
        }
      }
    }
  for (std::size_t i = 0; i < reactive.size(); ++i) {
    const auto& rb = reactive[i].episode.boundaries.front();
    const auto& ob = oracle[i].episode.boundaries.front();
    if (rb.truncated || ob.truncated || rb.predecessor_start != ob.predecessor_start) continue;
    EXPECT_LE(std::llabs(ob.gap()), std::llabs(rb.gap())) << reactive[i].sample_time;
  }
}

TEST(LoggedWaits, SamplesWhoseSegmentsMeetTooFewRealJobsAreDroppedAndCounted) {
  Trace t = waited_trace(4, 12);
  // Days 5 to 7 have no job of the chain's shape: only 1-node jobs.
  for (Job& j : t.jobs)
    if (j.submit >= kT0 + 5 * kDay && j.submit < kT0 + 7 * kDay) j.nodes = 1;
  EvalConfig c = logged_eval();
  c.logged_window = 6 * kHour;
  const EvalReport r = evaluate(t, c);
  EXPECT_GT(r.dropped_few_logged_jobs, 0u);
  EXPECT_GT(r.sample_times.size(), 0u);
  EXPECT_EQ(r.metrics.at("reactive").overall.samples, r.sample_times.size());
  for (const auto& [name, outs] : r.outcomes) {
    EXPECT_EQ(outs.size(), r.sample_times.size()) << name;
    for (const auto& o : outs) EXPECT_FALSE(o.episode.lacks_logged_wait) << name;
  }
  EvalConfig replay = c;
  replay.world = SuccessorWait::kReplay;
  EvalReport same = evaluate(t, replay);
  EXPECT_EQ(same.dropped_few_logged_jobs, 0u);
  keep_samples(same, r.sample_times, replay);
  EXPECT_EQ(same.sample_times, r.sample_times);
  EXPECT_EQ(same.metrics.at("reactive").overall.samples, r.sample_times.size());
}

// A calibration marks jobs as dependent on their user's earlier ones, more or fewer by the months
// it was fitted on; the logged world's waits come from the yardstick log given, whatever the
// replayed trace's marks.
TEST(LoggedWaits, TheYardstickIsItsOwnLogNotTheJobsTheReplaysCalibrationMarkedDependent) {
  const Trace as_read = waited_trace(4, 12);
  Trace calibrated = as_read;
  for (std::size_t i = 1; i < calibrated.jobs.size(); i += 2)
    calibrated.jobs[i].after_any = calibrated.jobs[i - 1].id;
  EvalConfig c = logged_eval();
  c.policies = {"reactive"};
  const EvalReport plain = evaluate(as_read, c);
  const EvalReport marked = evaluate(calibrated, c);
  ASSERT_GT(plain.logged_shape_jobs, 0u);
  EXPECT_LT(marked.logged_shape_jobs, plain.logged_shape_jobs) << "the marked ones left out";
  c.yardstick_log = std::make_shared<const Trace>(as_read);
  const EvalReport yardstick = evaluate(calibrated, c);
  EXPECT_EQ(yardstick.logged_shape_jobs, plain.logged_shape_jobs);
}

// A job that started as its user's earlier job ended, after waiting beside room the log's own jobs
// left free, waited for that job: the yardstick marks it so, and the logged world leaves it out.
// One that waited on a full machine, and another user's started at the same instant, are not.
TEST(LoggedWaits, TheYardstickMarksAJobThatWaitedForItsUsersJobBesideRoom) {
  Trace t;
  const auto job = [](JobId id, const char* user, Seconds submit, Seconds start, Seconds end,
                      int nodes) {
    Job j = real_job(id, kT0 + submit, start - submit, nodes);
    j.user = user;
    j.end = kT0 + end;
    return j;
  };
  t.jobs = {job(1, "u", 0, 0, 10 * kHour, 1),
            job(2, "u", kHour, 10 * kHour + 30, 20 * kHour, 1),  // waited for job 1, beside room
            job(3, "v", kHour, 10 * kHour + 30, 20 * kHour, 1),  // another user's
            job(4, "u", 19 * kHour, 19 * kHour, 30 * kHour, 1),
            job(5, "w", 20 * kHour, 20 * kHour, 30 * kHour, 3),        // with 4: all 4 nodes
            job(6, "u", 21 * kHour, 30 * kHour + 30, 40 * kHour, 1)};  // waited on a full machine
  ClusterSpec machine;
  machine.nodes = 4;
  const Trace yardstick = yardstick_log(t, machine);
  std::vector<JobId> after;
  for (const Job& j : yardstick.jobs) after.push_back(j.after_any);
  EXPECT_EQ(after, (std::vector<JobId>{0, 1, 0, 0, 0, 0}));
}

// The simulator's log of a busy machine shared by four users: its starts and ends as run.
Trace simulated_log(unsigned seed) {
  Trace t = busy_trace(seed, 21, 2000);
  for (Job& j : t.jobs) j.user = "u" + std::to_string(j.id % 4);
  ClusterSpec machine;
  machine.nodes = 16;
  Simulator sim(machine, std::make_shared<const std::vector<SimJobSpec>>(to_sim_jobs(t.jobs)));
  sim.run_to_completion();
  for (std::size_t i = 0; i < t.jobs.size(); ++i) {
    const Seconds run = t.jobs[i].end - t.jobs[i].start;
    t.jobs[i].start = sim.start_time(static_cast<SimJobIndex>(i));
    t.jobs[i].end = t.jobs[i].start + run;
  }
  return t;
}

// Forward: a job's mark reads nothing after its start, so the log cut at any instant (its jobs
// submitted before it, as a forward fit sees them) marks every job that started before the cut as
// the whole log does: the months after the judged one never change its yardstick.
TEST(LoggedWaits, TheYardsticksMarksReadNothingAfterEachJobsStart) {
  ClusterSpec machine;
  machine.nodes = 16;
  const Trace whole = simulated_log(7);
  const Trace marked = yardstick_log(whole, machine);
  std::size_t dependent = 0;
  for (const Job& j : marked.jobs) dependent += j.after_any != 0;
  ASSERT_GT(dependent, 0u) << "the busy log has jobs that waited for their user's";
  for (const Seconds cut : {kT0 + 7 * kDay, kT0 + 14 * kDay}) {
    Trace before = whole;
    std::erase_if(before.jobs, [&](const Job& j) { return j.submit >= cut; });
    const Trace early = yardstick_log(before, machine);
    for (std::size_t i = 0; i < early.jobs.size(); ++i) {
      if (early.jobs[i].start < cut) {
        EXPECT_EQ(early.jobs[i].after_any, marked.jobs[i].after_any) << "job " << early.jobs[i].id;
      }
    }
  }
}

// Where every real job waited 2 hours, reactive's successor, submitted a minute before its
// predecessor's end, starts 2 hours later: each boundary, and a whole campaign's, is charged that.
TEST(LoggedWaits, EveryBoundaryAndWholeCampaignFollowsTheLoggedWaits) {
  Trace t = busy_trace(4, 12);
  for (Job& j : t.jobs) {
    const Seconds run = j.end - j.start;
    j.start = j.submit + 2 * kHour;
    j.end = j.start + run;
  }
  EvalConfig c = logged_eval();
  c.policies = {"reactive", "oracle"};
  c.episode.campaign.work = 15 * kHour;
  const EvalReport r = evaluate(t, c);
  ASSERT_GT(r.sample_times.size(), 0u);
  const Seconds expected = 2 * kHour - c.episode.reactive_lead;
  for (const auto& o : r.outcomes.at("reactive"))
    for (const auto& b : o.episode.boundaries) {
      EXPECT_EQ(b.predecessor_start - b.predecessor_submit, 2 * kHour);
      if (!b.truncated) {
        EXPECT_EQ(b.interruption(), expected) << o.sample_time;
      }
    }
  const CampaignMetrics& reactive = r.campaign.at("reactive");
  ASSERT_GT(reactive.compared, 0u);
  EXPECT_NEAR(reactive.idle_gpu_h,
              reactive.segments > 0 ? (reactive.segments - 1) * 4 * expected / 3600.0 : 0, 1e-6);
  EXPECT_LT(r.campaign.at("oracle").idle_gpu_h, reactive.idle_gpu_h);
}

TEST(WorldComparison, TheBothWorldTableFlagsWhereTheWorldsDisagreeByMoreThanOneAndAHalf) {
  EXPECT_FALSE(worlds_disagree(1.0, 1.5));
  EXPECT_TRUE(worlds_disagree(1.0, 1.6));
  EXPECT_TRUE(worlds_disagree(4.0, 1.0));
  EXPECT_FALSE(worlds_disagree(0.01, 0.05)) << "both below the floor: no disagreement";
  EvalReport replay, logged;
  logged.world = SuccessorWait::kLogged;
  replay.sample_times = logged.sample_times = {kT0};
  replay.metrics["reactive"].overall.mean_interruption_h = 1.0;
  logged.metrics["reactive"].overall.mean_interruption_h = 4.0;
  replay.metrics["average"].overall.mean_interruption_h = 1.0;
  logged.metrics["average"].overall.mean_interruption_h = 1.2;
  logged.logged_shape_jobs = 10;
  const std::string table = format_world_table(replay, logged, {"reactive", "average"}, 12);
  const auto line_of = [&](const std::string& name) {
    const auto at = table.find("  " + name);
    return table.substr(at, table.find('\n', at) - at);
  };
  EXPECT_NE(line_of("reactive").find('!'), std::string::npos) << table;
  EXPECT_EQ(line_of("average").find('!'), std::string::npos) << table;

  logged.log_has_starts = false;
  const std::string none = format_world_table(replay, logged, {"reactive"}, 12);
  EXPECT_NE(none.find("logged world: no figures: the log records no start times"),
            std::string::npos)
      << none;
  EXPECT_EQ(none.find("reactive"), std::string::npos) << "no figure where a world lacks data";
}

}  // namespace
}  // namespace mirage

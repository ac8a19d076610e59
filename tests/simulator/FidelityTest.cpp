// The fidelity report: real against simulated waits, by group, with exact figures on fixed data.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "mirage/simulator/Fidelity.h"

namespace mirage {
namespace {

TEST(Fidelity, RankCorrelationAveragesTiedRanks) {
  EXPECT_DOUBLE_EQ(rank_correlation({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(rank_correlation({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // Ranks of {0, 0, 0, 5}: 2, 2, 2, 4; of {1, 2, 3, 4}: 1..4. Pearson of those: 0.7745966...
  EXPECT_NEAR(rank_correlation({0, 0, 0, 5}, {1, 2, 3, 4}), 0.7745966692414834, 1e-12);
  // Ties must not borrow an order from the input: all-equal waits say nothing.
  EXPECT_DOUBLE_EQ(rank_correlation({0, 0, 0, 0}, {1, 2, 3, 4}), 0.0);
}

// Spearman's by its definition: each value's rank the count of smaller values plus the mean
// place among its equals, and Pearson's correlation of those ranks.
double spearman_by_counting(const std::vector<double>& a, const std::vector<double>& b) {
  const auto ranks = [](const std::vector<double>& v) {
    std::vector<double> r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      double below = 0, equal = 0;
      for (const double x : v) {
        below += x < v[i];
        equal += x == v[i];
      }
      r[i] = below + (equal + 1) / 2;
    }
    return r;
  };
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double mean = (static_cast<double>(a.size()) + 1) / 2;
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += (ra[i] - mean) * (rb[i] - mean);
    aa += (ra[i] - mean) * (ra[i] - mean);
    bb += (rb[i] - mean) * (rb[i] - mean);
  }
  return ab / std::sqrt(aa * bb);
}

// Samples as long as a log's, with waits' many ties (half of them none), negative values and
// fractions: ranked as the definition ranks them, whatever sort orders them.
TEST(Fidelity, RankCorrelationOfLongTiedSamplesIsSpearmansByDefinition) {
  std::mt19937_64 draw(59);
  std::vector<double> real(3000), sim(3000);
  for (std::size_t i = 0; i < real.size(); ++i) {
    const double u = std::uniform_real_distribution<>(0, 1)(draw);
    real[i] = u < 0.5 ? 0 : std::floor(std::exp(std::uniform_real_distribution<>(0, 12)(draw)));
    sim[i] = i % 7 == 0 ? -std::floor(50 * u) : real[i] * (0.5 + u) + (i % 3 == 0 ? 0.25 : 0);
  }
  EXPECT_NEAR(rank_correlation(real, sim), spearman_by_counting(real, sim), 1e-12);
  EXPECT_NEAR(rank_correlation(sim, real), spearman_by_counting(sim, real), 1e-12);
}

WaitFidelity figures(double ratio, double share_gap, double rank) {
  WaitFidelity f;
  f.mean_ratio = ratio;
  f.real_over_1h = 0.4;
  f.sim_over_1h = 0.4 + share_gap;
  f.rank_correlation = rank;
  return f;
}

// Weightings are chosen by how far their replay lies outside the targets: one within every target
// is not passed over for one nearer the middle of two targets that misses the third.
TEST(Fidelity, WithinEveryTargetIsCloserThanNearerTheMiddleButMissingOne) {
  const WaitFidelity within = figures(0.78, -0.06, 0.51);
  const WaitFidelity near_middle = figures(1.0, 0.0, 0.49);
  EXPECT_DOUBLE_EQ(within.target_miss(), 0.0);
  EXPECT_DOUBLE_EQ(figures(0.75, 0.07, 0.5).target_miss(), 0.0);  // the edges are within
  EXPECT_NEAR(near_middle.target_miss(), 0.1, 1e-12);             // 0.01 of rank, in 0.1s
  EXPECT_GT(within.centre_distance(), near_middle.centre_distance());
  EXPECT_TRUE(closer_to_targets(within, near_middle));
  EXPECT_FALSE(closer_to_targets(near_middle, within));
  // A mean ratio 1.33 squared misses by one target width either way; 14 points of gap, likewise.
  EXPECT_NEAR(figures(1.33 * 1.33, 0, 0.5).target_miss(), 1.0, 1e-12);
  EXPECT_NEAR(figures(0.75 / 1.33, 0, 0.5).target_miss(), 1.0, 1e-12);
  EXPECT_NEAR(figures(1, 0.14, 0.5).target_miss(), 1.0, 1e-12);
  // Both within every target: the one nearer the middle.
  EXPECT_TRUE(closer_to_targets(figures(0.95, 0.01, 0.6), within));
  // Both outside: the one less far outside, however near the middle its other figures lie.
  EXPECT_TRUE(closer_to_targets(figures(1.6, 0.0, 0.6), figures(1.0, 0.0, 0.3)));
}

TEST(Fidelity, SizeClassesAreOneTwoToSevenAndEightPlus) {
  EXPECT_EQ(size_class(1), "1 node");
  EXPECT_EQ(size_class(2), "2-7 nodes");
  EXPECT_EQ(size_class(7), "2-7 nodes");
  EXPECT_EQ(size_class(8), "8+ nodes");
  EXPECT_EQ(size_class(128), "8+ nodes");
}

TEST(Fidelity, FiguresOverallBySizeAndByMonth) {
  constexpr Seconds kJan = 1672531200;  // 2023-01-01T00:00:00Z
  constexpr Seconds kFeb = 1675209600;  // 2023-02-01T00:00:00Z
  const std::vector<WaitPair> pairs = {
      {kJan + 10, 1, 0, 0},
      {kJan + 20, 1, 2 * kHour, kHour / 2},
      {kFeb + 10, 8, 4 * kHour, 2 * kHour},
      {kFeb + 20, 16, 6 * kHour, 4 * kHour},
  };
  const FidelityReport r = measure_fidelity(pairs);
  EXPECT_EQ(r.overall.group, "all");
  EXPECT_EQ(r.overall.jobs, 4u);
  EXPECT_DOUBLE_EQ(r.overall.real_mean_s, 3.0 * kHour);
  EXPECT_DOUBLE_EQ(r.overall.sim_mean_s, 1.625 * kHour);
  EXPECT_DOUBLE_EQ(r.overall.mean_ratio, 1.625 / 3.0);
  EXPECT_DOUBLE_EQ(r.overall.real_over_1h, 0.75);
  EXPECT_DOUBLE_EQ(r.overall.sim_over_1h, 0.5);  // 2 h and 4 h are over; 30 min is not
  EXPECT_DOUBLE_EQ(r.overall.rank_correlation, 1.0);
  EXPECT_FALSE(r.overall.ratio_on_target());
  EXPECT_FALSE(r.overall.share_on_target());
  EXPECT_TRUE(r.overall.correlation_on_target());
  ASSERT_EQ(r.by_size.size(), 2u);  // no 2-7 node jobs: no row for them
  EXPECT_EQ(r.by_size[0].group, "1 node");
  EXPECT_EQ(r.by_size[0].jobs, 2u);
  EXPECT_EQ(r.by_size[1].group, "8+ nodes");
  EXPECT_DOUBLE_EQ(r.by_size[1].real_mean_s, 5.0 * kHour);
  EXPECT_DOUBLE_EQ(r.by_size[1].mean_ratio, 0.6);
  ASSERT_EQ(r.by_month.size(), 2u);
  EXPECT_EQ(r.by_month[0].group, "2023-01");
  EXPECT_EQ(r.by_month[1].group, "2023-02");
  EXPECT_DOUBLE_EQ(r.by_month[1].sim_median_s, 4.0 * kHour);  // rank round(0.5 * 1) = 1
  EXPECT_THROW(measure_fidelity({}), std::invalid_argument);
}

WaitPair job(Seconds submit, int nodes, Seconds limit, std::uint32_t user, Seconds real,
             Seconds sim) {
  return {submit, nodes, real, sim, limit, user};
}

TEST(Fidelity, TwinsAreAlikeJobsOfOtherUsersSubmittedWithinTenMinutes) {
  const std::vector<WaitPair> pairs = {
      job(0, 4, kHour, 1, 100, 10),    // twin of the next
      job(60, 4, kHour, 2, 200, 20),   //
      job(120, 3, kHour, 2, 300, 30),  // the same user as the next: an array, not a twin
      job(180, 3, kHour, 2, 400, 40),  //
      job(240, 8, kHour, 3, 500, 50),  // other nodes than the next
      job(300, 4, kHour, 4, 600, 60),  // a limit 2x the next one's
      job(360, 4, 2 * kHour, 5, 700, 70),
      job(5000, 2, kHour, 6, 1000, 1),  // twin of the next (limits 1 h and 1 h 10 min)
      job(5100, 2, 70 * kMinute, 7, 2000, 2),
      job(9000, 2, kHour, 8, 3000, 3),  // more than ten minutes before the next
      job(9700, 2, kHour, 9, 4000, 4),
  };
  const TwinAgreement t = twin_agreement(pairs);
  EXPECT_EQ(t.pairs, 2u);
  // Real waits (100, 200) and (1000, 2000) both ways round: ranks of a = 1 2 3 4 in order of
  // {100, 200, 1000, 2000}, their twins' b = 2 1 4 3. Pearson of those ranks: 0.6.
  EXPECT_NEAR(t.real_with_twin, 0.6, 1e-12);
  // Simulated waits 10, 20, 1, 2 against real 100, 200, 1000, 2000: ranks 3 4 1 2 vs 1 2 3 4.
  EXPECT_NEAR(t.sim_with_real, -0.6, 1e-12);
  EXPECT_EQ(t.unnamed_pairs, 0u);
}

// A log that names no users cannot tell twins from one user's array: the pairs are counted apart.
TEST(Fidelity, TwinsOfUnnamedUsersAreCountedApart) {
  const std::vector<WaitPair> pairs = {
      job(0, 4, kHour, 0, 100, 10),  // no user named: paired, and counted as such
      job(60, 4, kHour, 0, 200, 20),
      job(5000, 2, kHour, 6, 1000, 1),  // named users: a twin as any other
      job(5100, 2, kHour, 7, 2000, 2),
  };
  const TwinAgreement t = twin_agreement(pairs);
  EXPECT_EQ(t.pairs, 2u);
  EXPECT_EQ(t.unnamed_pairs, 1u);
}

TEST(Fidelity, AJobQueuedBehindOwnWhenItsUsersEarlierJobHadNotStarted) {
  const auto at = [](std::string user, Seconds submit, Seconds start) {
    Job j;
    j.user = std::move(user);
    j.submit = submit;
    j.start = start;
    return j;
  };
  const std::vector<Job> jobs = {
      at("alice", 0, 100),
      at("alice", 50, 150),           // alice's first had not started: behind own
      at("bob", 60, 500),             // another user's queue
      at("alice", 450, 460),          // all of alice's had started by then: lone
      at("bob", 500, 600),            // bob's first started that very second: lone
      at("", 70, 900),                // no user named: never behind
      at("carol", 10, kUnknownTime),  // never started (cancelled): holds nothing back
      at("carol", 20, 30),            //
      at("alice", 120, 400),          // out of order in the log: alice's second (150) pends
  };
  const std::vector<char> behind = queued_behind_own(jobs);
  EXPECT_EQ(behind, (std::vector<char>{0, 1, 0, 0, 0, 0, 0, 0, 1}));
}

TEST(Fidelity, LoneJobsAndJobsBehindTheirUsersOwnAreFiguredApart) {
  std::vector<WaitPair> pairs = {
      job(0, 1, kHour, 1, 0, 60), job(10, 1, kHour, 1, 4 * kHour, 2 * kHour),
      job(20, 1, kHour, 2, 60, 120), job(30, 1, kHour, 0, 5, 5),  // no user: in neither group
  };
  pairs[1].behind_own = true;
  const FidelityReport r = measure_fidelity(pairs);
  ASSERT_EQ(r.by_user_queue.size(), 2u);
  EXPECT_EQ(r.by_user_queue[0].group, "lone");
  EXPECT_EQ(r.by_user_queue[0].jobs, 2u);
  EXPECT_DOUBLE_EQ(r.by_user_queue[0].real_mean_s, 30.0);
  EXPECT_DOUBLE_EQ(r.by_user_queue[0].mean_ratio, 3.0);
  EXPECT_EQ(r.by_user_queue[1].group, "behind own");
  EXPECT_EQ(r.by_user_queue[1].jobs, 1u);
  EXPECT_DOUBLE_EQ(r.by_user_queue[1].mean_ratio, 0.5);
  for (WaitPair& p : pairs) p.user = 0;  // a log naming no users: no such rows
  EXPECT_TRUE(measure_fidelity(pairs).by_user_queue.empty());
}

TEST(Fidelity, PairsEachJobWithItsSimulatedStartInsideTheWindow) {
  std::vector<Job> jobs(3);
  for (int i = 0; i < 3; ++i) {
    jobs[i].id = i + 1;
    jobs[i].submit = 1000 + 100 * i;
    jobs[i].start = jobs[i].submit + 50;
    jobs[i].end = jobs[i].start + 600;
    jobs[i].time_limit = 3600;
    jobs[i].nodes = 2;
  }
  ClusterSpec spec;
  spec.nodes = 2;
  Simulator sim(spec, std::make_shared<const std::vector<SimJobSpec>>(to_sim_jobs(jobs)));
  sim.run_to_completion();
  std::size_t without_start = 0;
  const auto all = pair_waits(jobs, sim, 0, 0, without_start);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].real_wait, 50);
  EXPECT_EQ(all[0].sim_wait, sim.start_time(0) - 1000);
  EXPECT_EQ(all[2].sim_wait, sim.start_time(2) - 1200);
  const auto window = pair_waits(jobs, sim, 1100, 1200, without_start);
  ASSERT_EQ(window.size(), 1u);
  EXPECT_EQ(window[0].submit, 1100);
  EXPECT_EQ(without_start, 0u);
  // Whether a job queued behind its user's own is told from the whole log, not the window: the
  // job at 1100 was submitted while the user's job of 1000 (started 1050) had started.
  for (Job& j : jobs) j.user = "u";
  jobs[0].start = 1150;  // now pending at 1100
  const auto behind = pair_waits(jobs, sim, 1100, 1200, without_start);
  ASSERT_EQ(behind.size(), 1u);
  EXPECT_TRUE(behind[0].behind_own);
  EXPECT_EQ(behind[0].user, 1u);
}

// Every figure of `b` is `a`'s, to the bit.
void expect_same_figures(const WaitFidelity& a, const WaitFidelity& b) {
  EXPECT_EQ(a.group, b.group);
  EXPECT_EQ(a.jobs, b.jobs);
  for (const auto& [of_a, of_b] : {std::pair{a.real_mean_s, b.real_mean_s},
                                   {a.sim_mean_s, b.sim_mean_s},
                                   {a.real_median_s, b.real_median_s},
                                   {a.sim_median_s, b.sim_median_s},
                                   {a.real_p90_s, b.real_p90_s},
                                   {a.sim_p90_s, b.sim_p90_s},
                                   {a.real_over_1h, b.real_over_1h},
                                   {a.sim_over_1h, b.sim_over_1h},
                                   {a.rank_correlation, b.rank_correlation},
                                   {a.mean_ratio, b.mean_ratio}})
    EXPECT_EQ(of_a, of_b);
}

// What a calibration's replays are judged by: the report's overall figures, to the bit, without
// the jobs the log never started or the replay never did.
TEST(Fidelity, OverallFiguresOfAReplayAreTheReportsOverall) {
  std::vector<Job> jobs(6);
  std::vector<Seconds> waits(6);
  for (int i = 0; i < 6; ++i) {
    jobs[i].id = i + 1;
    jobs[i].user = i % 2 ? "a" : "b";
    jobs[i].submit = 1000 + 100 * i;
    jobs[i].start = jobs[i].submit + 40 * i * i;
    jobs[i].end = jobs[i].start + 600;
    jobs[i].nodes = 1 + i;
    waits[i] = 7000 - 900 * i;
  }
  jobs[1].start = kUnknownTime;  // the log never started it
  waits[4] = kUnknownTime;       // the replay never did
  std::size_t without_start = 0;
  const WaitFidelity report =
      measure_fidelity(pair_waits(jobs, waits, 0, 0, without_start)).overall;
  const WaitFidelity overall = measure_overall_fidelity(jobs, waits);
  EXPECT_EQ(overall.jobs, 4u);
  expect_same_figures(report, overall);
  EXPECT_THROW(measure_overall_fidelity(jobs, std::vector<Seconds>(6, kUnknownTime)),
               std::invalid_argument);
}

// A calibration's replays of one log share the log's side of their figures (ranked once): each
// replay's figures are those worked out whole, to the bit; where the replay left a job the log
// started unstarted (fewer jobs compared), they are worked out whole again.
TEST(Fidelity, ReplaysSharingTheLogsSideHaveTheFiguresWorkedOutWhole) {
  std::vector<Job> jobs(7);
  for (int i = 0; i < 7; ++i) {
    jobs[i].id = i + 1;
    jobs[i].submit = 1000 + 100 * i;
    jobs[i].start = jobs[i].submit + 700 * ((i * 5) % 7);  // ties and a wait over the hour
    jobs[i].end = jobs[i].start + 600;
  }
  jobs[2].start = kUnknownTime;  // the log never started it: in no replay's figures
  const WaitSideFigures logged = logged_wait_figures(jobs);
  EXPECT_EQ(logged.jobs, 6u);
  std::vector<Seconds> waits = {4000, 9000, 10, 4000, 0, 7200, 3599};
  std::vector<Seconds> short_one = waits;
  short_one[5] = kUnknownTime;  // the replay never started it
  for (const auto& replay : {waits, short_one}) {
    expect_same_figures(measure_overall_fidelity(jobs, replay),
                        measure_overall_fidelity(jobs, logged, replay));
  }
  EXPECT_EQ(measure_overall_fidelity(jobs, logged, short_one).jobs, 5u);
  // The log's side of other jobs is no side of these.
  std::vector<Job> fewer(jobs.begin(), jobs.begin() + 4);
  EXPECT_THROW(measure_overall_fidelity(jobs, logged_wait_figures(fewer), waits),
               std::invalid_argument);
}

}  // namespace
}  // namespace mirage

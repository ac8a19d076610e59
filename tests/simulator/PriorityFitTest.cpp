// The multifactor weights fitted to the priorities a log records: each factor from the evidence
// that shows it, and nothing from a log that shows none.
#include <gtest/gtest.h>

#include <random>

#include "mirage/simulator/PriorityFit.h"

namespace mirage {
namespace {

ClusterSpec machine(int nodes) {
  ClusterSpec c;
  c.nodes = nodes;
  return c;
}

// `n` jobs of one user (so fairshare ranks nobody), sizes 1..nodes, waits 0..6 days, and the
// priority `score(size share, age factor)` plus a little noise.
template <typename Score>
std::vector<Job> jobs_scored(int n, int nodes, Score score) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> size(1, nodes);
  std::uniform_int_distribution<Seconds> wait(0, 6 * kDay);
  std::normal_distribution<double> noise(0, 2);
  std::vector<Job> jobs;
  for (int i = 0; i < n; ++i) {
    Job j;
    j.id = i + 1;
    j.user = "u";
    j.submit = i * kHour;
    j.start = j.submit + wait(rng);
    j.end = j.start + kHour;
    j.nodes = size(rng);
    const double share = static_cast<double>(j.nodes) / nodes;
    const double age = static_cast<double>(j.start - j.submit) / (7.0 * kDay);
    j.priority = static_cast<std::int64_t>(std::llround(score(share, age) + noise(rng)));
    jobs.push_back(j);
  }
  return jobs;
}

TEST(PriorityFit, AgeAndJobSizeWeightsAreRecovered) {
  const auto jobs =
      jobs_scored(400, 32, [](double share, double age) { return 1000 + 300 * share + 200 * age; });
  const auto fit = fit_priority(jobs, machine(32));
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->weights.weight_job_size, 300, 10);
  EXPECT_FALSE(fit->weights.favor_small);
  EXPECT_NEAR(fit->weights.weight_age, 200, 10);
  EXPECT_GT(fit->r2, 0.95);
}

TEST(PriorityFit, PrioritiesFallingWithSizeFavorSmallJobs) {
  const auto jobs = jobs_scored(400, 32, [](double share, double) { return 2000 - 500 * share; });
  const auto fit = fit_priority(jobs, machine(32));
  ASSERT_TRUE(fit);
  EXPECT_TRUE(fit->weights.favor_small);
  EXPECT_NEAR(fit->weights.weight_job_size, 500, 10);
  EXPECT_EQ(fit->weights.weight_age, 0);  // the log shows no ageing: no weight for it
}

// A user who ran far more than the other gets the lower priorities: fairshare.
TEST(PriorityFit, HeavyUsersRankedLowerIsFairshare) {
  std::vector<Job> jobs;
  for (int i = 0; i < 300; ++i) {
    Job j;
    j.id = i + 1;
    const bool heavy = i % 3 != 0;
    j.user = heavy ? "heavy" : "light";
    j.submit = i * kHour;
    j.start = j.submit;
    j.end = j.start + (heavy ? 10 * kHour : kHour);
    j.nodes = 1;
    j.priority = heavy ? 1000 : 1400;
    jobs.push_back(j);
  }
  const auto fit = fit_priority(jobs, machine(8));
  ASSERT_TRUE(fit);
  EXPECT_GT(fit->weights.weight_fairshare, 100);
}

// A few boosted jobs (a QOS the log does not name) are set aside, not fitted.
TEST(PriorityFit, BoostedJobsAreSetAside) {
  auto jobs = jobs_scored(400, 32, [](double share, double) { return 2000 - 500 * share; });
  for (int i = 0; i < 4; ++i) jobs[static_cast<std::size_t>(i) * 50].priority = 9000;
  const auto fit = fit_priority(jobs, machine(32));
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->outliers, 4u);
  EXPECT_NEAR(fit->weights.weight_job_size, 500, 10);
}

TEST(PriorityFit, NothingIsFittedWithoutPrioritiesThatVary) {
  auto jobs = jobs_scored(400, 32, [](double, double) { return 1000; });
  EXPECT_FALSE(fit_priority(jobs, machine(32)));  // constant: no factor explains anything
  for (Job& j : jobs) j.priority = -1;
  EXPECT_FALSE(fit_priority(jobs, machine(32)));  // no column
  const auto few = jobs_scored(50, 32, [](double share, double) { return 2000 - 500 * share; });
  EXPECT_FALSE(fit_priority(few, machine(32)));  // too few to fit
}

}  // namespace
}  // namespace mirage

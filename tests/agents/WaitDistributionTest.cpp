// The successor's wait as a distribution conditioned on the queue, the quantile policy that reads
// it, and the check of its intervals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "mirage/agents/Baselines.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/agents/WaitDistribution.h"
#include "mirage/core/Error.h"
#include "support/TempDir.h"

namespace mirage {
namespace {

constexpr Seconds kT0 = 1'700'006'400;  // a midnight

// Two kinds of day on a 16-node machine, 40 of each: on even days a 1-node job meets an empty
// machine and waits k minutes (k = 1..40); on odd days a 16-node job holds the machine from
// midnight (limit 10 h) and a 1-node job submitted at 01:00 meets it (9 h planned) and waits
// 5 h + k minutes.
Trace two_kinds_of_day(int days_each = 40) {
  Trace t;
  t.source = "two-kinds";
  t.machine_nodes = 16;
  JobId id = 1;
  const auto add = [&](Seconds submit, Seconds wait, int nodes, Seconds limit) {
    Job j;
    j.id = id++;
    j.submit = submit;
    j.start = submit + wait;
    j.end = j.start + kHour;
    j.nodes = nodes;
    j.time_limit = limit;
    t.jobs.push_back(j);
  };
  for (int k = 1; k <= days_each; ++k) {
    const Seconds even = kT0 + 2 * (k - 1) * kDay;
    add(even, k * kMinute, 1, 48 * kHour);
    const Seconds odd = even + kDay;
    add(odd, 0, 16, 10 * kHour);
    add(odd + kHour, 5 * kHour + k * kMinute, 1, 48 * kHour);
  }
  return t;
}

ClusterSpec machine16() {
  ClusterSpec c;
  c.nodes = 16;
  c.priority = PriorityParameters::unweighted();
  return c;
}

WaitDistributionSpec one_node_chain() {
  WaitDistributionSpec s;
  s.nodes = 1;
  s.time_limit = 48 * kHour;
  s.from = kT0;
  s.to = kT0 + 100 * kDay;
  return s;
}

std::string temp_file(const std::string& name) {
  return test::temp_file(name);
}

TEST(WaitDistribution, RealWaitsAreGroupedByTheWaitTheQueuePlanned) {
  const WaitDistribution d =
      fit_wait_distribution(two_kinds_of_day(), machine16(), one_node_chain());
  EXPECT_EQ(d.jobs(), 80u);  // the 16-node jobs are of another size class
  ASSERT_EQ(d.bins.size(), 2u);
  EXPECT_EQ(d.bins[0].planned_up_to, 0);
  EXPECT_EQ(d.bins[0].jobs, 40u);
  EXPECT_EQ(d.bins[1].planned_up_to, 9 * kHour);
  // Median of 1..40 minutes: 20.5 minutes; the extremes are the extremes.
  EXPECT_EQ(d.quantile(0, 0.5), 1230);
  EXPECT_EQ(d.quantile(0, 0.0), kMinute);
  EXPECT_EQ(d.quantile(0, 1.0), 40 * kMinute);
  EXPECT_EQ(d.quantile(9 * kHour, 0.5), 5 * kHour + 1230);
  // Planned waits between the bins' read the next bin; beyond the last, the last.
  EXPECT_EQ(d.quantile(kHour, 0.5), 5 * kHour + 1230);
  EXPECT_EQ(d.quantile(30 * kHour, 0.5), 5 * kHour + 1230);
  // Between stored levels (every 5%), interpolated: 0.525 is halfway from 0.5 (1,230 s) to 0.55
  // (1,347 s), rounded to the second.
  EXPECT_EQ(d.bins[0].waits[11], 1347);
  EXPECT_EQ(d.quantile(0, 0.525), 1289);
}

TEST(WaitDistribution, WhereNoJobAsksHalfASegmentTheLongestJobsSpeakForIt) {
  WaitDistributionSpec spec = one_node_chain();
  EXPECT_EQ(fit_wait_distribution(two_kinds_of_day(), machine16(), spec).spec.min_job_limit,
            24 * kHour);
  spec.time_limit = 200 * kHour;  // half is 100 h; the log's 1-node jobs ask 48 h at most
  const WaitDistribution d = fit_wait_distribution(two_kinds_of_day(), machine16(), spec);
  EXPECT_EQ(d.spec.min_job_limit, 48 * kHour);
  EXPECT_EQ(d.jobs(), 80u);
}

TEST(WaitDistribution, IntervalsHoldTheirShareOfTheJobsTheyWereFittedOn) {
  const Trace t = two_kinds_of_day();
  const BinnedWaitPredictor d(fit_wait_distribution(t, machine16(), one_node_chain()));
  const IntervalCoverage c = check_wait_intervals(d, t, machine16(), 1, kT0, kT0 + 100 * kDay);
  EXPECT_EQ(c.jobs, 80u);
  EXPECT_DOUBLE_EQ(c.in_50, 0.5);
  EXPECT_DOUBLE_EQ(c.in_90, 0.9);
  // Later jobs that waited longer than any fitted: outside both intervals.
  Trace later = t;
  for (Job& j : later.jobs) j.start += 20 * kHour, j.end += 20 * kHour;
  const IntervalCoverage off =
      check_wait_intervals(d, later, machine16(), 1, kT0, kT0 + 100 * kDay);
  EXPECT_EQ(off.jobs, 80u);
  EXPECT_DOUBLE_EQ(off.in_90, 0.0);
}

TEST(WaitDistribution, TooFewJobsToFitSaySo) {
  try {
    fit_wait_distribution(two_kinds_of_day(14), machine16(), one_node_chain());
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("only 28 jobs of 1 node with a limit of 1d or more "
                                         "started in 2023-11-15 .. 2024-02-23 (at least 30"),
              std::string::npos)
        << e.what();
  }
}

TEST(WaitDistribution, ReadsBackWhatItWrote) {
  const WaitDistribution d =
      fit_wait_distribution(two_kinds_of_day(), machine16(), one_node_chain());
  const std::string path = temp_file("waits.toml");
  write_wait_distribution(path, d);
  const WaitDistribution back = read_wait_distribution(path);
  EXPECT_EQ(back.trace, "two-kinds");
  EXPECT_EQ(back.spec.nodes, 1);
  EXPECT_EQ(back.spec.gpus_per_node, 0);
  EXPECT_EQ(back.spec.time_limit, 48 * kHour);
  EXPECT_EQ(back.spec.min_job_limit, 24 * kHour);
  EXPECT_EQ(back.spec.from, d.spec.from);
  EXPECT_EQ(back.spec.to, d.spec.to);
  ASSERT_EQ(back.bins.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.bins[i].planned_up_to, d.bins[i].planned_up_to);
    EXPECT_EQ(back.bins[i].jobs, d.bins[i].jobs);
    EXPECT_EQ(back.bins[i].waits, d.bins[i].waits);
  }
  // A limit in seconds that is no whole minute (an SWF log's 3,599 s) comes back as it was.
  WaitDistribution odd = d;
  odd.spec.min_job_limit = 3599;
  write_wait_distribution(path, odd);
  EXPECT_EQ(read_wait_distribution(path).spec.min_job_limit, 3599);
  EXPECT_EQ(back.quantile(9 * kHour, 0.8), d.quantile(9 * kHour, 0.8));
  std::remove(path.c_str());
}

TEST(WaitDistribution, ABadFileNamesItsLineAndKey) {
  const auto error_of = [](const std::string& text) {
    const std::string path = temp_file("bad-waits.toml");
    std::ofstream(path) << text;
    try {
      read_wait_distribution(path);
    } catch (const InputError& e) {
      std::remove(path.c_str());
      return std::string(e.what());
    }
    std::remove(path.c_str());
    return std::string("no error");
  };
  EXPECT_NE(error_of("chain_nodes = 1\ncolour = 3\n").find(":2: field 'colour': unknown key"),
            std::string::npos);
  std::string waits = "[";
  for (int k = 0; k < 21; ++k) waits += std::to_string(k == 20 ? 0 : k) + (k < 20 ? ", " : "]");
  EXPECT_NE(error_of("[[bin]]\nplanned_up_to_s = 0\njobs = 40\nwaits_s = " + waits + "\n")
                .find(":4: field 'bin.waits_s': expected 21 waits in seconds, 0 or more, never "
                      "decreasing"),
            std::string::npos);
  // The header says which chain and months it speaks for: without it, nothing can check that.
  EXPECT_NE(error_of("chain_nodes = 1\n").find("field 'limit_min': missing"), std::string::npos);
  EXPECT_NE(error_of("chain_nodes = 3000000000\n").find(":1: field 'chain_nodes'"),
            std::string::npos);
  const std::string header = "chain_nodes = 1\nlimit_min = 2880\nfitted_from = \"2023-01-01\"\n";
  EXPECT_NE(error_of(header + "fitted_to = \"2022-12-01\"\n")
                .find(":4: field 'fitted_to': must be after fitted_from"),
            std::string::npos);
  EXPECT_NE(error_of(header + "fitted_to = \"2023-02-01\"\n").find("has no [[bin]]"),
            std::string::npos);
}

// One bin whose k-th level (k = 0..20) is k hours.
std::shared_ptr<const WaitPredictor> hours_by_level() {
  WaitDistribution d;
  WaitDistribution::Bin b;
  b.jobs = 100;
  for (int k = 0; k < WaitDistribution::kLevels; ++k)
    b.waits[static_cast<std::size_t>(k)] = k * kHour;
  d.bins.push_back(b);
  return std::make_shared<const BinnedWaitPredictor>(std::move(d));
}

TEST(QuantilePolicy, SubmitsOnceRemainingTimeFallsToTheQuantileOfTheWait) {
  QuantilePolicy policy(hours_by_level(), 0.8);  // 16 h
  Observation obs;
  obs.latest.total_nodes = 4;  // an empty machine: the forecast plans no wait
  obs.campaign = CampaignView::running_chain(1, 0, 48 * kHour, 0, 31 * kHour);  // 17 h left
  EXPECT_EQ(policy.decide(obs).action, Action::kWait);
  obs.campaign.predecessor_run = 32 * kHour;
  const Decision go = policy.decide(obs);
  EXPECT_EQ(go.action, Action::kSubmitNow);
  EXPECT_EQ(go.reason,
            "predecessor ends in 16h; the successor waits 16h or less in 80% of cases, as the "
            "log's jobs in a queue like this one did");
  EXPECT_EQ(policy.name(), "quantile@0.8");
  EXPECT_EQ(QuantilePolicy(hours_by_level()).name(), "quantile");
  EXPECT_THROW(QuantilePolicy(hours_by_level(), std::nan("")), std::invalid_argument);
  EXPECT_THROW(QuantilePolicy(hours_by_level(), 1.0), std::invalid_argument);
  // A lower level (overlap dearer) submits later.
  QuantilePolicy cautious(hours_by_level(), 0.2);
  EXPECT_EQ(cautious.decide(obs).action, Action::kWait);
}

TEST(QuantilePolicy, TheRegistryMakesItWithADistributionAndItsLevel) {
  PolicyContext context;
  context.waits = hours_by_level();
  EXPECT_EQ(make_policy("quantile@0.8", context)->name(), "quantile@0.8");
  EXPECT_EQ(make_policy("quantile", context)->name(), "quantile");
  EXPECT_TRUE(is_known_policy("quantile@0.3"));
  EXPECT_FALSE(is_known_policy("quantile@1.5"));
  const auto message = [&](const std::string& name, const PolicyContext& c) {
    try {
      make_policy(name, c);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("quantile", {})
                .find("'quantile' needs the distribution of the successor's "
                      "wait on this cluster"),
            std::string::npos);
  EXPECT_NE(message("quantile@1.5", context)
                .find("the level of 'quantile@1.5' is out of range (a quantile between 0 and 1"),
            std::string::npos);
  EXPECT_NE(message("quantile@2h", context).find("out of range"), std::string::npos);
  // Swept from the least overlap (low levels) to the most.
  const auto sweep = risk_sweep("quantile");
  ASSERT_EQ(sweep.size(), 9u);
  EXPECT_EQ(parse_policy_spec(sweep.front()).level, std::optional<double>(0.1));
  EXPECT_EQ(parse_policy_spec(sweep.back()).level, std::optional<double>(0.9));
}

}  // namespace
}  // namespace mirage

// The baselines and their one risk knob, a lead.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "mirage/agents/Baselines.h"
#include "mirage/agents/Evaluation.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/agents/Probe.h"
#include "mirage/agents/ReactiveWhatIf.h"
#include "mirage/core/Error.h"
#include "support/BusyTrace.h"

namespace mirage {
namespace {

Observation running_predecessor(Seconds run) {
  Observation obs;
  obs.latest.recent_starts = 100;
  obs.latest.recent_mean_wait_s = 3 * kHour;
  obs.campaign.predecessor_running = true;
  obs.campaign.predecessor_limit = 48 * kHour;
  obs.campaign.predecessor_run = run;
  return obs;
}

TEST(Baselines, AverageSubmitsOnceRemainingTimeFallsBelowTheRecentMeanWait) {
  AveragePolicy average;
  Observation obs;
  obs.latest.recent_starts = 100;
  obs.latest.recent_mean_wait_s = 3 * kHour;
  obs.campaign.predecessor_running = true;
  obs.campaign.predecessor_limit = 48 * kHour;
  obs.campaign.predecessor_run = 44 * kHour;
  EXPECT_EQ(average.decide(obs).action, Action::kWait);
  obs.campaign.predecessor_run = 45 * kHour;
  const Decision go = average.decide(obs);
  EXPECT_EQ(go.action, Action::kSubmitNow);
  EXPECT_EQ(go.reason, "predecessor ends in 3h; the last 100 jobs to start waited 3h on average");
  obs.campaign.predecessor_running = false;
  EXPECT_EQ(average.decide(obs).action, Action::kWait);
}

TEST(Baselines, ForecastSubmitsOnceTheSuccessorsPlannedStartReachesThePredecessorsEnd) {
  ForecastPolicy forecast;
  Observation obs;
  obs.latest.total_nodes = 4;
  // The machine is full for 6 h more (the predecessor is not in this queue view).
  obs.latest.running = {{10 * kHour, 4, 0, 0, 4 * kHour}};
  obs.campaign.predecessor_running = true;
  obs.campaign.predecessor_limit = 48 * kHour;
  obs.campaign.successor_nodes = 2;
  obs.campaign.successor_limit = 48 * kHour;
  obs.campaign.predecessor_run = 41 * kHour;  // 7 h left > 6 h planned wait
  EXPECT_EQ(forecast.decide(obs).action, Action::kWait);
  obs.campaign.predecessor_run = 42 * kHour;  // 6 h left
  const Decision go = forecast.decide(obs);
  EXPECT_EQ(go.action, Action::kSubmitNow);
  EXPECT_EQ(go.reason, "predecessor ends in 6h; 2-node wait estimated 6h");
  obs.campaign.predecessor_running = false;
  EXPECT_EQ(forecast.decide(obs).action, Action::kWait);
  // Recently ended jobs ran half of their limits: the running job has 1 h more, not 6 h, so
  // forecast-recent waits until the predecessor has 1 h left.
  obs.campaign.predecessor_running = true;
  obs.latest.recent_runtime_shares.assign(RuntimeGuess::kMinRecentEnds, 0.5f);
  ForecastPolicy recent(RuntimeGuess::recent_ends());
  EXPECT_EQ(recent.decide(obs).action, Action::kWait);
  obs.campaign.predecessor_run = 47 * kHour;
  EXPECT_EQ(recent.decide(obs).action, Action::kSubmitNow);
}

// Slurm's own estimate of the successor's wait against the predecessor's remaining time, less
// the lead; without an estimate it leaves the boundary to the fallback.
TEST(Baselines, SlurmEstimateSubmitsOnceSlurmsEstimatedWaitReachesThePredecessorsEnd) {
  SlurmEstimatePolicy estimate;
  Observation obs;
  obs.campaign.predecessor_running = true;
  obs.campaign.predecessor_limit = 48 * kHour;
  obs.campaign.predecessor_run = 40 * kHour;  // 8 h left
  obs.campaign.successor_nodes = 8;
  EXPECT_TRUE(estimate.reads_slurm_estimate());
  EXPECT_EQ(estimate.decide(obs).action, Action::kWait);  // no estimate
  obs.campaign.slurm_estimated_wait = 7 * kHour;
  EXPECT_EQ(estimate.decide(obs).action, Action::kWait);
  obs.campaign.slurm_estimated_wait = 8 * kHour;
  const Decision go = estimate.decide(obs);
  EXPECT_EQ(go.action, Action::kSubmitNow);
  EXPECT_EQ(go.reason, "predecessor ends in 8h; Slurm estimates a 8-node wait of 8h");
  obs.campaign.slurm_estimated_wait = 7 * kHour;
  EXPECT_EQ(SlurmEstimatePolicy(kHour).decide(obs).action, Action::kSubmitNow);
  EXPECT_EQ(make_policy("slurm-estimate@2h")->name(), "slurm-estimate@2h");
  EXPECT_FALSE(ForecastPolicy().reads_slurm_estimate());
}

TEST(Baselines, ReactiveAlwaysWaitsForTheFallback) {
  ReactivePolicy reactive;
  Observation obs;
  obs.campaign.predecessor_running = true;
  obs.campaign.predecessor_limit = 100;
  obs.campaign.predecessor_run = 99;
  EXPECT_EQ(reactive.decide(obs).action, Action::kWait);
}

TEST(RiskKnob, AverageWithALeadSubmitsThatMuchEarlierAndANegativeOneLater) {
  // `average` submits at 3 h left (the mean wait); with 2 h of lead at 5 h, with -1 h at 2 h.
  for (const auto& [name, left] : std::vector<std::pair<std::string, Seconds>>{
           {"average", 3 * kHour}, {"average@2h", 5 * kHour}, {"average@-1h", 2 * kHour}}) {
    auto p = make_policy(name);
    EXPECT_EQ(p->name(), name);
    EXPECT_EQ(p->decide(running_predecessor(48 * kHour - left - 60)).action, Action::kWait) << name;
    EXPECT_EQ(p->decide(running_predecessor(48 * kHour - left)).action, Action::kSubmitNow) << name;
  }
}

TEST(RiskKnob, StaticSubmitsAtAFixedLeadWhateverTheQueue) {
  auto p = make_policy("static@6h");
  EXPECT_EQ(p->name(), "static@6h");
  Observation obs = running_predecessor(42 * kHour - 60);
  obs.latest.recent_mean_wait_s = 40 * kHour;  // the queue says nothing to it
  EXPECT_EQ(p->decide(obs).action, Action::kWait);
  obs.campaign.predecessor_run = 42 * kHour;
  const Decision go = p->decide(obs);
  EXPECT_EQ(go.action, Action::kSubmitNow);
  EXPECT_EQ(go.reason, "predecessor ends in 6h, within the lead of 6h");
  // Alone, an hour's lead; at 0, the fallback's own instant: reactive.
  EXPECT_EQ(make_policy("static")->name(), "static@1h");
  EXPECT_EQ(make_policy("static@0")->decide(running_predecessor(48 * kHour - 60)).action,
            Action::kWait);
}

TEST(RiskKnob, ForecastsLeadIsAMarginOnThePlannedWait) {
  Observation obs = running_predecessor(0);
  obs.latest.total_nodes = 4;
  obs.latest.running = {{10 * kHour, 4, 0, 0, 4 * kHour}};  // full for 6 h more
  obs.campaign.successor_nodes = 2;
  obs.campaign.successor_limit = 48 * kHour;
  auto p = make_policy("forecast@1h");
  EXPECT_EQ(p->name(), "forecast@1h");
  obs.campaign.predecessor_run = 41 * kHour - 60;  // 7 h and a minute left > 6 h + 1 h
  EXPECT_EQ(p->decide(obs).action, Action::kWait);
  obs.campaign.predecessor_run = 41 * kHour;
  EXPECT_EQ(p->decide(obs).action, Action::kSubmitNow);
}

TEST(RiskKnob, ALeadOnAPolicyWithoutOneOrOutOfItsRangeIsRefusedByName) {
  const auto message = [](const std::string& name) {
    try {
      make_policy(name);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("reactive@1h").find("'reactive' has no risk knob"), std::string::npos);
  EXPECT_NE(message("static@-1h").find("the lead of 'static@-1h' is out of range (0 to 7d)"),
            std::string::npos);
  EXPECT_NE(message("average@9d").find("out of range (-2d to 7d)"), std::string::npos);
  EXPECT_FALSE(is_known_policy("average@9d"));
  EXPECT_TRUE(is_known_policy("forecast-recent@-2h"));
  // A model file's path may hold an '@': only a lead after the last one is read as a knob.
  EXPECT_EQ(parse_policy_spec("runs/a@b.mirage-model").family, "runs/a@b.mirage-model");
  EXPECT_EQ(parse_policy_spec("average@90m").lead, std::optional<Seconds>(90 * kMinute));
}

TEST(RiskKnob, EachFamilyWithAKnobSweepsFromLeastToMostOverlap) {
  for (const std::string family :
       {"average", "forecast", "forecast-recent", "slurm-estimate", "static"}) {
    const auto names = risk_sweep(family);
    ASSERT_GE(names.size(), 5u) << family;
    std::vector<Seconds> leads;
    for (const auto& n : names) {
      const PolicySpec spec = parse_policy_spec(n);
      EXPECT_EQ(spec.family, family);
      ASSERT_TRUE(spec.lead) << n;
      leads.push_back(*spec.lead);
      EXPECT_TRUE(is_known_policy(n)) << n;
    }
    EXPECT_TRUE(std::is_sorted(leads.begin(), leads.end())) << family;
  }
  EXPECT_TRUE(risk_sweep("reactive").empty());
  // A model's decision threshold, from high (late) to low (early); a lead is not one.
  const auto model = risk_sweep("agent.mirage-model");
  ASSERT_GE(model.size(), 5u);
  EXPECT_EQ(parse_policy_spec(model.front()).threshold, std::optional<double>(4.0));
  EXPECT_EQ(parse_policy_spec(model.back()).threshold, std::optional<double>(-1.0));
  EXPECT_EQ(parse_policy_spec("agent.mirage-model@-0.5").threshold, std::optional<double>(-0.5));
  EXPECT_EQ(parse_policy_spec("agent.mirage-model@2h").family, "agent.mirage-model@2h");
}

}  // namespace
}  // namespace mirage

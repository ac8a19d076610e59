// The risk as an input (`risk_input`, RiskInput.h): one pg model gives a frontier, MODEL@RISK
// picks its point as quantile@RISK does, and what a model decides live at a risk is what its
// probes validated there.
#include <fmt/format.h>

#include "LearnedFixtures.h"
#include "mirage/agents/learned/RiskInput.h"

namespace mirage::learned {
namespace {

class RiskInputTest : public LearnedTest {
 protected:
  // Replays `c.out` at each risk of `risks` through the simulator on its validation days and
  // expects the figures validation recorded at that level; returns each one's mean overlap.
  std::vector<double> expect_replays_validation(const Trace& trace, const TrainConfig& c,
                                                const TrainSummary& s,
                                                const std::vector<double>& risks) {
    std::vector<std::string> names;
    for (const double q : risks) names.push_back(c.out + "@" + fmt::format("{:g}", q));
    const EvalReport r = replay_validation(trace, c, names).report;
    EXPECT_EQ(r.sample_times.size(), s.val_episodes);
    std::vector<double> overlaps;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const auto point =
          std::find_if(s.risk_points.begin(), s.risk_points.end(),
                       [&](const RiskPoint& p) { return std::abs(p.risk - risks[i]) < 1e-9; });
      EXPECT_NE(point, s.risk_points.end()) << names[i];
      if (point == s.risk_points.end()) continue;
      const BucketMetrics& m = r.metrics.at(names[i]).overall;
      EXPECT_NEAR(m.mean_interruption_h, point->val.mean_interruption_h, 1e-9) << names[i];
      EXPECT_NEAR(m.mean_overlap_h, point->val.mean_overlap_h, 1e-9) << names[i];
      overlaps.push_back(m.mean_overlap_h);
    }
    return overlaps;
  }
};

// The price: the cost at a risk is interruption + r x overlap with r = (1 - risk) / risk, and
// MODEL@RISK takes the threshold of the nearest validated level.
TEST_F(RiskInputTest, TheRiskSetsThePriceAndTheNearestLevelsThreshold) {
  CostModel base;
  EXPECT_DOUBLE_EQ(cost_at_risk(base, 0.5).overlap_weight, 1.0);
  EXPECT_DOUBLE_EQ(cost_at_risk(base, 0.1).overlap_weight, 9.0);
  EXPECT_DOUBLE_EQ(cost_at_risk(base, 0.8)(-kHour), 0.25);
  EXPECT_DOUBLE_EQ(cost_at_risk(base, 0.8)(2 * kHour), 2.0);
  const std::vector<RiskPoint> points{{0.1, 3.0, {}}, {0.5, 1.0, {}}, {0.9, -1.0, {}}};
  EXPECT_EQ(threshold_at(points, 0.2), 3.0);
  EXPECT_EQ(threshold_at(points, 0.3), 3.0);  // a tie: the lower level
  EXPECT_EQ(threshold_at(points, 0.45), 1.0);
  EXPECT_EQ(threshold_at(points, 0.99), -1.0);
  EXPECT_FALSE(risk_problem(0.3));
  EXPECT_TRUE(risk_problem(1.5));
  EXPECT_TRUE(risk_problem(0));
}

// One model file, every point, for each agent that takes the risk as an input (pg, dqn, moe): at
// each risk the replay of MODEL@RISK through the simulator (live features through RowNet, the
// risk appended) gives the figures validation recorded for that level on the probes; what it
// decides moves with the price ratio (the overlap at 0.2 and at 0.8 differ); `--sweep-risk`
// sweeps it at quantile's levels; a risk outside (0, 1) is refused in one line.
class RiskInputAgentTest : public RiskInputTest, public ::testing::WithParamInterface<AgentKind> {};

TEST_P(RiskInputAgentTest, AModelDecidesAtEachRiskAsItWasValidatedThere) {
  const Trace trace = busy_trace(11, 12);
  const std::string name = fmt::format("risk-{}.mirage-model", to_string(GetParam()));
  TrainConfig c = tiny(GetParam(), path(name), 1, 9);
  c.hp.ensemble = 1;
  c.hp.risk_input = true;
  const TrainSummary s = train_agent(trace, c);
  ASSERT_EQ(s.risk_points.size(), kRiskLevels.size());
  const auto meta = nlohmann::json::parse(read_model_info(c.out).metadata_json);
  EXPECT_EQ(meta.at("agent").get<std::string>(), std::string(to_string(GetParam())));
  EXPECT_EQ(meta.at("pooled_features"), kPooledFeatures + 1);
  EXPECT_EQ(meta.at("risk_input").at("levels").size(), kRiskLevels.size());

  const std::vector<double> overlaps = expect_replays_validation(trace, c, s, {0.2, 0.5, 0.8});
  ASSERT_EQ(overlaps.size(), 3u);
  EXPECT_NE(overlaps.front(), overlaps.back()) << "the risk moves the model along its frontier";
  // The default risk is the file's plain rule.
  expect_replay_matches_validation(trace, c, s, "the model without a knob is MODEL@0.5");

  const auto sweep = risk_sweep(c.out);
  ASSERT_EQ(sweep.size(), kRiskLevels.size());
  EXPECT_EQ(sweep.front(), c.out + "@0.1");
  EXPECT_EQ(sweep.back(), c.out + "@0.9");
  try {
    (void)make_policy(c.out + "@1.5");
    FAIL() << "a risk of 1.5 was taken";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("risk between 0 and 1"), std::string::npos)
        << err.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Agents, RiskInputAgentTest,
                         ::testing::Values(AgentKind::kPg, AgentKind::kDqn, AgentKind::kMoe),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// The sequence model: the last snapshots through a convolution over time, decided live by
// RowNet from the encoder's window as LibTorch validated it on the probes' snapshots.
TEST_F(RiskInputTest, TheSequenceModelDecidesLiveAsItWasValidated) {
  const Trace trace = busy_trace(11, 12);
  TrainConfig c = tiny(AgentKind::kPg, path("seq.mirage-model"), 1, 9);
  c.hp.ensemble = 1;
  c.hp.risk_input = true;
  c.hp.history = 4;
  c.hp.history_channels = 3;
  const TrainSummary s = train_agent(trace, c);
  const auto meta = nlohmann::json::parse(read_model_info(c.out).metadata_json);
  EXPECT_EQ(meta.at("hyperparameters").at("history"), 4);
  expect_replays_validation(trace, c, s, {0.3, 0.7});
  // Its weights read back into a LibTorch network of the shape its metadata describes.
  EXPECT_NO_THROW((void)weights_digest(c.out));
}

TEST_F(RiskInputTest, TheRiskInputIsOneNetworkAndTheResidualAndSequencePgs) {
  const Trace trace = busy_trace(11, 12);
  const auto refusal = [&](AgentKind agent, int ensemble, bool residual) {
    TrainConfig c = tiny(agent, path("bad.mirage-model"), 1, 9);
    c.hp.risk_input = true;
    c.hp.ensemble = ensemble;
    c.hp.quantile_residual = residual;
    try {
      train_agent(trace, c);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("trained");
  };
  EXPECT_NE(refusal(AgentKind::kDqn, 1, true).find("pg's"), std::string::npos);
  EXPECT_NE(refusal(AgentKind::kMoe, 3, false).find("must be 1"), std::string::npos);
  EXPECT_NE(refusal(AgentKind::kPg, 1, true).find("--wait-distribution"), std::string::npos);
  TrainConfig c = tiny(AgentKind::kPg, path("seq.mirage-model"), 1, 9);
  c.hp.history = 4;
  EXPECT_THROW(train_agent(trace, c), InputError) << "history without risk_input";
  c.agent = AgentKind::kDqn;
  c.hp.risk_input = true;
  EXPECT_THROW(train_agent(trace, c), InputError) << "history with dqn";
}

}  // namespace
}  // namespace mirage::learned

// The wait predictor's quantiles as the agents' inputs (`train --wait-distribution`): what a
// model sees live is what its probes recorded, a model decides only with the predictor it was
// trained with, and a residual on quantile@RISK starts as exactly that rule.
#include <fmt/format.h>

#include <array>
#include <random>

#include "LearnedFixtures.h"
#include "mirage/agents/Baselines.h"
#include "mirage/agents/WaitDistribution.h"
#include "mirage/agents/WaitModel.h"
#include "mirage/agents/learned/WaitModelTraining.h"

namespace mirage::learned {
namespace {

class WaitFeaturesTest : public LearnedTest {
 protected:
  // A busy machine whose real jobs waited 0-8 h, and a binned distribution fitted on it for the
  // chains of short_chain(6), written to `file`.
  static Trace waited_trace() {
    Trace trace = busy_trace(15, 12, 3400);
    std::mt19937_64 rng(3);
    for (Job& j : trace.jobs) {
      const Seconds wait = static_cast<Seconds>(rng() % (8 * kHour));
      j.start += wait;
      j.end += wait;
    }
    return trace;
  }
  std::shared_ptr<const WaitPredictor> predictor(const Trace& trace, const std::string& file,
                                                 WaitPredictorRef* ref) const {
    ClusterSpec cluster;
    cluster.nodes = 16;
    WaitDistributionSpec spec;
    spec.nodes = 6;
    spec.time_limit = short_chain(6).chain.time_limit;
    spec.from = kT0;
    spec.to = kT0 + 12 * kDay;
    write_wait_distribution(file, fit_wait_distribution(trace, cluster, spec));
    return read_recorded_predictor(file, ref);
  }
};

// Pools each observation as a model file does live (pool_observation), and never submits.
class PoolingDecider final : public Decider {
 public:
  explicit PoolingDecider(const WaitPredictor* waits) : waits_(waits) {}
  bool submit_now(const Simulator&, const Observation& obs, SimJobIndex, Seconds) override {
    const std::vector<float> encoded = FeatureEncoder::encode(obs);
    rows.emplace_back(pooled_width(waits_ != nullptr));
    pool_observation(obs, encoded.data(), waits_, rows.back().data());
    return false;
  }
  std::vector<std::vector<float>> rows;

 private:
  const WaitPredictor* waits_;
};

TEST_F(WaitFeaturesTest, LiveFeaturesAreTheProbedOnes) {
  const Trace trace = waited_trace();
  WaitPredictorRef ref;
  ProbeSpec spec;
  spec.cluster.nodes = 16;
  spec.episode = short_chain(6);
  spec.from = kT0 + 4 * kDay;
  spec.to = kT0 + 6 * kDay;
  spec.every = 8 * kHour;
  spec.waits = predictor(trace, path("waits.toml"), &ref);
  spec.waits_ref = ref;
  ProbeSet data;
  add_probes(data, probe_or_load(trace, spec, "", 2, {}, nullptr), /*wait_features=*/true);
  ASSERT_GE(data.episodes.size(), 5u);
  EpisodeStarts starts(trace, spec.cluster, spec.episode, spec.mode);
  constexpr std::size_t width = pooled_width(true);
  constexpr std::size_t first_wait = kPooledFeatures;
  ASSERT_EQ(data.width, static_cast<int>(width));
  std::size_t predicted = 0;
  for (const ProbeSet::Episode& e : data.episodes) {
    PoolingDecider live(spec.waits.get());
    run_episode(starts.at(e.sample_time), live, spec.episode);
    ASSERT_EQ(live.rows.size(), e.count);
    for (std::size_t k = 0; k < e.count; ++k) {
      const float* probed = data.x.data() + (e.first + k) * width;
      for (std::size_t f = 0; f < width; ++f)
        ASSERT_EQ(live.rows[k][f], probed[f])
            << "episode " << e.sample_time << ", decision " << k << ", feature " << f;
      if (probed[first_wait + kWaitLevels.size() - 1] > 0) ++predicted;
    }
  }
  EXPECT_GT(predicted, 0u) << "the wait features carry the predictor's quantiles";

  // Without a predictor the networks see the other features alone.
  ProbeSet plain;
  add_probes(plain, probe_or_load(trace, spec, "", 2, {}, nullptr));
  ASSERT_EQ(plain.width, kPooledFeatures);
  ASSERT_EQ(plain.decisions(), data.decisions());
  for (std::size_t i = 0; i < plain.decisions(); ++i)
    for (std::size_t f = 0; f < first_wait; ++f)
      ASSERT_EQ(plain.x[i * first_wait + f], data.x[i * width + f]);
}

// A model trained with a predictor decides, through RowNet, exactly as it was validated on its
// probes (the predictor read again from the path its file records), and refuses, in one line,
// to decide without that very file.
TEST_F(WaitFeaturesTest, AModelDecidesOnlyWithThePredictorItWasTrainedWith) {
  const Trace trace = waited_trace();
  TrainConfig c = tiny(AgentKind::kDqn, path("waits.mirage-model"), 1, 8);
  c.hp.ensemble = 1;
  const std::string file = path("waits.toml");
  c.probes.waits = predictor(trace, file, &c.probes.waits_ref);
  const TrainSummary s = train_agent(trace, c);
  expect_replay_matches_validation(trace, c, s, "with the wait features");
  const auto meta = nlohmann::json::parse(read_model_info(c.out).metadata_json);
  EXPECT_EQ(meta.at("wait_predictor").at("path"), c.probes.waits_ref.path);
  EXPECT_EQ(meta.at("pooling_version"), kPoolingVersion);

  const auto refusal = [&](const std::string& copy) {
    std::filesystem::copy_file(c.out, path(copy));  // a file not loaded yet
    try {
      (void)make_policy(path(copy));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("decided");
  };
  std::ofstream(file, std::ios::app) << "# edited\n";
  const std::string changed = refusal("changed.mirage-model");
  EXPECT_NE(changed.find("was trained with the wait predictor " + c.probes.waits_ref.path),
            std::string::npos)
      << changed;
  EXPECT_NE(changed.find("retrain the model"), std::string::npos) << changed;
  std::filesystem::remove(file);
  const std::string gone = refusal("gone.mirage-model");
  EXPECT_NE(gone.find("which is not there"), std::string::npos) << gone;
}

// Asks a model and the quantile baseline at every instant, and never submits.
class AgreementDecider final : public Decider {
 public:
  AgreementDecider(Policy& model, Policy& baseline) : model_(model), baseline_(baseline) {}
  bool submit_now(const Simulator&, const Observation& obs, SimJobIndex, Seconds) override {
    const bool submits = baseline_.decide(obs).action == Action::kSubmitNow;
    (submits ? submit : wait) += 1;
    if ((model_.decide(obs).action == Action::kSubmitNow) != submits) ++disagree;
    return false;
  }
  int submit = 0, wait = 0, disagree = 0;

 private:
  Policy &model_, &baseline_;
};

// `quantile_residual`: the model's margin is quantile@RISK's plus the network's, whose last
// layer starts at zero, so that untrained it decides as quantile@RISK on every instant, at every
// risk the predictor states as one of its levels.
class ResidualTest : public WaitFeaturesTest {
 protected:
  static constexpr std::array<double, 3> kRisks{0.1, 0.25, 0.5};
  // Trains such a model, untrained, with c.probes.waits; returns its file with the plain rule at
  // every level (submit where the margin is positive), not the thresholds validation chose: the
  // network's untrained margin is what is pinned here.
  std::string untrained_residual(const Trace& trace, TrainConfig& c) const {
    c.hp.ensemble = 1;
    c.hp.risk_input = true;
    c.hp.quantile_residual = true;
    c.hp.max_epochs = 0;  // untrained
    train_agent(trace, c);
    return with_metadata(c.out, "plain.mirage-model", [](nlohmann::json& m) {
      for (auto& level : m["risk_input"]["levels"]) level["threshold"] = 0.0;
    });
  }
  // Per risk, the model against quantile@RISK reading `baseline`, both asked on every instant of
  // episodes started every 4 h of the window.
  static std::vector<AgreementDecider> against(const Trace& trace, const TrainConfig& c,
                                               const std::string& model,
                                               const std::shared_ptr<const WaitPredictor>& baseline,
                                               std::vector<std::unique_ptr<Policy>>& keep) {
    EpisodeStarts starts(trace, c.probes.cluster, c.probes.episode, c.probes.mode);
    std::vector<AgreementDecider> counts;
    counts.reserve(kRisks.size());
    for (const double q : kRisks) {
      keep.push_back(make_policy(model + "@" + fmt::format("{:g}", q)));
      keep.push_back(std::make_unique<QuantilePolicy>(baseline, q));
      counts.emplace_back(*keep[keep.size() - 2], *keep.back());
      for (Seconds t = c.probes.from; t < c.probes.to; t += 4 * kHour)
        run_episode(starts.at(t), counts.back(), c.probes.episode);
    }
    return counts;
  }
};

TEST_F(ResidualTest, AnUntrainedResidualDecidesAsQuantileOnEveryInstant) {
  const Trace trace = waited_trace();
  TrainConfig c = tiny(AgentKind::kPg, path("residual.mirage-model"), 1, 8);
  c.probes.waits = predictor(trace, path("waits.toml"), &c.probes.waits_ref);
  std::vector<std::unique_ptr<Policy>> policies;
  const auto both = against(trace, c, untrained_residual(trace, c), c.probes.waits, policies);
  for (std::size_t k = 0; k < kRisks.size(); ++k) {
    EXPECT_EQ(both[k].disagree, 0) << "risk " << kRisks[k];
    EXPECT_GT(both[k].submit, 0) << "risk " << kRisks[k] << ": the baseline submits somewhere";
    EXPECT_GT(both[k].wait, 0) << "risk " << kRisks[k] << ": and waits somewhere";
  }
}

// The learned wait model's file (`mirage train --agent wait-model`) where the binned
// distribution's goes: the residual sees that model's quantiles, in training and as its model
// file reads the model again to decide, so untrained it decides as quantile@RISK by the model on
// every instant, and not as by the binned distribution of the same months.
TEST_F(ResidualTest, AResidualOnTheLearnedWaitModelDecidesAsQuantileByThatModel) {
  const Trace trace = waited_trace();
  ClusterSpec cluster;
  cluster.nodes = 16;
  const Seconds fitted_to = kT0 + 12 * kDay;  // the binned distribution's months
  WaitModelTraining settings;
  settings.hidden = 16;
  settings.max_epochs = 30;
  const WaitModelFit fit =
      train_wait_model(wait_training_set(trace, cluster, kT0, fitted_to, 0), settings, {});
  WaitModelInfo info;
  info.trace = "synthetic";
  info.from = kT0;
  info.to = fitted_to;
  info.jobs = fit.train_rows + fit.val_rows;
  info.machine_nodes = cluster.nodes;
  write_wait_model(path("waits.json"), WaitModel(info, fit.net));

  TrainConfig c = tiny(AgentKind::kPg, path("residual.mirage-model"), 1, 8);
  c.probes.waits = read_recorded_predictor(path("waits.json"), &c.probes.waits_ref);
  ASSERT_NE(dynamic_cast<const WaitModel*>(c.probes.waits.get()), nullptr);
  const std::string model = untrained_residual(trace, c);
  std::vector<std::unique_ptr<Policy>> policies;
  const auto by_model = against(trace, c, model, c.probes.waits, policies);
  WaitPredictorRef binned_ref;
  const auto by_binned =
      against(trace, c, model, predictor(trace, path("waits.toml"), &binned_ref), policies);
  int departs_from_binned = 0;
  for (std::size_t k = 0; k < kRisks.size(); ++k) {
    EXPECT_EQ(by_model[k].disagree, 0) << "risk " << kRisks[k];
    EXPECT_GT(by_model[k].submit, 0) << "risk " << kRisks[k] << ": the model submits somewhere";
    EXPECT_GT(by_model[k].wait, 0) << "risk " << kRisks[k] << ": and waits somewhere";
    departs_from_binned += by_binned[k].disagree;
  }
  EXPECT_GT(departs_from_binned, 0) << "the two predictors state other quantiles somewhere";
}

}  // namespace
}  // namespace mirage::learned

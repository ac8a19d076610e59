// Model files: what a trained agent writes decides as it did, and a file that is not one, or is
// one of another encoder, or of an input or a learning mode removed, is refused in one line.
#include <tuple>

#include "LearnedFixtures.h"

namespace mirage::learned {
namespace {

class ModelFileTest : public LearnedTest {};

TEST_F(ModelFileTest, ModelFileRoundTripDecidesAsTheTrainedAgentDid) {
  const Trace trace = busy_trace(11, 12);
  // With each forecast guard and without: probes and live decisions must apply them alike.
  for (const std::string guard : {"off", "limits", "halved"}) {
    TrainConfig c = tiny(AgentKind::kDqn, path("agent-" + guard + ".mirage-model"), 2, 10);
    c.hp.forecast_guard = parse_forecast_guard(guard);
    const TrainSummary s = train_agent(trace, c);
    ASSERT_GT(s.val_episodes, 5u);
    EXPECT_EQ(to_string(s.rule.guard), guard);

    const ModelInfo info = read_model_info(c.out);
    EXPECT_EQ(info.agent, "dqn");
    EXPECT_EQ(info.encoder_version, FeatureEncoder::kVersion);
    EXPECT_NE(info.metadata_json.find("\"trace\""), std::string::npos);
    expect_replay_matches_validation(trace, c, s, guard);
    EXPECT_EQ(make_policy(c.out)->name(), "agent-" + guard);
  }
}

TEST_F(ModelFileTest, AnEnsembleOfSeedsIsOneModelFileThatDecidesAsValidated) {
  // Live decisions evaluate the network on one row without LibTorch (RowNet); validation ran
  // LibTorch on batches: the replay pins that both score alike, for every kind of network.
  const Trace trace = busy_trace(11, 12);
  for (AgentKind agent : {AgentKind::kDqn, AgentKind::kPg, AgentKind::kMoe}) {
    const std::string name(to_string(agent));
    TrainConfig c = tiny(agent, path(name + ".mirage-model"), 2, 10);
    c.hp.max_epochs = 2;
    c.hp.patience = 3;
    c.hp.ensemble = 3;
    const TrainSummary s = train_agent(trace, c);
    // Three members of two epochs (moe: per expert and for the gate).
    EXPECT_EQ(s.epochs, agent == AgentKind::kMoe ? 3 * (2 * c.hp.experts + 2) : 6) << name;
    const auto meta = nlohmann::json::parse(read_model_info(c.out).metadata_json);
    EXPECT_EQ(meta.at("hyperparameters").at("ensemble"), 3) << name;
    // The members' files are in the model; their checkpoints stay for --resume.
    for (int k = 1; k <= 3; ++k) {
      const std::string member = c.out + ".member" + std::to_string(k);
      EXPECT_FALSE(std::filesystem::exists(member)) << member;
      EXPECT_TRUE(std::filesystem::exists(member + ".ckpt")) << member;
    }
    expect_replay_matches_validation(trace, c, s, name);

    // Resumed, the members stop where they did: the same model.
    const std::string digest = weights_digest(c.out);
    c.resume = true;
    train_agent(trace, c);
    EXPECT_EQ(weights_digest(c.out), digest) << name;
  }
}

TEST_F(ModelFileTest, AModelOfAnInputOrAnExperimentThisMirageNoLongerHasIsRefusedInOneLine) {
  const Trace trace = busy_trace(12, 8);
  TrainConfig c = tiny(AgentKind::kDqn, path("plain.mirage-model"), 2, 6);
  c.hp.max_epochs = 1;
  train_agent(trace, c);
  // Files from before the input was removed name it: 0 (the default) loads as it is.
  EXPECT_NO_THROW(make_policy(with_metadata(c.out, "zero.mirage-model", [](nlohmann::json& m) {
    m["hyperparameters"]["history_blocks"] = 0;
  })));
  const std::string blocks = with_metadata(c.out, "blocks.mirage-model", [](nlohmann::json& m) {
    m["hyperparameters"]["history_blocks"] = 4;
  });
  try {
    make_policy(blocks);
    FAIL() << "expected the model to be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model blocks reads history blocks (history_blocks = 4), "
                                         "an input this mirage no longer has; retrain it"),
              std::string::npos)
        << e.what();
  }
  // Files from before the options were removed name them; at the values kept they load.
  EXPECT_NO_THROW(make_policy(with_metadata(c.out, "kept.mirage-model", [](nlohmann::json& m) {
    m["hyperparameters"]["calibrate"] = true;
    m["hyperparameters"]["window_clause"] = true;
    m["hyperparameters"]["wait_target"] = "rollout";
  })));
  for (const auto& [key, value, text] :
       {std::tuple{"calibrate", nlohmann::json(false), "calibrate = false"},
        std::tuple{"follow_average", nlohmann::json(false), "follow_average = false"},
        std::tuple{"window_clause", nlohmann::json(false), "window_clause = false"},
        std::tuple{"wait_target", nlohmann::json("bootstrap"), "wait_target = \"bootstrap\""},
        std::tuple{"forecast_guard", nlohmann::json("recent"), "forecast_guard = \"recent\""},
        std::tuple{"pg_estimator", nlohmann::json("exact"), "pg_estimator = \"exact\""},
        std::tuple{"objective", nlohmann::json("match-average"),
                   "objective = \"match-average\""}}) {
    const std::string lost = with_metadata(
        c.out, "lost.mirage-model", [&](nlohmann::json& m) { m["hyperparameters"][key] = value; });
    try {
      make_policy(lost);
      ADD_FAILURE() << "a model trained with " << text << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("model lost was trained with ") + text +
                                           ", an experiment that lost"),
                std::string::npos)
          << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
    std::filesystem::remove(lost);
  }
}

TEST_F(ModelFileTest, AModelFromAnotherEncoderVersionIsRefusedWithAClearMessage) {
  const Trace trace = busy_trace(12, 8);
  TrainConfig c = tiny(AgentKind::kDqn, path("old.mirage-model"), 2, 6);
  c.hp.max_epochs = 1;
  train_agent(trace, c);
  ModelInfo info = read_model_info(c.out);
  info.encoder_version = FeatureEncoder::kVersion + 1;
  write_model_info(c.out, info);
  try {
    make_policy(c.out);
    FAIL() << "expected the model to be refused";
  } catch (const InputError& e) {
    const std::string expected =
        "model old was made by feature encoder v" + std::to_string(FeatureEncoder::kVersion + 1) +
        "; this mirage has v" + std::to_string(FeatureEncoder::kVersion) + "; retrain";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TEST_F(ModelFileTest, NotAModelFileAndMissingFilesGiveClearErrors) {
  const std::string junk = path("junk.mirage-model");
  std::ofstream(junk) << "not a model";
  EXPECT_THROW(make_policy(junk), InputError);
  EXPECT_THROW(make_policy(path("missing.mirage-model")), InputError);
  try {
    make_policy("nope");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "reactive, average, forecast, forecast-recent, slurm-estimate, static, quantile, "
                  "oracle"),
              std::string::npos);
  }
  try {  // refused by its first bytes, before the plugin (and LibTorch) is loaded
    make_policy(junk);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a mirage model file"), std::string::npos);
  }
  // Without the learned agents linked in, the registry says so of what may be a model.
  const std::string zipped = path("zipped.mirage-model");
  std::ofstream(zipped) << "PK\x03\x04 and then nothing";
  set_model_policy_loader(nullptr);
  try {
    make_policy(zipped);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("without the learned agents"), std::string::npos);
  }
  register_learned_policies();
}

// Deciding reads the LibTorch archive without LibTorch: a file cut short is refused in one line
// naming it, not read as weights.
TEST_F(ModelFileTest, ATruncatedModelFileIsRefusedNamingTheFile) {
  const Trace trace = busy_trace(12, 8);
  TrainConfig c = tiny(AgentKind::kDqn, path("whole.mirage-model"), 2, 6);
  c.hp.max_epochs = 1;
  train_agent(trace, c);
  EXPECT_NO_THROW(make_policy(c.out));
  const std::string cut = path("cut.mirage-model");
  std::filesystem::copy_file(c.out, cut);
  std::filesystem::resize_file(cut, std::filesystem::file_size(c.out) / 2);
  try {
    make_policy(cut);
    FAIL() << "a truncated model file was loaded";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(cut + ": field 'policy': not a mirage model file", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace mirage::learned

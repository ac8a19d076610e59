#pragma once
// What the learned agents' tests share: a temporary directory per test, a tiny training
// configuration on a synthetic busy trace, and the replay of a saved model on its validation days.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "mirage/agents/Evaluation.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/agents/learned/LearnedModel.h"
#include "mirage/agents/learned/ModelPolicyHook.h"
#include "mirage/agents/learned/Training.h"
#include "mirage/core/Error.h"
#include "mirage/core/QueueForecast.h"
#include "support/BusyTrace.h"

namespace mirage::learned {

using test::busy_trace;
using test::kT0;

inline EpisodeConfig short_chain(int nodes) {
  EpisodeConfig e;
  e.chain.nodes = nodes;
  e.chain.time_limit = e.chain.runtime = 6 * kHour;
  e.max_wait = kDay;
  return e;
}

// A temporary directory per test, removed at the end.
class LearnedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    register_learned_policies();
    dir_ = std::filesystem::temp_directory_path() /
           ("mirage-learned-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A small, quick training configuration on `trace`'s days [from, to).
  TrainConfig tiny(AgentKind agent, const std::string& out, int from_day, int to_day) const {
    TrainConfig c;
    c.agent = agent;
    c.out = out;
    c.trace_path = "synthetic";
    c.probe_cache_dir = dir_.string();
    c.seed = 7;
    c.threads = 2;
    c.probes.cluster.nodes = 16;
    c.probes.episode = short_chain(6);
    c.probes.from = kT0 + from_day * kDay;
    c.probes.to = kT0 + to_day * kDay;
    c.probes.every = 2 * kHour;
    c.hp.hidden = 16;
    c.hp.max_epochs = 4;
    c.hp.batch_size = 128;
    c.hp.target_update = 50;
    c.hp.experts = 2;
    c.hp.gate_hidden = 8;
    c.hp.pg_batch_episodes = 8;
    c.hp.pg_samples = 4;
    c.hp.val_blocks = 1;  // windows of days: three blocks would purge most of them
    return c;
  }

  // A copy of `model` named `name` in the test's directory, its metadata changed by `edit`.
  std::string with_metadata(const std::string& model, const std::string& name,
                            const std::function<void(nlohmann::json&)>& edit) const {
    ModelInfo info = read_model_info(model);
    auto meta = nlohmann::json::parse(info.metadata_json);
    edit(meta);
    info.metadata_json = meta.dump();
    const std::string out = path(name);
    std::filesystem::copy_file(model, out);
    write_model_info(out, info);
    return out;
  }

  std::filesystem::path dir_;
};

// The probes of `c`'s window, their validation split, and `policies` (or `model` beside
// `reactive`) replayed through the simulator on the validation episodes' sample times.
struct ValidationReplay {
  ProbeSet data;
  Split split;
  EvalReport report;
};
inline ValidationReplay replay_validation(const Trace& trace, const TrainConfig& c,
                                          const std::vector<std::string>& policies) {
  ValidationReplay v;
  add_probes(v.data, probe_or_load(trace, c.probes, "", 2, {}, nullptr));
  v.split = time_split(v.data, c.hp.val_fraction, c.probes.episode.horizon(), c.hp.val_blocks);
  EvalConfig e;
  e.cluster = c.probes.cluster;
  e.episode = c.probes.episode;
  e.from = v.data.episodes[v.split.val.front()].sample_time;
  e.to = c.probes.to;
  e.every = c.probes.every;
  e.policies = policies;
  e.threads = 2;
  v.report = evaluate(trace, e);
  return v;
}
inline ValidationReplay replay_validation(const Trace& trace, const TrainConfig& c,
                                          const std::string& model) {
  return replay_validation(trace, c, std::vector<std::string>{"reactive", model});
}

// The validation figures of `s` were computed in memory, on probes; replaying the saved model
// through the simulator on the same sample times must give the same outcomes.
inline void expect_replay_matches_validation(const Trace& trace, const TrainConfig& c,
                                             const TrainSummary& s, const std::string& why) {
  const EvalReport r = replay_validation(trace, c, c.out).report;
  ASSERT_EQ(r.sample_times.size(), s.val_episodes) << why;
  const BucketMetrics& m = r.metrics.at(c.out).overall;
  EXPECT_NEAR(m.mean_interruption_h, s.agent.mean_interruption_h, 1e-9) << why;
  EXPECT_NEAR(m.mean_overlap_h, s.agent.mean_overlap_h, 1e-9) << why;
  EXPECT_NEAR(m.zero_interruption_share, s.agent.zero_share, 1e-9) << why;
}

}  // namespace mirage::learned

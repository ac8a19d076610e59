#pragma once
// What the episode, what-if and baseline suites share: a 16-node cluster, a short chain, and
// deciders that record or submit at a fixed instant.
#include <gtest/gtest.h>

#include <vector>

#include "mirage/agents/Episode.h"
#include "mirage/agents/EpisodeStarts.h"
#include "mirage/core/FeatureEncoder.h"
#include "mirage/traces/Trace.h"

namespace mirage::test {

inline ClusterSpec cluster16() {
  ClusterSpec c;
  c.nodes = 16;
  return c;
}

inline EpisodeConfig short_chain(int nodes = 4) {
  EpisodeConfig e;
  e.chain.nodes = nodes;
  e.chain.time_limit = e.chain.runtime = 6 * kHour;
  e.max_wait = kDay;
  return e;
}

// Records every observation it is shown; never submits.
class RecordingDecider final : public Decider {
 public:
  std::vector<Observation> seen;
  bool submit_now(const Simulator&, const Observation& obs, SimJobIndex, Seconds) override {
    seen.push_back(obs);
    return false;
  }
};

// Submits at a fixed instant.
class FixedDecider final : public Decider {
 public:
  explicit FixedDecider(Seconds at) : at_(at) {}
  bool submit_now(const Simulator& sim, const Observation&, SimJobIndex, Seconds) override {
    return sim.now() >= at_;
  }

 private:
  Seconds at_;
};

inline std::vector<Observation> observe(const Trace& trace, Seconds sample) {
  EpisodeConfig cfg = short_chain();
  EpisodeStarts starts(trace, cluster16(), cfg, EpisodeStartMode::kForkReplay);
  RecordingDecider d;
  run_episode(starts.at(sample), d, cfg);
  return d.seen;
}

inline void expect_same_observation(const Observation& a, const Observation& b) {
  ASSERT_EQ(a.time, b.time);
  EXPECT_EQ(a.window, b.window);
  EXPECT_EQ(FeatureEncoder::encode(a), FeatureEncoder::encode(b));
  EXPECT_EQ(a.latest.pending.size(), b.latest.pending.size());
  EXPECT_EQ(a.latest.running.size(), b.latest.running.size());
  EXPECT_EQ(a.latest.recent_mean_wait_s, b.latest.recent_mean_wait_s);
  EXPECT_EQ(a.latest.recent_runtime_shares, b.latest.recent_runtime_shares);
}

}  // namespace mirage::test

// Training: deterministic for a seed, resumable, and learning something real.
#include "LearnedFixtures.h"

namespace mirage::learned {
namespace {

class TrainTest : public LearnedTest {};

TEST_F(TrainTest, TrainingIsDeterministicForASeed) {
  const Trace trace = busy_trace(13, 8);
  for (AgentKind agent : {AgentKind::kDqn, AgentKind::kPg, AgentKind::kMoe}) {
    const std::string name(to_string(agent));
    TrainConfig a = tiny(agent, path(name + "-a.mirage-model"), 2, 6);
    TrainConfig b = a;
    b.out = path(name + "-b.mirage-model");
    TrainConfig other = a;
    other.out = path(name + "-c.mirage-model");
    other.seed = a.seed + 1;
    train_agent(trace, a);
    train_agent(trace, b);
    train_agent(trace, other);
    EXPECT_EQ(weights_digest(a.out), weights_digest(b.out)) << name;
    EXPECT_NE(weights_digest(a.out), weights_digest(other.out)) << name;
  }
}

TEST_F(TrainTest, ResumedTrainingEndsWhereUninterruptedTrainingDoes) {
  const Trace trace = busy_trace(14, 8);
  struct Crash {};
  for (AgentKind agent : {AgentKind::kDqn, AgentKind::kPg, AgentKind::kMoe}) {
    const std::string name(to_string(agent));
    TrainConfig whole = tiny(agent, path(name + "-whole.mirage-model"), 2, 6);
    whole.hp.patience = 100;  // no early stop: every run goes the full distance
    train_agent(trace, whole);

    // Killed during its third epoch report: the checkpoint holds the epochs before.
    TrainConfig crashed = whole;
    crashed.out = path(name + "-crashed.mirage-model");
    int reports = 0;
    TrainCallbacks cb;
    cb.epoch = [&](const EpochStats&) {
      if (++reports == 3) throw Crash{};
    };
    EXPECT_THROW(train_agent(trace, crashed, cb), Crash);
    EXPECT_FALSE(std::filesystem::exists(crashed.out));
    crashed.resume = true;
    train_agent(trace, crashed);
    EXPECT_EQ(weights_digest(crashed.out), weights_digest(whole.out)) << name;

    // Resumed with more epochs: a short run extended ends as the long one did.
    TrainConfig extended = whole;
    extended.out = path(name + "-extended.mirage-model");
    extended.hp.max_epochs = 2;
    train_agent(trace, extended);
    extended.hp.max_epochs = whole.hp.max_epochs;
    extended.resume = true;
    train_agent(trace, extended);
    EXPECT_EQ(weights_digest(extended.out), weights_digest(whole.out)) << name;

    // A checkpoint of other settings is refused.
    TrainConfig other = extended;
    other.hp.lr *= 2;
    EXPECT_THROW(train_agent(trace, other), InputError) << name;
  }
}

TEST_F(TrainTest, ALearnedAgentBeatsTheBaselinesOnAHeldOutWindow) {
  // Train on days 1-11 of a busy machine, evaluate on days 11-15, which it never saw. On this
  // machine reactive chaining often waits for the queue at the boundary. The agent must beat
  // both baselines by a wide margin there on what it optimises, interruption plus overlap (it
  // may trade one for the other: here it chooses the halved guard, which overlaps least).
  const Trace trace = busy_trace(15, 18, 3400);
  {
    TrainConfig c = tiny(AgentKind::kDqn, path("cost.mirage-model"), 1, 11);
    c.probes.every = kHour;
    c.hp.hidden = 32;
    c.hp.max_epochs = 15;
    const TrainSummary s = train_agent(trace, c);
    EvalConfig e;
    e.cluster = c.probes.cluster;
    e.episode = c.probes.episode;
    e.from = kT0 + 11 * kDay;
    e.to = kT0 + 15 * kDay;
    e.every = 2 * kHour;
    e.policies = {"reactive", "average", c.out};
    e.threads = 2;
    const EvalReport r = evaluate(trace, e);
    const BucketMetrics& reactive = r.metrics.at("reactive").overall;
    const BucketMetrics& average = r.metrics.at("average").overall;
    const BucketMetrics& agent = r.metrics.at(c.out).overall;
    ASSERT_GE(r.sample_times.size(), 40u);
    EXPECT_GT(reactive.mean_interruption_h, 0.5) << "the window is busy: there is room";
    const std::string why = "guard " + std::string(to_string(s.rule.guard));
    const auto cost = [](const BucketMetrics& m) {
      return m.mean_interruption_h + m.mean_overlap_h;
    };
    EXPECT_LT(cost(agent), 0.8 * cost(reactive)) << why;
    EXPECT_LT(cost(agent), 0.8 * cost(average)) << why;
  }
}

// The logged world's waits come from the log eval's reads (ProbeSpec::yardstick_log), not from
// the trace the replay probes, whose jobs its calibration may mark dependent: here every job is
// marked (on a job the trace does not hold, so that the replay runs as without), which would
// leave the logged world no wait at all.
TEST_F(TrainTest, TheLoggedWorldReadsItsOwnLogNotTheReplaysMarks) {
  Trace as_read = busy_trace(15, 12, 3400);
  constexpr Seconds kRealWait = 4 * kHour;
  for (Job& j : as_read.jobs) {
    j.start += kRealWait;
    j.end += kRealWait;
  }
  Trace calibrated = as_read;
  for (Job& j : calibrated.jobs) j.after_any = j.id + 1'000'000;
  TrainConfig c = tiny(AgentKind::kDqn, path("yardstick.mirage-model"), 1, 9);
  c.probes.world = SuccessorWait::kLogged;
  c.probes.yardstick_log = std::make_shared<const Trace>(as_read);
  std::size_t decisions = 0;
  for (const ProbedEpisode& e : probe_or_load(calibrated, c.probes, "", 2, {}, nullptr)) {
    ASSERT_FALSE(e.unscored);
    for (const ProbedDecision& d : e.decisions) {
      EXPECT_EQ(d.gap_if_submitted,
                std::min(d.time + kRealWait, e.predecessor_end + c.probes.episode.max_wait) -
                    e.predecessor_end);
      ++decisions;
    }
  }
  EXPECT_GT(decisions, 1000u);
  c.probes.yardstick_log = nullptr;  // the replay's marks: no real job left to read
  for (const ProbedEpisode& e : probe_or_load(calibrated, c.probes, "", 2, {}, nullptr))
    EXPECT_TRUE(e.unscored);
}

// `train --successor-wait logged`: the outcomes the agent learns from and is scored on are the
// log's real waits, not the replay's. Here every real job waited 4 h, so submitting at instant t
// gives a gap of t + 4 h - the predecessor's end; and the saved rule's validation figures are what
// eval's logged world gives the model on those days, not what the replay gives it.
TEST_F(TrainTest, TrainingInTheLoggedWorldScoresOnTheLogsWaits) {
  Trace trace = busy_trace(15, 12, 3400);
  constexpr Seconds kRealWait = 4 * kHour;
  for (Job& j : trace.jobs) {  // the recorded starts, which the replay does not read
    j.start += kRealWait;
    j.end += kRealWait;
  }
  TrainConfig c = tiny(AgentKind::kDqn, path("logged.mirage-model"), 1, 9);
  c.probes.world = SuccessorWait::kLogged;
  c.hp.ensemble = 1;

  const std::vector<ProbedEpisode> probed = probe_or_load(trace, c.probes, "", 2, {}, nullptr);
  std::size_t decisions = 0;
  for (const ProbedEpisode& e : probed) {
    ASSERT_FALSE(e.unscored) << "real jobs of the shape are near every instant";
    EXPECT_EQ(e.unscored_instants, 0u);
    for (const ProbedDecision& d : e.decisions) {
      const Seconds start =
          std::min(d.time + kRealWait, e.predecessor_end + c.probes.episode.max_wait);
      EXPECT_EQ(d.gap_if_submitted, start - e.predecessor_end);
      ++decisions;
    }
  }
  ASSERT_GT(decisions, 1000u);

  const TrainSummary s = train_agent(trace, c);
  // Reactive waits the 4 h after its submission a minute before the end; hindsight finds an
  // instant within a decision interval of a seamless hand-over.
  EXPECT_NEAR(s.reactive.mean_interruption_h, 4.0 - 1.0 / 60, 1e-9);
  EXPECT_LE(s.hindsight.mean_interruption_h + s.hindsight.mean_overlap_h,
            static_cast<double>(c.probes.episode.decision_interval) / kHour);
  EXPECT_LT(s.agent.mean_cost_h, 0.5 * s.reactive.mean_cost_h) << "it learned to submit early";

  ProbeSet data;
  add_probes(data, probed);
  const Split split =
      time_split(data, c.hp.val_fraction, c.probes.episode.horizon(), c.hp.val_blocks);
  EvalConfig e;
  e.cluster = c.probes.cluster;
  e.episode = c.probes.episode;
  e.from = data.episodes[split.val.front()].sample_time;
  e.to = c.probes.to;
  e.every = c.probes.every;
  e.policies = {c.out};
  e.threads = 2;
  e.world = SuccessorWait::kLogged;
  const BucketMetrics logged = evaluate(trace, e).metrics.at(c.out).overall;
  EXPECT_NEAR(logged.mean_interruption_h, s.agent.mean_interruption_h, 1e-9);
  EXPECT_NEAR(logged.mean_overlap_h, s.agent.mean_overlap_h, 1e-9);
  EXPECT_NEAR(logged.zero_interruption_share, s.agent.zero_share, 1e-9);
  e.world = SuccessorWait::kReplay;
  const BucketMetrics replay = evaluate(trace, e).metrics.at(c.out).overall;
  EXPECT_GT(std::abs(replay.mean_interruption_h - s.agent.mean_interruption_h) +
                std::abs(replay.mean_overlap_h - s.agent.mean_overlap_h),
            0.1)
      << "the replay's waits would score the same rule otherwise";
}

}  // namespace
}  // namespace mirage::learned

// A learned model's decision rule: its threshold, the forecast guard, the rule that follows
// `average`, the window clause, and the same decision every time.
#include "LearnedFixtures.h"

namespace mirage::learned {
namespace {

class LearnedPolicyTest : public LearnedTest {};

TEST_F(LearnedPolicyTest, TheForecastGuardHoldsTheAgentBackWhileTheQueuePlansAnEarlyStart) {
  const Trace trace = busy_trace(11, 8);
  TrainConfig c = tiny(AgentKind::kDqn, path("guarded.mirage-model"), 2, 6);
  c.hp.max_epochs = 1;
  c.hp.forecast_guard = ForecastGuard::kLimits;
  const TrainSummary s = train_agent(trace, c);
  EXPECT_EQ(s.rule.guard, ForecastGuard::kLimits);
  const ModelInfo info = read_model_info(c.out);
  EXPECT_EQ(nlohmann::json::parse(info.metadata_json).at("forecast_guard"), "limits");

  // Rewrite the rule so that the network alone would always submit; then only the guard decides.
  auto eager = [&](const std::string& name, const std::optional<nlohmann::json>& guard) {
    return make_policy(with_metadata(c.out, name, [&](nlohmann::json& meta) {
      meta["decision_threshold"] = -1e9;
      if (guard)
        meta["forecast_guard"] = *guard;
      else
        meta.erase("forecast_guard");  // a file made before the guard existed
    }));
  };
  // Three hours left of the predecessor. An idle machine: the successor would start at once.
  // A full one, every node busy for twelve more hours by the limits: it would start after the
  // predecessor's end, even at half of that. Busy for five more hours: after the end by the
  // limits, before it at half.
  QueueSnapshot idle;
  idle.total_nodes = 16;
  QueueSnapshot full = idle;
  full.running.push_back({12 * kHour, 16, 0, 2 * kHour});
  QueueSnapshot soon_free = idle;
  soon_free.running.push_back({5 * kHour, 16, 0, 2 * kHour});
  CampaignView view;
  view.predecessor_limit = view.successor_limit = 6 * kHour;
  view.predecessor_nodes = view.successor_nodes = 6;
  view.predecessor_running = true;
  view.predecessor_run = 3 * kHour;
  auto decide = [&](Policy& p, const QueueSnapshot& q) {
    ObservationBuilder history;
    for (int i = 0; i < FeatureEncoder::kWindow; ++i) history.add(q);
    return p.decide(history.build(view)).action;
  };
  auto limits = eager("limits-eager.mirage-model", "limits");
  EXPECT_EQ(decide(*limits, idle), Action::kWait);
  EXPECT_EQ(decide(*limits, soon_free), Action::kSubmitNow);
  EXPECT_EQ(decide(*limits, full), Action::kSubmitNow);
  auto halved = eager("halved-eager.mirage-model", "halved");
  EXPECT_EQ(decide(*halved, idle), Action::kWait);
  EXPECT_EQ(decide(*halved, soon_free), Action::kWait);
  EXPECT_EQ(decide(*halved, full), Action::kSubmitNow);
  auto unguarded = eager("unguarded-eager.mirage-model", "off");
  EXPECT_EQ(decide(*unguarded, idle), Action::kSubmitNow);
  // Files from before the halved guard said true or false; from before any guard, nothing.
  auto older_on = eager("older-on-eager.mirage-model", true);
  EXPECT_EQ(decide(*older_on, idle), Action::kWait);
  EXPECT_EQ(decide(*older_on, soon_free), Action::kSubmitNow);
  auto older_off = eager("older-off-eager.mirage-model", false);
  EXPECT_EQ(decide(*older_off, idle), Action::kSubmitNow);
  auto oldest = eager("oldest-eager.mirage-model", std::nullopt);
  EXPECT_EQ(decide(*oldest, idle), Action::kSubmitNow);
  try {
    eager("strange-guard.mirage-model", "sometimes");
    ADD_FAILURE() << "a model file with an unknown guard was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("forecast_guard"), std::string::npos) << e.what();
  }
}

// `policies` on the machine and chain `c` trained for, sampled as it sampled, over days 2 to 10.
EvalConfig days_2_to_10(const TrainConfig& c, std::vector<std::string> policies) {
  EvalConfig e;
  e.cluster = c.probes.cluster;
  e.episode = c.probes.episode;
  e.from = kT0 + 2 * kDay;
  e.to = kT0 + 10 * kDay;
  e.every = c.probes.every;
  e.policies = std::move(policies);
  e.threads = 2;
  return e;
}

// MODEL@THRESHOLD: the model's risk knob. With only the margin's clause, a threshold no margin
// reaches never submits early (reactive), and a lower one submits earlier: more overlap.
TEST_F(LearnedPolicyTest, AModelsThresholdIsItsRiskKnob) {
  const Trace trace = busy_trace(11, 12);
  TrainConfig c = tiny(AgentKind::kDqn, path("knob.mirage-model"), 2, 10);
  c.hp.max_epochs = 1;
  c.hp.forecast_guard = ForecastGuard::kOff;
  train_agent(trace, c);
  // The margin's clause alone: neither the clause after `average` nor a window clause.
  const std::string margin_only =
      with_metadata(c.out, "knob-margin.mirage-model", [](nlohmann::json& meta) {
        meta["after_average_threshold"] = nullptr;
        meta["window_clause"] = nullptr;
      });
  const std::string never = margin_only + "@1000000", eager = margin_only + "@-1000000";
  const EvalReport r = evaluate(trace, days_2_to_10(c, {never, margin_only, eager}));
  EXPECT_EQ(r.decides_as.at(never), "reactive");
  const auto overlap = [&](const std::string& p) { return r.metrics.at(p).overall.mean_overlap_h; };
  EXPECT_LE(overlap(never), overlap(margin_only));
  EXPECT_LE(overlap(margin_only), overlap(eager));
  EXPECT_GT(overlap(eager), overlap(never) + 0.1) << "the knob moves the policy";
  EXPECT_EQ(parse_policy_spec(eager).threshold, std::optional<double>(-1000000));
}

TEST_F(LearnedPolicyTest, ARuleThatFollowsAverageSubmitsWhereAverageDoesUnlessTheMarginSaysWait) {
  const Trace trace = busy_trace(11, 12);
  TrainConfig c = tiny(AgentKind::kDqn, path("follows.mirage-model"), 2, 10);
  c.hp.max_epochs = 1;
  const TrainSummary s = train_agent(trace, c);
  // Never early by the network, and no window clause: where `average` would submit, `after`
  // decides.
  auto rewritten = [&](const std::string& name, const nlohmann::json& after) {
    return with_metadata(c.out, name, [&](nlohmann::json& meta) {
      meta["decision_threshold"] = nullptr;
      meta["window_clause"] = nullptr;
      meta["after_average_threshold"] = after;
    });
  };
  const std::string always = rewritten("always.mirage-model", "always");
  const std::string never = rewritten("never.mirage-model", 1e9);
  const EvalReport r = evaluate(trace, days_2_to_10(c, {"reactive", "average", always, never}));
  auto same = [&](const std::string& a, const std::string& b) {
    const BucketMetrics& x = r.metrics.at(a).overall;
    const BucketMetrics& y = r.metrics.at(b).overall;
    EXPECT_NEAR(x.mean_interruption_h, y.mean_interruption_h, 1e-9) << a << " vs " << b;
    EXPECT_NEAR(x.mean_overlap_h, y.mean_overlap_h, 1e-9) << a << " vs " << b;
    EXPECT_NEAR(x.zero_interruption_share, y.zero_interruption_share, 1e-9) << a << " vs " << b;
  };
  same(always, "average");
  same(never, "reactive");
  // The two must differ on this window, or the comparisons above pin nothing.
  EXPECT_GT(r.metrics.at("reactive").overall.mean_interruption_h,
            r.metrics.at("average").overall.mean_interruption_h + 0.01);
  // Whatever rule training chose, live decisions follow it as validation did.
  expect_replay_matches_validation(trace, c, s, "follow_average");
  // And where the chosen rule weighs the margin after `average` (the second clause alone uses it
  // on its own threshold): the first seed that chooses such a rule here.
  bool found = false;
  for (std::uint64_t seed = 1; seed <= 12 && !found; ++seed) {
    c.seed = seed;
    c.out = path("seed" + std::to_string(seed) + ".mirage-model");
    const TrainSummary t = train_agent(trace, c);
    if (std::isinf(t.rule.after_average) || t.rule.after_average == kAlwaysAfterAverage) continue;
    found = true;
    expect_replay_matches_validation(trace, c, t,
                                     "after_average " + std::to_string(t.rule.after_average));
  }
  EXPECT_TRUE(found) << "no seed chose a margin threshold after average; pick another window";
  try {
    rewritten("strange.mirage-model", "sometimes");
    make_policy(path("strange.mirage-model"));
    ADD_FAILURE() << "a model file with an unknown after_average_threshold was accepted";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("after_average_threshold"), std::string::npos)
        << err.what();
  }
}

TEST_F(LearnedPolicyTest, TheWindowClauseSubmitsWhereAReservationWouldCloseTheWindowAsProbesSaid) {
  const Trace trace = busy_trace(11, 12);
  TrainConfig c = tiny(AgentKind::kDqn, path("window.mirage-model"), 2, 10);
  c.hp.max_epochs = 1;
  train_agent(trace, c);
  const std::string trained = c.out;
  // The network never submits; only the window clause can.
  auto rewritten = [&](const std::string& name, const nlohmann::json& window) {
    return with_metadata(trained, name, [&](nlohmann::json& meta) {
      meta["decision_threshold"] = nullptr;
      meta["after_average_threshold"] = nullptr;
      meta["window_clause"] = window;
    });
  };
  const WindowClause clause{ForecastPlan::kLimits, 4 * kHour, kHour};
  const std::string model = rewritten(
      "closing.mirage-model", {{"plan", "limits"}, {"within_s", 4 * kHour}, {"wait_s", kHour}});

  // Live: 16 nodes, 10 of them busy for 8 more hours, and a 16-node job waiting behind them
  // (reserved from 8 h on, for an hour). A 6-hour successor submitted now fits before the
  // reservation; submitted at the predecessor's end, 3 h from now, it would end after the
  // reservation's start and wait until 9 h: 6 h. With 5 h left it would wait 4 h, but the
  // clause acts only within 4 h of the end. On an idle machine it never fires.
  QueueSnapshot closing;
  closing.total_nodes = 16;
  closing.running.push_back({8 * kHour, 10, 0, 0, 0});
  closing.pending.push_back({kHour, 16, 0, kHour});
  QueueSnapshot idle;
  idle.total_nodes = 16;
  auto decide_by = [&](const std::string& file, const QueueSnapshot& q, Seconds run) {
    CampaignView view;
    view.predecessor_limit = view.successor_limit = 6 * kHour;
    view.predecessor_nodes = view.successor_nodes = 6;
    view.predecessor_running = true;
    view.predecessor_run = run;
    ObservationBuilder history;
    for (int i = 0; i < FeatureEncoder::kWindow; ++i) history.add(q);
    return make_policy(file)->decide(history.build(view)).action;
  };
  auto decide = [&](const QueueSnapshot& q, Seconds run) { return decide_by(model, q, run); };
  EXPECT_EQ(decide(closing, 3 * kHour), Action::kSubmitNow);
  EXPECT_EQ(decide(closing, kHour), Action::kWait);
  EXPECT_EQ(decide(idle, 3 * kHour), Action::kWait);
  // Planned with recent runtimes: where the jobs that ended ran a quarter of their limits, the
  // running ones end in 2 h and the big job runs 15 min: the window stays open. Without enough
  // ended jobs known, the plan is the limits' one.
  const std::string recent =
      rewritten("closing-recent.mirage-model",
                {{"plan", "recent"}, {"within_s", 4 * kHour}, {"wait_s", kHour}});
  QueueSnapshot short_runs = closing;
  short_runs.recent_runtime_shares.assign(RuntimeGuess::kMinRecentEnds, 0.25f);
  EXPECT_EQ(decide_by(recent, closing, 3 * kHour), Action::kSubmitNow);
  EXPECT_EQ(decide_by(recent, short_runs, 3 * kHour), Action::kWait);
  EXPECT_EQ(decide(short_runs, 3 * kHour), Action::kSubmitNow);

  // Replayed through the simulator, the model submits where the probes said the clause first
  // fires, with the gaps they said.
  const ValidationReplay v = replay_validation(trace, c, model);
  const ProbeSet& data = v.data;
  const Split& split = v.split;
  const EvalReport& r = v.report;
  std::vector<int> stops;
  int fired = 0;
  for (const std::size_t i : split.val) {
    const ProbeSet::Episode& e = data.episodes[i];
    int stop = -1;
    for (std::size_t k = 0; k < e.count && stop < 0; ++k)
      if (clause.fires(data.window_features[e.first + k])) stop = static_cast<int>(k);
    fired += stop >= 0;
    stops.push_back(stop);
  }
  // Some episodes but not all, or the comparison pins little.
  EXPECT_GT(fired, 0);
  EXPECT_LT(fired, static_cast<int>(split.val.size()));
  const StopMetrics expected = evaluate_stops(data, split.val, stops, CostModel{});
  ASSERT_EQ(r.sample_times.size(), split.val.size());
  const BucketMetrics& m = r.metrics.at(model).overall;
  EXPECT_NEAR(m.mean_interruption_h, expected.mean_interruption_h, 1e-9);
  EXPECT_NEAR(m.mean_overlap_h, expected.mean_overlap_h, 1e-9);
  EXPECT_NEAR(m.zero_interruption_share, expected.zero_share, 1e-9);
  EXPECT_GT(std::abs(m.mean_interruption_h - r.metrics.at("reactive").overall.mean_interruption_h) +
                std::abs(m.mean_overlap_h - r.metrics.at("reactive").overall.mean_overlap_h),
            1e-6)
      << "the clause changed nothing on this window";

  // Trained with the clause among the rules: where the calibration keeps one, live decisions
  // follow it as validation did (the first seed that keeps one here).
  bool kept = false;
  for (std::uint64_t seed = 1; seed <= 8 && !kept; ++seed) {
    c.seed = seed;
    c.out = path("window-seed" + std::to_string(seed) + ".mirage-model");
    const TrainSummary t = train_agent(trace, c);
    if (!t.rule.window.active()) continue;
    kept = true;
    const auto meta = nlohmann::json::parse(read_model_info(c.out).metadata_json);
    EXPECT_EQ(meta.at("window_clause").at("within_s"), t.rule.window.within);
    expect_replay_matches_validation(trace, c, t, "window clause, seed " + std::to_string(seed));
  }
  EXPECT_TRUE(kept) << "no seed kept a window clause; pick another window";

  for (const nlohmann::json& bad :
       {nlohmann::json("sometimes"),
        nlohmann::json{{"plan", "off"}, {"within_s", 1}, {"wait_s", 1}},
        nlohmann::json{{"plan", "limits"}, {"within_s", 1.5}, {"wait_s", 1}}}) {
    try {
      make_policy(rewritten("strange-window.mirage-model", bad));
      ADD_FAILURE() << "a model file with window_clause " << bad.dump() << " was accepted";
    } catch (const InputError& err) {
      EXPECT_NE(std::string(err.what()).find("window_clause"), std::string::npos) << err.what();
    }
    std::filesystem::remove(path("strange-window.mirage-model"));
  }
}

// Every agent, at the default network size, decides on a full queue (200 pending jobs) as the
// daemon asks it to: the same observation gives the same decision, with a confidence in [0, 1].
// How fast is agents/learned/bench/decide_bench's to print, not a test's to assert.
TEST_F(LearnedPolicyTest, EveryAgentDecidesOnAFullQueueTheSameWayEachTime) {
  const Trace trace = busy_trace(16, 8);
  for (AgentKind agent : {AgentKind::kDqn, AgentKind::kPg, AgentKind::kMoe}) {
    TrainConfig c = tiny(agent, path(std::string(to_string(agent)) + ".mirage-model"), 2, 6);
    c.hp.hidden = 64;  // the default size
    c.hp.max_epochs = 1;
    train_agent(trace, c);
    auto policy = make_policy(c.out);
    ObservationBuilder history;
    QueueSnapshot q;
    q.total_nodes = 16;
    for (int i = 0; i < 200; ++i)
      q.pending.push_back({(1 + i % 12) * kHour, 1 + i % 6, 0, (i % 30) * 600});
    for (int i = 0; i < FeatureEncoder::kWindow; ++i) history.add(q);
    CampaignView view;
    view.predecessor_limit = view.successor_limit = 6 * kHour;
    view.predecessor_nodes = view.successor_nodes = 6;
    view.predecessor_running = true;
    for (int i = 0; i < 36; ++i) {
      view.predecessor_run = i * 600;
      const Observation obs = history.build(view);
      const Decision first = policy->decide(obs);
      const Decision again = policy->decide(obs);
      EXPECT_EQ(first.action, again.action) << to_string(agent) << " at " << i;
      EXPECT_EQ(first.confidence, again.confidence) << to_string(agent) << " at " << i;
      EXPECT_GE(first.confidence, 0.0) << to_string(agent);
      EXPECT_LE(first.confidence, 1.0) << to_string(agent);
    }
  }
}

}  // namespace
}  // namespace mirage::learned

// The learned wait model as it decides (without LibTorch): monotone quantiles, its file and the
// lines that refuse a bad one, the rows it is fitted on, the predictor interface `quantile` and
// the daemon read, and the figures `trace waits --check` prints.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "WaitModelFixtures.h"
#include "mirage/agents/Baselines.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/agents/WaitCheck.h"
#include "mirage/agents/WaitDistribution.h"
#include "mirage/agents/WaitModel.h"
#include "mirage/core/Error.h"
#include "support/TempDir.h"

namespace mirage {
namespace {

constexpr Seconds kT0 = test::kWaitFitStart;

std::string temp_file(const std::string& name) {
  return test::temp_file(name);
}

DenseLayer random_layer(int inputs, int outputs, std::mt19937& rng, float spread) {
  std::normal_distribution<float> n(0.f, spread);
  DenseLayer l{inputs, outputs, {}, {}};
  for (int i = 0; i < inputs * outputs; ++i) l.weights.push_back(n(rng));
  for (int o = 0; o < outputs; ++o) l.bias.push_back(n(rng));
  return l;
}

// A network of random weights, large enough that raw increments come out negative too.
WaitNet random_net(const std::string& architecture, unsigned seed) {
  std::mt19937 rng(seed);
  WaitNet n;
  n.architecture = architecture;
  n.input_mean.assign(kWaitModelInputs, 0.f);
  n.input_scale.assign(kWaitModelInputs, 1.f);
  n.max_target = 12.f;
  const int experts = architecture == "moe" ? 3 : 1;
  for (int e = 0; e < experts; ++e)
    n.experts.push_back({random_layer(kWaitModelInputs, 16, rng, 0.5f),
                         random_layer(16, static_cast<int>(kWaitLevels.size()), rng, 2.f)});
  if (experts > 1) n.gate = {random_layer(kWaitModelInputs, experts, rng, 1.f)};
  return n;
}

// A queue of `pending` 2-node jobs behind `running` 4-node jobs on a 16-node machine.
QueueSnapshot queue(int running, int pending) {
  QueueSnapshot q;
  q.time = kT0 + 40 * kDay + 13 * kHour;
  q.total_nodes = 16;
  for (int i = 0; i < running; ++i) q.running.push_back({.time_limit = 10 * kHour, .nodes = 4});
  for (int i = 0; i < pending; ++i) q.pending.push_back({.time_limit = 4 * kHour, .nodes = 2});
  return q;
}

std::string error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(WaitModel, QuantilesNeverDecreaseWhateverTheWeights) {
  for (const std::string arch : {"mlp", "moe"})
    for (unsigned seed = 1; seed <= 20; ++seed) {
      const WaitModel m(test::synthetic_wait_model_info(), random_net(arch, seed));
      std::mt19937 rng(seed);
      std::uniform_int_distribution<int> count(0, 12);
      for (int trial = 0; trial < 10; ++trial) {
        const WaitQuantiles w =
            m.predict(queue(count(rng) % 4, count(rng)), ForecastJob{1 + count(rng), 0, kHour});
        for (std::size_t k = 1; k < w.size(); ++k)
          EXPECT_LE(w[k - 1], w[k]) << arch << " seed " << seed << " level " << k;
        EXPECT_GE(w[0], 0);
        EXPECT_LE(w[6], wait_from_target(12.0));  // capped at the longest wait fitted
      }
    }
}

TEST(WaitModel, AFileReadBackPredictsTheSameAndIsRecognisedByItsHeader) {
  const std::string path = temp_file("model.json");
  const WaitModel m(test::synthetic_wait_model_info(), random_net("moe", 7));
  write_wait_model(path, m);
  const auto back = read_wait_predictor(path);
  ASSERT_NE(dynamic_cast<const WaitModel*>(back.get()), nullptr);
  EXPECT_EQ(back->fitted_from(), kT0);
  EXPECT_EQ(back->fitted_to(), kT0 + 30 * kDay);
  EXPECT_EQ(back->fitted_jobs(), 500u);
  for (int pending = 0; pending < 8; ++pending) {
    const QueueSnapshot q = queue(3, pending);
    const ForecastJob job{2, 0, 6 * kHour};
    EXPECT_EQ(back->predict(q, job), m.predict(q, job));
  }
  EXPECT_EQ(back->chain_mismatch(128), std::nullopt);  // every size

  // A binned distribution's TOML is read as one.
  WaitDistribution d;
  d.spec.from = kT0;
  d.spec.to = kT0 + kDay;
  WaitDistribution::Bin b;
  b.jobs = 40;
  for (int k = 0; k < WaitDistribution::kLevels; ++k)
    b.waits[static_cast<std::size_t>(k)] = k * kMinute;
  d.bins.push_back(b);
  write_wait_distribution(temp_file("binned.toml"), d);
  const auto binned = read_wait_predictor(temp_file("binned.toml"));
  ASSERT_NE(dynamic_cast<const BinnedWaitPredictor*>(binned.get()), nullptr);
  EXPECT_EQ(binned->predict(queue(0, 0), ForecastJob{1, 0, kHour})[3], 10 * kMinute);
  EXPECT_NE(binned->chain_mismatch(8), std::nullopt);
}

TEST(WaitModel, ABadFileIsRefusedInOneLineNamingTheField) {
  const std::string path = temp_file("bad.json");
  write_wait_model(path, WaitModel(test::synthetic_wait_model_info(), random_net("mlp", 3)));
  std::ifstream in(path);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::ofstream(path) << text;
    return error_of([&] { (void)read_wait_predictor(path); });
  };
  const std::string encoder = "\"encoder_version\":" + std::to_string(FeatureEncoder::kVersion);
  EXPECT_NE(with(encoder, "\"encoder_version\":3")
                .find("field 'encoder_version': the model reads the queue through encoder "
                      "version 3, this build's is " +
                      std::to_string(FeatureEncoder::kVersion)),
            std::string::npos);
  EXPECT_NE(with("\"format\":\"mirage-wait-model\"", "\"format\":\"other\"")
                .find("field 'format': expected \"mirage-wait-model\""),
            std::string::npos);
  EXPECT_NE(with("\"architecture\":\"mlp\"", "\"architecture\":\"moe\"")
                .find("field 'members[0]': expected a network's weights: experts: expected one "
                      "for mlp, several for moe"),
            std::string::npos);
  EXPECT_NE(with("\"max_target\":12.0", "\"max_target\":-1.0")
                .find("field 'members[0]': expected a network's weights: max_target"),
            std::string::npos);
  std::ofstream(path) << "{ not json";
  EXPECT_NE(error_of([&] { (void)read_wait_predictor(path); }).find("not a wait model (JSON)"),
            std::string::npos);
  // Neither JSON nor a binned distribution: the TOML reader names the line.
  std::ofstream(path) << "chain_nodes = \"many\"\n";
  EXPECT_NE(error_of([&] { (void)read_wait_predictor(path); }).find(":1: field 'chain_nodes'"),
            std::string::npos);
}

TEST(WaitModel, AnEnsembleAveragesItsMembersLevelByLevelAndItsFileReadsBackTheSame) {
  const std::vector<WaitNet> members{random_net("mlp", 21), random_net("mlp", 22),
                                     random_net("moe", 23)};
  const WaitModel ensemble(test::synthetic_wait_model_info(), members, WaitTail{});
  const std::string path = temp_file("ensemble.json");
  write_wait_model(path, ensemble);
  const WaitModel back = read_wait_model(path);
  ASSERT_EQ(back.members().size(), 3u);
  EXPECT_NE(back.describe().find("3 x mlp, averaged"), std::string::npos) << back.describe();
  for (int pending = 0; pending < 6; ++pending) {
    const QueueSnapshot q = queue(2, pending);
    const ForecastJob job{1 + pending, 0, 4 * kHour};
    const WaitQuantiles w = ensemble.predict(q, job);
    EXPECT_EQ(back.predict(q, job), w);
    // The members' quantiles in target units, averaged.
    const auto x = wait_model_inputs(q, job);
    for (std::size_t k = 0; k < w.size(); ++k) {
      double mean = 0;
      for (const WaitNet& n : members) mean += n.forward(x.data())[k] / 3;
      EXPECT_EQ(w[k], wait_from_target(mean)) << "level " << k;
      if (k > 0) {
        EXPECT_LE(w[k - 1], w[k]);
      }
    }
  }
}

TEST(WaitModel, AnEnsembleFileWithAMemberUnlikeTheOthersIsRefusedNamingIt) {
  const std::string path = temp_file("mismatched.json");
  write_wait_model(path, WaitModel(test::synthetic_wait_model_info(),
                                   {random_net("mlp", 1), random_net("mlp", 2)}, WaitTail{}));
  std::ifstream in(path);
  const nlohmann::json good = nlohmann::json::parse(in);
  const auto refused = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good;
    edit(j);
    std::ofstream(path) << j.dump();
    return error_of([&] { (void)read_wait_predictor(path); });
  };
  // A member that reads another number of inputs (fitted by another build).
  EXPECT_NE(refused([](nlohmann::json& j) {
              j["members"][1]["input_mean"] = std::vector<float>(10, 0.f);
            })
                .find("field 'members[1]': expected a network's weights: input_mean, input_scale: "
                      "expected " +
                      std::to_string(kWaitModelInputs) + " values each"),
            std::string::npos);
  EXPECT_NE(refused([](nlohmann::json& j) {
              j["members"][0]["experts"][0][0]["inputs"] = 7;
            }).find("field 'members[0]'"),
            std::string::npos);
  EXPECT_NE(refused([](nlohmann::json& j) {
              j["members"] = nlohmann::json::array();
            }).find("field 'members': expected an array of one network or more"),
            std::string::npos);
  EXPECT_NE(refused([](nlohmann::json& j) { j.erase("members"); }).find("field 'members'"),
            std::string::npos);
}

TEST(WaitModel, AFileOfOneNetworkWrittenBeforeEnsemblesReadsAsOneMember) {
  const WaitModel m(test::synthetic_wait_model_info(), random_net("moe", 4));
  const std::string path = temp_file("v2.json");
  write_wait_model(path, m);
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  for (const auto& [key, value] : j["members"][0].items()) j[key] = value;
  j.erase("members");
  j["format_version"] = 2;
  std::ofstream(path) << j.dump();
  const WaitModel back = read_wait_model(path);
  ASSERT_EQ(back.members().size(), 1u);
  EXPECT_EQ(back.predict(queue(2, 5), ForecastJob{2, 0, kHour}),
            m.predict(queue(2, 5), ForecastJob{2, 0, kHour}));
}

TEST(WaitModel, AFileOfTheRemovedFallBackIsReadAsItWasFitted) {
  // Files fitted with the removed --fall-back marked a class `binned_only` and gave it no
  // network share: a daemon upgraded past it keeps reading them, the mark changing nothing.
  const std::string path = temp_file("binned-only.json");
  const WaitModel m(test::synthetic_wait_model_info(), random_net("mlp", 3));
  write_wait_model(path, m);
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  for (const bool mark : {false, true}) {
    j["tail"]["classes"][1]["binned_only"] = mark;
    std::ofstream(path) << j.dump();
    const WaitModel back = read_wait_model(path);
    EXPECT_EQ(back.predict(queue(2, 5), ForecastJob{2, 0, kHour}),
              m.predict(queue(2, 5), ForecastJob{2, 0, kHour}))
        << "binned_only " << mark;
  }
}

Trace jobs_every_hour(int count, bool with_starts) {
  Trace t;
  t.source = "hourly";
  t.machine_nodes = 16;
  for (int i = 0; i < count; ++i) {
    Job j;
    j.id = i + 1;
    j.submit = kT0 + i * kHour;
    if (with_starts) {
      j.start = j.submit + (i % 7) * kMinute;
      j.end = j.start + 10 * kMinute;
    }
    j.run_time = 10 * kMinute;
    j.nodes = 1 + i % 3;
    j.time_limit = kHour;
    t.jobs.push_back(j);
  }
  return t;
}

TEST(WaitModel, RowsAreEveryStartedJobOfTheWindowInSubmissionOrder) {
  const Trace t = jobs_every_hour(300, true);
  const WaitTrainingSet s = wait_training_set(t, test::machine16(), kT0, kT0 + 250 * kHour, 0);
  ASSERT_EQ(s.rows, 250u);
  EXPECT_EQ(s.inputs.size(), 250u * kWaitModelInputs);
  EXPECT_FLOAT_EQ(s.targets[3], wait_target(3 * kMinute));
  EXPECT_EQ(s.submits[249], kT0 + 249 * kHour);
  // The job's shape: 2 nodes of 16.
  EXPECT_FLOAT_EQ(s.inputs[1 * kWaitModelInputs + FeatureEncoder::kPerSnapshot], 2.f / 16);
  const WaitTrainingSet thinned =
      wait_training_set(t, test::machine16(), kT0, kT0 + 250 * kHour, 200);
  EXPECT_EQ(thinned.rows, 200u);
  EXPECT_EQ(thinned.window_jobs, 250u);
}

TEST(WaitModel, ALogWithoutStartsOrAWindowWithTooFewJobsIsRefused) {
  EXPECT_NE(error_of([] {
              (void)wait_training_set(jobs_every_hour(300, false), test::machine16(), kT0,
                                      kT0 + kDay * 30, 0);
            }).find("hourly: field 'start': the log gives no real start time for its 300 jobs"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              (void)wait_training_set(jobs_every_hour(300, true), test::machine16(), kT0,
                                      kT0 + 100 * kHour, 0);
            }).find("only 100 jobs with a real start were submitted in"),
            std::string::npos);
}

// Jobs every hour, alternately in queue "1" (no wait) and "2" (five hours), or in none.
Trace jobs_in_two_queues(bool with_queue) {
  Trace t = jobs_every_hour(300, true);
  for (std::size_t i = 0; i < t.jobs.size(); ++i) {
    Job& j = t.jobs[i];
    const bool slow = i % 2 == 1;
    j.start = j.submit + (slow ? 5 * kHour : 0);
    j.end = j.start + 10 * kMinute;
    if (with_queue) j.queue = slow ? "2" : "1";
  }
  return t;
}

TEST(WaitModel, TheJobsQueueIsReadWhereTheLogGivesOne) {
  const Trace t = jobs_in_two_queues(true);
  const WaitTrainingSet s = wait_training_set(t, test::machine16(), kT0, kT0 + 250 * kHour, 0);
  ASSERT_EQ(s.categories.field, "queue");
  ASSERT_EQ(s.categories.table.size(), 2u);
  const auto fast = s.categories.inputs("1"), slow = s.categories.inputs("2");
  EXPECT_LT(fast[0], s.categories.mean_target);
  EXPECT_GT(slow[0], s.categories.mean_target);
  EXPECT_NEAR(fast[1], 0.5, 0.01);
  // A value the window never saw, or none: the window's mean, a share of 0.
  EXPECT_EQ(s.categories.inputs("7"), (std::array<float, 2>{s.categories.mean_target, 0.f}));
  const std::size_t at = FeatureEncoder::kPerSnapshot + kJobInputs - 2;
  EXPECT_FLOAT_EQ(s.inputs[1 * kWaitModelInputs + at], slow[0]);
  EXPECT_FLOAT_EQ(s.inputs[2 * kWaitModelInputs + at], fast[0]);

  // A model whose median reads that input states a longer wait for a job of the slow queue.
  WaitNet n = random_net("mlp", 2);
  for (float& w : n.experts[0][0].weights) w = 0;
  n.experts[0][0].weights[at] = 1;  // hidden unit 0 is the input
  for (float& w : n.experts[0][1].weights) w = 0;
  n.experts[0][1].weights[0] = 1;  // the base follows it
  WaitModelInfo i = test::synthetic_wait_model_info();
  i.categories = s.categories;
  const WaitModel m(i, n);
  Job fast_job = t.jobs[0], slow_job = t.jobs[1];
  fast_job.nodes = slow_job.nodes = 1;
  EXPECT_LT(m.predict_logged(queue(1, 1), fast_job)[3], m.predict_logged(queue(1, 1), slow_job)[3]);
  const std::string path = temp_file("queues.json");
  write_wait_model(path, m);
  const auto back = read_wait_predictor(path);
  EXPECT_EQ(back->predict_logged(queue(1, 1), slow_job), m.predict_logged(queue(1, 1), slow_job));
  EXPECT_NE(back->describe().find("reads each job's queue (2 values)"), std::string::npos);

  // A log that gives no queue is refused by it, naming the field; one with queues is not.
  const auto why = m.trace_mismatch(jobs_in_two_queues(false));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("reads each job's queue (SWF field 15)"), std::string::npos) << *why;
  EXPECT_EQ(m.trace_mismatch(t), std::nullopt);
  // Without a queue in the log, the model reads none, and judges any log.
  const WaitTrainingSet plain =
      wait_training_set(jobs_in_two_queues(false), test::machine16(), kT0, kT0 + 250 * kHour, 0);
  EXPECT_EQ(plain.categories.field, "");
  EXPECT_EQ(
      WaitModel(test::synthetic_wait_model_info(), n).trace_mismatch(jobs_in_two_queues(false)),
      std::nullopt);
}

TEST(WaitPredictor, AQuantileBetweenTheLevelsIsInterpolated) {
  const WaitQuantiles w{100, 200, 400, 800, 1600, 3200, 6400};
  EXPECT_EQ(interpolate_quantile(w, 0.5), 800);
  EXPECT_EQ(interpolate_quantile(w, 0.6), 800 + 320);
  EXPECT_EQ(interpolate_quantile(w, 0.01), 100);
  EXPECT_EQ(interpolate_quantile(w, 0.99), 6400);
}

TEST(WaitPredictor, QuantileSubmitsByTheLearnedModelToo) {
  PolicyContext context;
  context.waits =
      std::make_shared<const WaitModel>(test::synthetic_wait_model_info(), random_net("mlp", 5));
  const auto policy = make_policy("quantile@0.9", context);
  Observation obs;
  obs.latest = queue(2, 3);
  obs.campaign = CampaignView::running_chain(1, 0, 48 * kHour, 0, 0);
  const Seconds wait = context.waits->quantile(obs.latest, QueueForecast::successor(obs), 0.9);
  obs.campaign.predecessor_run = 48 * kHour - wait - kMinute;  // a minute more than the wait left
  EXPECT_EQ(policy->decide(obs).action, Action::kWait);
  obs.campaign.predecessor_run = 48 * kHour - wait;
  EXPECT_EQ(policy->decide(obs).action, Action::kSubmitNow);
}

TEST(WaitCheck, FiguresOnAHandMadeSetOfJobs) {
  // Four jobs, each stated 0..60 min at the levels (10 min apart), real waits 5, 25, 35, 90 min.
  const WaitQuantiles stated{
      0, 10 * kMinute, 20 * kMinute, 30 * kMinute, 40 * kMinute, 50 * kMinute, 60 * kMinute};
  const std::vector<Seconds> real{5 * kMinute, 25 * kMinute, 35 * kMinute, 90 * kMinute};
  const WaitScore s = score_quantiles(real, {stated, stated, stated, stated});
  EXPECT_EQ(s.jobs, 4u);
  EXPECT_DOUBLE_EQ(*s.in_50, 0.5);   // 25 and 35 min
  EXPECT_DOUBLE_EQ(*s.in_90, 0.75);  // all but 90 min
  // Errors of the median: 25, 5, 5, 60 min: median 15 min; pinball at 50% half their mean.
  EXPECT_DOUBLE_EQ(s.median_abs_error_h, 0.25);
  EXPECT_DOUBLE_EQ(s.pinball_50_h, 0.5 * (95.0 / 4) / 60);
  double pinball = 0;
  for (Seconds r : real)
    for (std::size_t k = 0; k < stated.size(); ++k)
      pinball += pinball_loss(kWaitLevels[k], r, stated[k]);
  EXPECT_DOUBLE_EQ(*s.pinball_h, pinball / 28 / 3600);
  EXPECT_DOUBLE_EQ(pinball_loss(0.9, 100, 40), 54);
  EXPECT_DOUBLE_EQ(pinball_loss(0.9, 40, 100), 6);
  // A point: no intervals.
  const WaitScore p = score_points(real, {0, 0, 0, 0});
  EXPECT_FALSE(p.pinball_h.has_value());
  EXPECT_FALSE(p.in_90.has_value());
  EXPECT_DOUBLE_EQ(p.median_abs_error_h, 0.5);  // 25 and 35 min
}

// The randomized PIT of a wait on a stated atom: a predictor right about an atom of 37.5% at zero
// states q05 = q10 = q25 = 0, and its closed 25-75% interval holds 75% of the waits; its PIT, the
// zero waits spread over the atom's levels, holds the 50% it states.
TEST(WaitCheck, APredictorRightAboutAnAtomAtZeroHoldsItsLevelsByThePit) {
  std::vector<Seconds> real(375, 0);  // 375 of 1000 zero, then 1 .. 625 s, one each
  for (Seconds w = 1; w <= 625; ++w) real.push_back(w);
  const WaitQuantiles stated{0, 0, 0, 125, 375, 525, 575};  // the waits' own quantiles
  const WaitScore s = score_quantiles(real, std::vector<WaitQuantiles>(real.size(), stated));
  EXPECT_DOUBLE_EQ(*s.in_50, 0.75);  // the closed count, kept
  EXPECT_DOUBLE_EQ(*s.in_90, 0.95);
  EXPECT_NEAR(*s.in_50_pit, 0.50, 1e-12);
  EXPECT_NEAR(*s.in_90_pit, 0.90, 1e-12);
}

// A tie's share is the part of its atom's levels inside the interval, the atom's ends read at the
// middle of the gaps beside the equal levels: at zero from level 0 (no wait is below it) to the
// middle of 25-50%; at 300 s (stated at 25, 50 and 75%) from the middle of 10-25% to that of
// 75-90%.
TEST(WaitCheck, AWaitOnAStatedAtomCountsTheShareOfItsLevelsInside) {
  const WaitQuantiles zero{0, 0, 0, 600, 1200, 1800, 2400};
  EXPECT_NEAR(pit_share_inside(zero, 0, 2, 4), 0.125 / 0.375, 1e-12);
  EXPECT_NEAR(pit_share_inside(zero, 0, 0, 6), 0.325 / 0.375, 1e-12);
  const WaitQuantiles middle{60, 120, 300, 300, 300, 900, 1200};
  EXPECT_NEAR(pit_share_inside(middle, 300, 2, 4), 0.5 / 0.65, 1e-12);
  EXPECT_DOUBLE_EQ(pit_share_inside(middle, 300, 0, 6), 1.0);
  EXPECT_DOUBLE_EQ(pit_share_inside(middle, 301, 2, 4), 0.0);  // beside the atom: closed
  const WaitQuantiles all_zero{0, 0, 0, 0, 0, 0, 0};  // every level: the atom is 0 .. 97.5%
  EXPECT_NEAR(pit_share_inside(all_zero, 0, 2, 4), 0.5 / 0.975, 1e-12);
}

// Without a wait on a stated atom the PIT counts as the closed interval: a wait equal to one
// stated level (20 min at 25%) states no jump, and is inside as the closed count has it.
TEST(WaitCheck, WithoutATieThePitCountsAsTheClosedInterval) {
  const WaitQuantiles stated{
      0, 10 * kMinute, 20 * kMinute, 30 * kMinute, 40 * kMinute, 50 * kMinute, 60 * kMinute};
  const std::vector<Seconds> real{5 * kMinute, 20 * kMinute, 35 * kMinute, 90 * kMinute};
  const WaitScore s = score_quantiles(real, {stated, stated, stated, stated});
  EXPECT_DOUBLE_EQ(*s.in_50, 0.5);
  EXPECT_DOUBLE_EQ(*s.in_50_pit, *s.in_50);
  EXPECT_DOUBLE_EQ(*s.in_90_pit, *s.in_90);
}

}  // namespace
}  // namespace mirage

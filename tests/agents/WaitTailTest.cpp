// What the wait model's held-out tail sets per size class (WaitTail.h): the conformal
// recalibration restores the stated coverage of a class that drifted, leaves one that held, and
// the blend leans on whichever of the network and the binned distribution states the tail's
// waits better. The model file carries it, and refuses a tail it cannot read.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <utility>

#include "WaitModelFixtures.h"
#include "mirage/agents/WaitCheck.h"
#include "mirage/agents/WaitModel.h"
#include "mirage/agents/WaitTail.h"
#include "mirage/core/Error.h"
#include "support/TempDir.h"

namespace mirage {
namespace {

constexpr Seconds kT0 = test::kWaitFitStart;

// Waits log-normal around `median`: the quantiles a predictor that knows it states.
struct LogNormal {
  double median_s, sigma;
  Seconds draw(std::mt19937& rng) const {
    std::normal_distribution<double> z(0, sigma);
    return static_cast<Seconds>(median_s * std::exp(z(rng)));
  }
  WaitQuantiles levels() const {
    static constexpr std::array<double, 7> kZ{-1.645, -1.2816, -0.6745, 0, 0.6745, 1.2816, 1.645};
    WaitQuantiles w{};
    for (std::size_t k = 0; k < w.size(); ++k)
      w[k] = static_cast<Seconds>(median_s * std::exp(sigma * kZ[k]));
    return w;
  }
};

// `count` jobs of `nodes` nodes whose network states `stated` while the waits follow `real`.
std::vector<TailRow> rows(int nodes, const LogNormal& stated, const LogNormal& real, int count,
                          std::mt19937& rng) {
  std::vector<TailRow> out;
  for (int i = 0; i < count; ++i) out.push_back({stated.levels(), nodes, 0, real.draw(rng)});
  return out;
}

WaitScore judged(const WaitTail& tail, const std::vector<TailRow>& fresh) {
  std::vector<Seconds> real;
  std::vector<WaitQuantiles> stated;
  for (const TailRow& r : fresh) {
    real.push_back(r.wait);
    stated.push_back(tail.apply(size_class_index(r.nodes), r.network, r.planned));
  }
  return score_quantiles(real, stated);
}

TEST(WaitTail, RecalibrationRestoresTheCoverageOfAClassThatDriftedAndLeavesOneThatHeld) {
  std::mt19937 rng(11);
  const LogNormal stated{2 * kHour, 0.8};
  const LogNormal drifted{6 * kHour, 1.4};  // the 8+ class's queue grew: three times, and wider
  std::vector<TailRow> tail = rows(1, stated, stated, 400, rng);
  const auto large = rows(8, stated, drifted, 400, rng);
  tail.insert(tail.end(), large.begin(), large.end());
  const WaitTail fitted = fit_wait_tail(tail, {}, true, true);

  const auto fresh_large = rows(8, stated, drifted, 4000, rng);
  const WaitScore before = judged(WaitTail{}, fresh_large);
  const WaitScore after = judged(fitted, fresh_large);
  EXPECT_LT(*before.in_90, 0.6);
  EXPECT_NEAR(*after.in_90, 0.90, 0.03);
  EXPECT_NEAR(*after.in_50, 0.50, 0.04);
  EXPECT_LT(*after.pinball_h, *before.pinball_h);

  const WaitScore held = judged(fitted, rows(1, stated, stated, 4000, rng));
  EXPECT_NEAR(*held.in_90, 0.90, 0.03);
  EXPECT_NEAR(*held.in_50, 0.50, 0.04);
  for (double s : fitted.classes[0].shifts) EXPECT_LT(std::abs(s), 0.2);
  EXPECT_EQ(fitted.classes[2].tail_jobs, 400u);
}

// A distribution of one bin stating `d`'s levels, whatever the planned wait.
WaitDistribution one_bin(const LogNormal& d, int nodes) {
  WaitDistribution w;
  w.spec.nodes = nodes;
  w.spec.from = kT0;
  w.spec.to = kT0 + 30 * kDay;
  WaitDistribution::Bin b;
  b.jobs = 1000;
  for (int k = 0; k < WaitDistribution::kLevels; ++k) {
    const double q = std::clamp(k / 20.0, 0.001, 0.999);
    // The log-normal's quantile at q, by the inverse of the normal's CDF (bisection).
    double lo = -5, hi = 5;
    for (int i = 0; i < 60; ++i) {
      const double mid = (lo + hi) / 2;
      (0.5 * std::erfc(-mid / std::sqrt(2.0)) < q ? lo : hi) = mid;
    }
    b.waits[static_cast<std::size_t>(k)] =
        static_cast<Seconds>(d.median_s * std::exp(d.sigma * lo));
  }
  w.bins.push_back(b);
  return w;
}

TEST(WaitTail, TheBlendLeansOnWhicheverStatesTheTailsWaitsBetter) {
  std::mt19937 rng(5);
  const LogNormal truth{kHour, 0.7}, wrong{10 * kHour, 0.2};
  // 1 node: the network is right, the binned one wrong; 2-7: the other way round.
  std::vector<TailRow> tail = rows(1, truth, truth, 500, rng);
  const auto mid = rows(4, wrong, truth, 500, rng);
  tail.insert(tail.end(), mid.begin(), mid.end());
  const std::array<std::optional<WaitDistribution>, kSizeClasses> binned{
      one_bin(wrong, 1), one_bin(truth, 2), std::nullopt};
  const WaitTail fitted = fit_wait_tail(tail, binned, true, false);
  EXPECT_GE(fitted.classes[0].model_weight, 0.9);
  EXPECT_LE(fitted.classes[1].model_weight, 0.1);
  EXPECT_TRUE(fitted.blends(1));
  EXPECT_FALSE(fitted.blends(2));  // no binned distribution: the network alone
  // Without the blend, the network's share stays whole.
  EXPECT_EQ(fit_wait_tail(tail, binned, false, false).classes[1].model_weight, 1.0);
}

std::string temp_file(const std::string& name) {
  return test::temp_file(name);
}

WaitNet constant_net() {
  WaitNet n;
  n.input_mean.assign(kWaitModelInputs, 0.f);
  n.input_scale.assign(kWaitModelInputs, 1.f);
  n.max_target = 12.f;
  DenseLayer out{kWaitModelInputs, static_cast<int>(kWaitLevels.size()), {}, {}};
  out.weights.assign(static_cast<std::size_t>(out.inputs * out.outputs), 0.f);
  out.bias = {3.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};  // log1p(minutes) 3, then increments
  n.experts.push_back({out});
  return n;
}

QueueSnapshot busy_queue() {
  QueueSnapshot q;
  q.time = kT0 + 40 * kDay;
  q.total_nodes = 16;
  for (int i = 0; i < 4; ++i) q.running.push_back({.time_limit = 10 * kHour, .nodes = 4});
  for (int i = 0; i < 3; ++i) q.pending.push_back({.time_limit = 4 * kHour, .nodes = 2});
  return q;
}

TEST(WaitTail, TheModelFileCarriesItAndAModelWithItPredictsAsFitted) {
  WaitTail tail;
  tail.classes[2].tail_jobs = 80;
  tail.classes[2].model_weight = 0.4;
  tail.classes[2].binned = one_bin({5 * kHour, 0.5}, 8);
  tail.classes[2].shifts = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7};
  const WaitModel with(test::synthetic_wait_model_info(), constant_net(), tail),
      without(test::synthetic_wait_model_info(), constant_net());
  const QueueSnapshot q = busy_queue();
  const ForecastJob small{1, 0, 6 * kHour}, large{8, 0, 6 * kHour};
  EXPECT_EQ(with.predict(q, small), without.predict(q, small));  // class 1 node: nothing set
  const WaitQuantiles net = without.predict(q, large);
  EXPECT_EQ(with.predict(q, large), tail.apply(2, net, QueueForecast::plan(q, large).wait));
  EXPECT_GT(with.predict(q, large)[3], net[3]);

  const std::string path = temp_file("model.json");
  write_wait_model(path, with);
  const auto back = read_wait_predictor(path);
  EXPECT_EQ(back->predict(q, large), with.predict(q, large));
  EXPECT_NE(back->describe().find("the network's share 1 / 1 / 0.4"), std::string::npos)
      << back->describe();

  // A bad share is refused naming the field.
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("\"model_weight\":0.4"), 18, "\"model_weight\":1.5");
  std::ofstream(path) << text;
  try {
    (void)read_wait_predictor(path);
    ADD_FAILURE() << "a share of 1.5 was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("field 'tail': expected each size class's blend"),
              std::string::npos)
        << e.what();
  }
}

// A network that states a log-normal wait of `d` whatever the queue: the base (5%) and the
// increments in target units, through the inverse of softplus.
WaitNet net_stating(const LogNormal& d) {
  WaitNet n = constant_net();
  const WaitQuantiles levels = d.levels();
  std::vector<float>& bias = n.experts[0][0].bias;
  bias[0] = wait_target(levels[0]);
  for (std::size_t k = 1; k < levels.size(); ++k) {
    const double step =
        std::max(1e-3, static_cast<double>(wait_target(levels[k]) - wait_target(levels[k - 1])));
    bias[k] = static_cast<float>(std::log(std::expm1(step)));
  }
  return n;
}

// 1-node jobs every hour for 60 days on an idle 16-node machine, waiting `early` in the first 24
// days, `late` in the next 6 (the latest 20% of a 30-day fit window: the tail) and `after` in the
// 30 days after the window (the judged month).
Trace three_eras(const LogNormal& early, const LogNormal& late, const LogNormal& after) {
  std::mt19937 rng(17);
  Trace t;
  t.source = "three-eras";
  t.machine_nodes = 16;
  for (int h = 0; h < 60 * 24; ++h) {
    Job j;
    j.id = h + 1;
    j.submit = kT0 + h * kHour;
    const LogNormal& d = h < 24 * 24 ? early : h < 30 * 24 ? late : after;
    j.start = j.submit + d.draw(rng);
    j.end = j.start + 10 * kMinute;
    j.run_time = 10 * kMinute;
    j.nodes = 1;
    j.time_limit = kHour;
    t.jobs.push_back(j);
  }
  return t;
}

TEST(WaitTail, TheCalibrationWeeksAreTheFitWindowsLastAndNeverTheJudgedMonth) {
  const LogNormal minutes{5 * kMinute, 0.5}, hours{2 * kHour, 0.5}, days{2 * kDay, 0.5};
  ClusterSpec c;
  c.nodes = 16;
  c.priority = PriorityParameters::unweighted();
  const Seconds to = kT0 + 30 * kDay;
  // The window's last 6 days (hours) calibrate; the judged month after it waits days, or minutes.
  const auto fitted_on = [&](const LogNormal& after) {
    const Trace trace = three_eras(minutes, hours, after);
    const WaitTrainingSet data = wait_training_set(trace, c, kT0, to, 0);
    const WaitSplit split = split_for_calibration(data, kT0, to, 6 * kDay);
    EXPECT_EQ(split.calibration_from, to - 6 * kDay);
    for (std::size_t r = 0; r < data.rows; ++r)
      EXPECT_EQ(r >= split.calibration_first,
                data.submits[r] >= split.calibration_from && data.submits[r] < to)
          << "row " << r;
    EXPECT_EQ(first_rows(data, split.calibration_first).submits.back(),
              data.submits[split.calibration_first - 1]);
    std::vector<WaitNet> members{net_stating(minutes)};
    return std::pair{
        fit_model_tail(trace, c, kT0, members, data, split.calibration_first, {}, nullptr),
        tail_rows(members, data, split.calibration_first)};
  };
  const auto [tail, calibration] = fitted_on(days);
  const auto [same_tail, same_rows] = fitted_on(minutes);
  // What the judged month holds changes nothing the file states: neither the offsets nor the
  // blend with the binned distribution of the weeks before the calibration set.
  EXPECT_EQ(tail.classes[0].shifts, same_tail.classes[0].shifts);
  EXPECT_EQ(tail.classes[0].model_weight, same_tail.classes[0].model_weight);
  ASSERT_TRUE(tail.classes[0].binned);
  EXPECT_LE(tail.classes[0].binned->spec.to, to - 6 * kDay);
  EXPECT_EQ(tail.classes[0].tail_jobs, 6u * 24u);
  // The network states minutes; the offsets make its intervals hold the last weeks' hours.
  const WaitScore held = judged(tail, calibration);
  EXPECT_NEAR(*held.in_90, 0.90, 0.05);
  EXPECT_NEAR(*held.in_50, 0.50, 0.08);
  for (const TailRow& r : calibration) EXPECT_GT(r.wait, 20 * kMinute);
}

TEST(WaitTail, ACalibrationSplitLeavingTooFewJobsOnASideIsRefusedNamingTheFlag) {
  const LogNormal minutes{5 * kMinute, 0.5};
  ClusterSpec c;
  c.nodes = 16;
  c.priority = PriorityParameters::unweighted();
  const Trace trace = three_eras(minutes, minutes, minutes);
  const Seconds to = kT0 + 30 * kDay;
  const WaitTrainingSet data = wait_training_set(trace, c, kT0, to, 0);
  try {
    split_for_calibration(data, kT0, to, kHour);  // one job an hour: 1 in the last hour
    FAIL() << "a calibration set of one job was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--calibration-days"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("hold 1 of its 720 fitted jobs"), std::string::npos)
        << e.what();
  }
  // A span longer than a quarter of the window is cut to it.
  EXPECT_EQ(split_for_calibration(data, kT0, to, 20 * kDay).calibration_from, to - 30 * kDay / 4);
}

TEST(WaitTail, CrossFittingCutsTheWindowIntoEqualSpansAndRefusesAFoldOfTooFewJobs) {
  const LogNormal minutes{5 * kMinute, 0.5};
  const Trace trace = three_eras(minutes, minutes, minutes);
  const Seconds to = kT0 + 30 * kDay;
  const WaitTrainingSet data = wait_training_set(trace, test::machine16(), kT0, to, 0);
  const std::vector<WaitFold> folds = time_folds(data, kT0, to, 3);
  ASSERT_EQ(folds.size(), 3u);
  for (std::size_t f = 0; f < folds.size(); ++f) {
    EXPECT_EQ(folds[f].from, kT0 + static_cast<Seconds>(f) * 10 * kDay);
    EXPECT_EQ(folds[f].to, kT0 + static_cast<Seconds>(f + 1) * 10 * kDay);
    EXPECT_EQ(folds[f].last - folds[f].first, 240u);  // one job an hour
    // Its network is fitted on every other row of the window, none of its own.
    const WaitTrainingSet others = rows_outside(data, folds[f]);
    EXPECT_EQ(others.rows, 480u);
    for (Seconds s : others.submits) EXPECT_TRUE(s < folds[f].from || s >= folds[f].to);
  }
  try {
    time_folds(data, kT0, to, 30);  // 24 jobs a fold
    FAIL() << "folds of 24 jobs were accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--cross-fit-folds"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("holds 24 of the window's 720 fitted jobs"),
              std::string::npos)
        << e.what();
  }
}

TEST(WaitTail, EachFoldsJobsAreBlendedWithTheBinnedDistributionFittedWithoutThem) {
  const LogNormal minutes{5 * kMinute, 0.5}, hours{2 * kHour, 0.5};
  const Trace trace = three_eras(minutes, hours, minutes);  // the window's last 6 days wait hours
  const Seconds to = kT0 + 30 * kDay;
  const WaitTrainingSet data = wait_training_set(trace, test::machine16(), kT0, to, 0);
  const std::vector<WaitFold> folds = time_folds(data, kT0, to, 3);
  std::vector<WaitNet> nets(3, net_stating(minutes));
  const std::vector<TailRow> oof =
      out_of_fold_rows(trace, test::machine16(), kT0, to, nets, data, folds);
  ASSERT_EQ(oof.size(), 720u);
  // The last fold's jobs (those hours among them) read the first two folds' minutes; the whole
  // window's distribution, which holds them, states hours at 95%.
  for (std::size_t r = folds[2].first; r < folds[2].last; ++r) {
    ASSERT_TRUE(oof[r].binned);
    EXPECT_LT((*oof[r].binned)[6], 30 * kMinute) << "row " << r;
  }
  const ClassDistributions whole = fit_class_distributions(trace, test::machine16(), kT0, to);
  EXPECT_GT(whole.classes[0]->quantile(0, 0.95), kHour);
  // The blend is chosen with each row's own: the rows wait hours and their out-of-fold binned
  // levels say so; the network says half an hour, the class's distribution (of the window's first
  // 20 days) minutes, so the network alone would win over that.
  std::mt19937 rng(5);
  std::vector<TailRow> stated_hours = rows(1, {30 * kMinute, 0.5}, hours, 300, rng);
  for (TailRow& r : stated_hours) r.binned = hours.levels();
  const WaitTail tail = fit_wait_tail(
      stated_hours,
      {fit_class_distributions(trace, test::machine16(), kT0, kT0 + 20 * kDay).classes[0]}, true,
      false);
  EXPECT_EQ(tail.classes[0].model_weight, 0);
}

TEST(WaitTail, CrossFittedOffsetsHoldOnTheWholeWindowNotOnItsLastWeeks) {
  const LogNormal minutes{5 * kMinute, 0.5}, hours{2 * kHour, 0.5}, days{2 * kDay, 0.5};
  const Seconds to = kT0 + 30 * kDay;
  const auto fitted_on = [&](const LogNormal& after) {
    const Trace trace = three_eras(minutes, hours, after);
    const WaitTrainingSet data = wait_training_set(trace, test::machine16(), kT0, to, 0);
    const std::vector<WaitFold> folds = time_folds(data, kT0, to, 3);
    std::vector<WaitNet> nets(3, net_stating(minutes));
    const std::vector<TailRow> rows =
        out_of_fold_rows(trace, test::machine16(), kT0, to, nets, data, folds);
    return std::pair{
        fit_cross_fitted_tail(trace, test::machine16(), kT0, to, rows, {.blend = false}, nullptr),
        rows};
  };
  const auto [tail, window] = fitted_on(days);
  // Every job of the window set the offsets, and none of the judged month's.
  EXPECT_EQ(tail.classes[0].tail_jobs, 720u);
  EXPECT_EQ(tail.classes[0].shifts, fitted_on(minutes).first.classes[0].shifts);
  // The network states minutes; a fifth of the window waited hours. The offsets hold the
  // window's intervals; the last weeks' alone (all hours) would state hours for every job.
  const WaitScore held = judged(tail, window);
  EXPECT_NEAR(*held.in_90, 0.90, 0.03);
  EXPECT_NEAR(*held.in_50, 0.50, 0.05);
  EXPECT_LT(tail.apply(0, minutes.levels(), 0)[3], 30 * kMinute);
}

TEST(WaitTail, AFileOfTheFirstFormatIsRefusedNamingItsVersion) {
  const std::string path = temp_file("v1.json");
  write_wait_model(path, WaitModel(test::synthetic_wait_model_info(), constant_net()));
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("\"format_version\":3"), 18, "\"format_version\":1");
  std::ofstream(path) << text;
  try {
    (void)read_wait_predictor(path);
    ADD_FAILURE() << "a file of format 1 was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("field 'format_version': expected 2 or 3, got 1: train "
                                         "it again"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mirage

// What the wait model's held-out tail sets per size class (WaitTail.h): the conformal
// recalibration restores the stated coverage of a class that drifted, leaves one that held, and
// the blend leans on whichever of the network and the binned distribution states the tail's
// waits better. The model file carries it, and refuses a tail it cannot read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <random>

#include "WaitModelFixtures.h"
#include "mirage/agents/WaitCheck.h"
#include "mirage/agents/WaitModel.h"
#include "mirage/agents/WaitTail.h"
#include "mirage/core/Error.h"

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
  return ::testing::TempDir() + "/" + std::to_string(::getpid()) + "-tail-" + name;
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

TEST(WaitTail, AFileOfTheFirstFormatIsRefusedNamingItsVersion) {
  const std::string path = temp_file("v1.json");
  write_wait_model(path, WaitModel(test::synthetic_wait_model_info(), constant_net()));
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("\"format_version\":2"), 18, "\"format_version\":1");
  std::ofstream(path) << text;
  try {
    (void)read_wait_predictor(path);
    ADD_FAILURE() << "a file of format 1 was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("field 'format_version': expected 2, got 1: train it "
                                         "again"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mirage

// The recalibration of a wait predictor on the user's own jobs: a drifted model regains its
// stated coverage, too few outcomes leave it alone, and the record `campaign show` prints.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

#include "mirage/daemon/campaigns/WaitCalibration.h"

namespace mirage::daemon {
namespace {

// The standard normal's quantiles at kWaitLevels.
constexpr std::array<double, 7> kZ{-1.6449, -1.2816, -0.6745, 0, 0.6745, 1.2816, 1.6449};

// A model that believes a job's wait is log-normal around `median` (sigma 1).
WaitQuantiles lognormal_quantiles(double median) {
  WaitQuantiles w{};
  for (std::size_t k = 0; k < w.size(); ++k)
    w[k] = static_cast<Seconds>(std::llround(median * std::exp(kZ[k])));
  return w;
}

struct Stream {
  std::mt19937 rng{57};
  std::uniform_real_distribution<double> median{600, 36000};
  std::normal_distribution<double> z{0, 1};
  // A job: the model's quantiles, and the wait it gets, `drift` times what the model believes.
  std::pair<WaitQuantiles, Seconds> next(double drift) {
    const double m = median(rng);
    return {lognormal_quantiles(m),
            static_cast<Seconds>(std::llround(drift * m * std::exp(z(rng))))};
  }
};

// Feeds `jobs` jobs of `stream`, their waits `drift` times the model's, to each calibration.
template <class... Calibrations>
void learn(Stream& stream, double drift, int jobs, Calibrations&... calibrations) {
  for (int i = 0; i < jobs; ++i) {
    const auto [model, wait] = stream.next(drift);
    (calibrations.add(model, wait), ...);
  }
}

double held_90(const std::vector<WaitOutcome>& o) {
  const auto r = interval_record(o);
  return static_cast<double>(r.held_90) / static_cast<double>(r.jobs);
}

TEST(WaitCalibration, ModelWhoseWaitsAreThreeTimesLongerRegainsNinetyPercentCoverage) {
  Stream stream;
  WaitCalibration cal;
  std::vector<WaitOutcome> stated, raw;
  double log_median_factor = 0;  // summed over the stream: one window's is noisy
  for (int i = 0; i < 3000; ++i) {
    const auto [model, wait] = stream.next(3);
    stated.push_back({cal.adjust(model), wait});  // what the daemon says at submission
    raw.push_back({model, wait});
    cal.add(model, wait);  // then learns from the wait the job got
    log_median_factor += std::log(cal.factors()[3]);
  }
  EXPECT_LT(held_90(raw), 0.75);  // the drifted model's own intervals miss
  const double got = held_90(stated);
  EXPECT_GT(got, 0.85);
  EXPECT_LT(got, 0.95);
  const auto r = interval_record(stated);
  const double held_50 = static_cast<double>(r.held_50) / static_cast<double>(r.jobs);
  EXPECT_GT(held_50, 0.42);
  EXPECT_LT(held_50, 0.58);
  EXPECT_NEAR(std::exp(log_median_factor / 3000), 3.0, 0.3);  // the median scaled by the drift
}

TEST(WaitCalibration, AdaptiveLevelsReadFurtherOutWhileTheRecentWaitsKeepMissing) {
  Stream stream;
  AdaptiveWaitCalibration adaptive;
  WaitCalibration fixed(AdaptiveWaitCalibration::kHistory);  // the same outcomes, fixed levels
  learn(stream, 1, 700, adaptive, fixed);                    // the model held
  learn(stream, 3, 300, adaptive, fixed);                    // then the queue tripled
  // Both read the same 1,000 outcomes, most of them from before the drift; the adaptive levels,
  // missed 300 times in a row at the top, read the upper level further out.
  const WaitQuantiles model = lognormal_quantiles(3600);
  EXPECT_GT(adaptive.adjust(model)[6], fixed.adjust(model)[6] * 5 / 4);
  EXPECT_EQ(adaptive.outcomes(), 1000u);
}

TEST(WaitCalibration, ALogsStreamIsRecalibratedPerClassOnlyFromWaitsKnownAtEachSubmission) {
  Stream stream;
  std::vector<StreamJob> jobs;
  std::vector<WaitOutcome> raw;
  // A job every 10 minutes, 8+ nodes three times longer than stated, 1 node as stated.
  for (int i = 0; i < 3000; ++i) {
    const bool large = i % 2 == 0;
    const auto [model, wait] = stream.next(large ? 3 : 1);
    const Seconds submit = i * 600;
    jobs.push_back({submit, submit + wait, large ? 8 : 1, model});
    raw.push_back({model, wait});
  }
  const std::vector<WaitQuantiles> live = recalibrated_live(jobs);
  std::vector<WaitOutcome> large_live, large_raw, small_live;
  for (std::size_t k = 0; k < jobs.size(); ++k)
    (jobs[k].nodes == 8 ? large_live : small_live).push_back({live[k], raw[k].wait});
  for (std::size_t k = 0; k < jobs.size(); k += 2) large_raw.push_back(raw[k]);
  EXPECT_LT(held_90(large_raw), 0.75);
  EXPECT_NEAR(held_90(large_live), 0.90, 0.04);
  EXPECT_NEAR(held_90(small_live), 0.90, 0.04);
  // The first job, before any wait was known, keeps the stated quantiles; and no job's correction
  // reads a wait not known at its submission: where every job starts after the last submission,
  // none is corrected.
  EXPECT_EQ(live[0], jobs[0].stated);
  std::vector<StreamJob> unknown = jobs;
  for (StreamJob& j : unknown) j.start = jobs.back().submit + 1 + (j.start - j.submit);
  const std::vector<WaitQuantiles> none = recalibrated_live(unknown);
  for (std::size_t k = 0; k < unknown.size(); ++k) EXPECT_EQ(none[k], unknown[k].stated);
}

TEST(WaitCalibration, FewerOutcomesThanTheMinimumLeaveTheModelsQuantiles) {
  Stream stream;
  WaitCalibration cal;
  for (std::size_t i = 0; i + 1 < WaitCalibration::kMinOutcomes; ++i) {
    const auto [model, wait] = stream.next(3);
    cal.add(model, wait);
  }
  EXPECT_FALSE(cal.active());
  const WaitQuantiles w = lognormal_quantiles(3600);
  EXPECT_EQ(cal.adjust(w), w);
  const auto [model, wait] = stream.next(3);
  cal.add(model, wait);
  EXPECT_TRUE(cal.active());
  EXPECT_GT(cal.adjust(w)[3], w[3]);
}

TEST(WaitCalibration, AModelThatHoldsIsLeftAboutWhereItWas) {
  Stream stream;
  WaitCalibration cal;
  std::vector<WaitOutcome> stated;
  double log_median_factor = 0;
  for (int i = 0; i < 3000; ++i) {
    const auto [model, wait] = stream.next(1);
    stated.push_back({cal.adjust(model), wait});
    cal.add(model, wait);
    log_median_factor += std::log(cal.factors()[3]);
  }
  EXPECT_NEAR(held_90(stated), 0.9, 0.05);
  EXPECT_NEAR(std::exp(log_median_factor / 3000), 1.0, 0.1);
}

TEST(WaitCalibration, TheWindowForgetsADriftThatEnded) {
  Stream stream;
  WaitCalibration cal;
  for (int i = 0; i < 200; ++i) {
    const auto [model, wait] = stream.next(3);
    cal.add(model, wait);
  }
  for (std::size_t i = 0; i < WaitCalibration::kWindow; ++i) {
    const auto [model, wait] = stream.next(1);
    cal.add(model, wait);
  }
  EXPECT_EQ(cal.outcomes(), WaitCalibration::kWindow);
  EXPECT_NEAR(cal.factors()[3], 1.0, 0.6);  // one window's median: within about 2 sigma of 1
}

// A model that says 0 where the user's jobs wait a quarter of an hour is short by minutes, not by
// a factor of a thousand that would then multiply its hours.
TEST(WaitCalibration, AModelThatSaysNoWaitIsCorrectedByMinutesNotByAFactor) {
  WaitCalibration cal;
  for (std::size_t i = 0; i < WaitCalibration::kMinOutcomes; ++i)
    cal.add(WaitQuantiles{}, static_cast<Seconds>(800 + 20 * i));
  const auto w = cal.adjust(lognormal_quantiles(3600));
  EXPECT_GT(w[3], 3600);
  EXPECT_LT(w[3], 4 * 3600);
  EXPECT_GT(cal.adjust(WaitQuantiles{})[3], 10 * kMinute);
  EXPECT_LT(cal.adjust(WaitQuantiles{})[3], 20 * kMinute);
}

TEST(WaitCalibration, CorrectedQuantilesNeverDecrease) {
  WaitCalibration cal(50, 2);
  // Waits far above the upper levels and at the lower ones pull the levels across each other.
  cal.add({100, 200, 300, 400, 500, 600, 700}, 5000);
  cal.add({100, 200, 300, 400, 500, 600, 700}, 100);
  const auto w = cal.adjust({100, 200, 300, 400, 500, 600, 700});
  for (std::size_t k = 1; k < w.size(); ++k) EXPECT_LE(w[k - 1], w[k]);
}

// 1-node jobs that wait what the model says, 8-node ones `drift` times longer, alternating.
std::vector<std::tuple<int, WaitQuantiles, Seconds>> two_classes(Stream& stream, int jobs,
                                                                 double drift) {
  std::vector<std::tuple<int, WaitQuantiles, Seconds>> out;
  for (int i = 0; i < jobs; ++i) {
    const int nodes = i % 2 == 0 ? 8 : 1;
    const auto [model, wait] = stream.next(nodes == 8 ? drift : 1);
    out.emplace_back(nodes, model, wait);
  }
  return out;
}

TEST(ClassWaitCalibration, AClassIsCorrectedByThePooledStateUntilItHasItsMinimumOfWaits) {
  Stream stream;
  constexpr std::size_t kMinimum = 40;
  ClassWaitCalibration classes(WeightedWaitCalibration(), kMinimum);
  WeightedWaitCalibration pooled, large;  // every wait; the 8-node waits alone
  const WaitQuantiles w = lognormal_quantiles(3600);
  for (const auto& [nodes, model, wait] : two_classes(stream, 200, 3)) {
    classes.add(nodes, model, wait);
    pooled.add(model, wait);
    if (nodes == 8) large.add(model, wait);
    const WeightedWaitCalibration& expected = large.outcomes() < kMinimum ? pooled : large;
    ASSERT_EQ(classes.adjust(8, w), expected.adjust(w)) << large.outcomes() << " 8-node waits";
  }
  EXPECT_EQ(classes.outcomes(), 200u);
  // Pooled, every class reads the one state.
  ClassWaitCalibration one(WeightedWaitCalibration(), kPooled);
  for (const auto& [nodes, model, wait] : two_classes(stream, 100, 3)) one.add(nodes, model, wait);
  EXPECT_EQ(one.adjust(1, w), one.adjust(8, w));
  EXPECT_EQ(one.adjust(1, w), one.pooled().adjust(w));
}

TEST(ClassWaitCalibration, AClassWhoseWaitsDriftDoesNotMoveAnotherClasssIntervals) {
  Stream stream;
  const auto jobs = two_classes(stream, 600, 3);
  ClassWaitCalibration classes;   // the daemon's
  WeightedWaitCalibration small;  // the 1-node waits alone
  for (const auto& [nodes, model, wait] : jobs) {
    classes.add(nodes, model, wait);
    if (nodes == 1) small.add(model, wait);
  }
  const WaitQuantiles w = lognormal_quantiles(3600);
  EXPECT_EQ(classes.adjust(1, w), small.adjust(w));
  // The 8-node waits, three times the model's, moved their own class's median out, not 1 node's.
  EXPECT_GT(classes.adjust(8, w)[3], 2 * classes.adjust(1, w)[3]);
}

// The check's weighted row is the daemon's calibration fed the log's jobs in the order they
// started: pooled, one state for every class.
TEST(ClassWaitCalibration, ALogsStreamPooledIsOneStateFedEveryStartInOrder) {
  Stream stream;
  std::vector<StreamJob> jobs;
  for (const auto& [nodes, model, wait] : two_classes(stream, 400, 3)) {
    const Seconds submit = static_cast<Seconds>(jobs.size()) * 600;
    jobs.push_back({submit, submit + wait, nodes, model});
  }
  const auto pooled = recalibrated_weighted(jobs, WeightedWaitCalibration::kDecay, kPooled);
  // The last job's: every job started by its submission learned, in the order of the starts.
  std::vector<const StreamJob*> started;
  for (const StreamJob& j : jobs)
    if (j.start <= jobs.back().submit) started.push_back(&j);
  std::stable_sort(started.begin(), started.end(),
                   [](const StreamJob* a, const StreamJob* b) { return a->start < b->start; });
  WeightedWaitCalibration one;
  for (const StreamJob* j : started) one.add(j->stated, j->start - j->submit);
  EXPECT_EQ(pooled.back(), one.adjust(jobs.back().stated));
}

TEST(WeightedWaitCalibration, EqualWeightsGiveTheSplitConformalRanks) {
  Stream stream;
  std::vector<WaitOutcome> outcomes;
  for (std::size_t n = 1; n <= 60; ++n) {
    const auto [model, wait] = stream.next(2);
    outcomes.push_back({model, wait});
    EXPECT_EQ(weighted_conformal_shifts(outcomes, std::vector<double>(n, 1.0)),
              conformal_shifts(outcomes))
        << n << " outcomes";
  }
}

TEST(WeightedWaitCalibration, TheRecentWaitsOutweighTheOlderOnes) {
  Stream stream;
  WeightedWaitCalibration weighted;
  WaitCalibration alike(WeightedWaitCalibration::kHistory);  // the same outcomes, equal weights
  learn(stream, 1, 800, weighted, alike);                    // the model held
  learn(stream, 5, 200, weighted, alike);                    // then the queue's waits grew fivefold
  // Four in five of the outcomes are from before; weighted by recency, the last 200 carry most of
  // the weight, and the median follows them.
  const WaitQuantiles model = lognormal_quantiles(3600);
  EXPECT_GT(weighted.adjust(model)[3], 2 * model[3]);
  EXPECT_LT(alike.adjust(model)[3], 3 * model[3] / 2);
  EXPECT_EQ(weighted.outcomes(), 1000u);
}

TEST(IntervalRecord, CountsTheIntervalsThatHeldAndTheMedianError) {
  const WaitQuantiles w{60, 120, 600, 1200, 1800, 3600, 7200};
  const std::vector<WaitOutcome> o{{w, 1200}, {w, 3000}, {w, 9000}};
  const auto r = interval_record(o);
  EXPECT_EQ(r.jobs, 3u);
  EXPECT_EQ(r.held_90, 2u);
  EXPECT_EQ(r.held_50, 1u);
  EXPECT_EQ(r.median_error, 1800);
  EXPECT_EQ(describe(r), "90% intervals held 2 of 3 jobs; 50% held 1 of 3; median error 30m");
  EXPECT_EQ(describe(IntervalRecord{}), "no job started yet");
}

}  // namespace
}  // namespace mirage::daemon

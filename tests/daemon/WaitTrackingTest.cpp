// The daemon's record of its wait predictions: each job's predicted quantiles at submission and
// the wait it got, kept in the store across restarts, and the recalibration they feed.
#include <gtest/gtest.h>
#include <unistd.h>

#include "TestSupport.h"
#include "mirage/agents/WaitDistribution.h"
#include "mirage/daemon/control/ControlProtocol.h"

namespace mirage::daemon {
namespace {

using testing::Harness;
using testing::simple_request;

// A binned distribution of 1-node waits that says every job waits 0 to 30 minutes.
std::string write_short_waits(const testing::TempDir& dir) {
  WaitDistribution d;
  d.spec.from = 1'600'000'000;
  d.spec.to = d.spec.from + 60 * kDay;
  WaitDistribution::Bin bin;
  bin.jobs = 40;
  for (int k = 0; k < WaitDistribution::kLevels; ++k)
    bin.waits[static_cast<std::size_t>(k)] = k * 90;
  d.bins.push_back(bin);
  const std::string file = dir.file("waits.toml");
  write_wait_distribution(file, d);
  return file;
}

ControllerConfig config_with(const std::string& waits) {
  ControllerConfig c;
  c.fallback_chain = false;  // each segment submitted free to start when its predecessor ends
  c.fallback_lead = 0;
  c.wait_distribution_file = waits;
  return c;
}

// Runs segment by segment: each job waits `wait` in the queue, then runs and ends.
void run_segments(Harness& h, std::int64_t id, int segments, Seconds wait) {
  for (int k = 0; k < segments; ++k) {
    h.tick();  // submits segment k
    const JobId job = h.job_of(id, k);
    ASSERT_GT(job, 0) << "segment " << k;
    h.clock.advance(wait);
    h.slurm.start(job);
    h.tick();  // sees it start
    h.clock.advance(10 * kMinute);
    h.slurm.finish(job);
  }
}

TEST(WaitTracking, EachJobsPredictionAndWaitAreKeptAndTheCalibrationLearnsFromThem) {
  testing::TempDir dir;
  Harness h(config_with(write_short_waits(dir)));
  const auto id = h.controller->add(simple_request(12)).spec.id;
  run_segments(h, id, 12, 3 * kHour);  // six times the longest wait the file knows
  const auto waits = h.store->started_waits(id, 100);
  ASSERT_EQ(waits.size(), 12u);
  for (std::size_t i = 0; i < waits.size(); ++i) {
    EXPECT_EQ(waits[i].segment, static_cast<int>(i));
    EXPECT_EQ(waits[i].wait, 3 * kHour);
    EXPECT_LE(waits[i].model[6], 30 * kMinute);
    EXPECT_EQ(waits[i].predictor_digest, predictor_digest(h.config_.wait_distribution_file));
    // Before ten outcomes the model's own quantiles stand; from then on, the recalibrated ones.
    if (i < WaitCalibration::kMinOutcomes)
      EXPECT_EQ(waits[i].stated, waits[i].model) << i;
    else
      EXPECT_EQ(waits[i].stated[3], 3 * kHour) << i;
  }
  const auto record = wait_record_json(*h.store, id, 100);
  EXPECT_EQ(record.at("summary"),
            "90% intervals held 2 of 12 jobs; 50% held 2 of 12; median error " +
                format_short_duration(3 * kHour - waits[0].model[3]));
  // What `quantile` reads says so too: the median wait of a job now is the user's 3 hours.
  const CalibratedWaitPredictor* p = h.controller->wait_predictor();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->quantile(QueueSnapshot{}, ForecastJob{1, 4, kHour}, 0.5), 3 * kHour);
  EXPECT_NE(p->describe().find("recalibrated on the last 12 jobs"), std::string::npos)
      << p->describe();
  // A restarted daemon reads the outcomes back.
  h.restart();
  EXPECT_EQ(
      h.controller->wait_predictor()->quantile(QueueSnapshot{}, ForecastJob{1, 4, kHour}, 0.5),
      3 * kHour);
}

TEST(WaitTracking, ARefitFileIsAnotherPredictorWhoseCalibrationStartsAfresh) {
  testing::TempDir dir;
  const std::string file = write_short_waits(dir);
  Harness h(config_with(file));
  const auto id = h.controller->add(simple_request(10)).spec.id;
  run_segments(h, id, 10, 3 * kHour);
  ASSERT_TRUE(h.controller->wait_predictor()->describe().find("recalibrated") != std::string::npos);
  // The weekly refit wrote a new file over the same path: the old residuals say nothing of it.
  WaitDistribution d = read_wait_distribution(file);
  d.bins[0].jobs = 41;
  write_wait_distribution(file, d);
  h.restart();
  EXPECT_NE(h.controller->wait_predictor()->describe().find("not recalibrated yet (0 of 10"),
            std::string::npos)
      << h.controller->wait_predictor()->describe();
}

TEST(WaitTracking, ASuccessorHeldBehindItsPredecessorIsPredictedWhenReleased) {
  testing::TempDir dir;
  ControllerConfig c = config_with(write_short_waits(dir));
  c.fallback_chain = true;
  c.decision_interval = 600;
  testing::Scripted policy;
  Harness h(c, policy.factory());
  auto r = simple_request(2, 4 * kHour);
  r.policy = "scripted";
  const auto id = h.controller->add(r).spec.id;
  h.tick();
  h.slurm.start(h.job_of(id, 0));
  h.tick();
  h.tick();  // segment 1 queued behind segment 0: its wait has not begun
  ASSERT_GT(h.job_of(id, 1), 0);
  ASSERT_TRUE(h.slurm.held(h.job_of(id, 1)));
  EXPECT_EQ(h.store->predicted_waits(id), 1u);
  policy.submit = true;
  h.clock.advance(c.decision_interval);
  h.tick();  // released: now it waits in the queue
  ASSERT_FALSE(h.slurm.held(h.job_of(id, 1)));
  EXPECT_EQ(h.store->predicted_waits(id), 2u);
}

TEST(WaitTracking, WithoutAWaitPredictorNothingIsRecordedOrShown) {
  Harness h(config_with(""));
  const auto id = h.controller->add(simple_request(2)).spec.id;
  run_segments(h, id, 2, kHour);
  EXPECT_EQ(h.store->predicted_waits(std::nullopt), 0u);
  EXPECT_TRUE(wait_record_json(*h.store, id, 100).is_null());
  EXPECT_EQ(h.controller->wait_predictor(), nullptr);
}

}  // namespace
}  // namespace mirage::daemon

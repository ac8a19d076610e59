// The daemon's record of its wait predictions: each job's predicted quantiles at submission and
// the wait it got, kept in the store across restarts, and the recalibration they feed.
#include <gtest/gtest.h>
#include <unistd.h>

#include "ShortWaits.h"
#include "TestSupport.h"
#include "mirage/agents/WaitDistribution.h"
#include "mirage/agents/WaitModel.h"
#include "mirage/daemon/control/ControlProtocol.h"

namespace mirage::daemon {
namespace {

using testing::Harness;
using testing::simple_request;
using testing::write_short_waits;

// A wait model that reads partitions: its median is the partition's mean wait, 6 hours in "gpu"
// (where the fake Slurm puts a job that names none) and 5 minutes in any other, or none.
std::string write_partition_model(const testing::TempDir& dir) {
  WaitNet net;
  net.input_mean.assign(kWaitModelInputs, 0.f);
  net.input_scale.assign(kWaitModelInputs, 1.f);
  net.max_target = 12.f;
  DenseLayer out{kWaitModelInputs, static_cast<int>(kWaitLevels.size()), {}, {}};
  out.weights.assign(static_cast<std::size_t>(out.inputs * out.outputs), 0.f);
  // The base (5%) is the partition's mean target, read at half scale (inputs are held within 5).
  net.input_scale[kWaitModelInputs - 2] = 2.f;
  out.weights[kWaitModelInputs - 2] = 2.f;
  out.bias = {0.f, -9.f, -9.f, -9.f, -9.f, -9.f, -9.f};  // increments of almost nothing
  net.experts.push_back({out});
  WaitModelInfo info;
  info.trace = "synthetic";
  info.from = 1'600'000'000;
  info.to = info.from + 60 * kDay;
  info.jobs = 1000;
  info.machine_nodes = 4;
  info.categories.field = "partition";
  info.categories.mean_target = wait_target(5 * kMinute);
  info.categories.table = {{"gpu", {wait_target(6 * kHour), 0.5f}},
                           {"short", {wait_target(5 * kMinute), 0.5f}}};
  const std::string file = dir.file("waits.json");
  write_wait_model(file, WaitModel(info, net));
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
  EXPECT_NE(p->describe().find(
                "recalibrated by weighted conformal (decay 0.995 a job) on the last 12 jobs"),
            std::string::npos)
      << p->describe();
  // A restarted daemon reads the outcomes back.
  h.restart();
  EXPECT_EQ(
      h.controller->wait_predictor()->quantile(QueueSnapshot{}, ForecastJob{1, 4, kHour}, 0.5),
      3 * kHour);
}

// What the daemon's predictor states for a 1-node job now.
WaitQuantiles stated_now(const Harness& h) {
  return h.controller->wait_predictor()->predict(QueueSnapshot{}, ForecastJob{1, 4, kHour});
}

// Pairs k of segments of campaigns `a` and `b` whose waits drift; with `swapped`, b's job starts
// first but both starts are seen in one tick, a's learned first, against the order they happened.
void run_pairs(Harness& h, std::int64_t a, std::int64_t b, int first, int last, bool swapped) {
  for (int k = first; k < last; ++k) {
    h.tick();  // submits both segments k
    const JobId ja = h.job_of(a, k), jb = h.job_of(b, k);
    ASSERT_GT(ja, 0);
    ASSERT_GT(jb, 0);
    h.clock.advance((k % 7 + 1) * 20 * kMinute);
    h.slurm.start(swapped ? jb : ja);
    h.clock.advance((k % 3) * 25 * kMinute);
    h.slurm.start(swapped ? ja : jb);
    h.tick();  // sees both start
    h.clock.advance(10 * kMinute);
    h.slurm.finish(ja);
    h.slurm.finish(jb);
  }
}

TEST(WaitTracking, ARestartedDaemonStatesTheIntervalsOfOneThatNeverStopped) {
  testing::TempDir dir;
  Harness h(config_with(write_short_waits(dir)));
  const auto a = h.controller->add(simple_request(50, 4 * kHour, "a")).spec.id;
  const auto b = h.controller->add(simple_request(50, 4 * kHour, "b")).spec.id;
  // More outcomes than the old window of 50, their starts seen out of order.
  run_pairs(h, a, b, 0, 35, true);
  ASSERT_EQ(h.store->started_waits(std::nullopt, 1000).size(), 70u);
  const WaitQuantiles never_stopped = stated_now(h);
  // The file's quantiles say 30 minutes at most; the user's waits moved them.
  ASSERT_GT(never_stopped[6], 2 * kHour);
  h.restart();
  EXPECT_EQ(stated_now(h), never_stopped);
  // Then in order: what is learned from every outcome since is the whole sequence's too.
  run_pairs(h, a, b, 35, 45, false);
  const WaitQuantiles later = stated_now(h);
  h.restart();
  EXPECT_EQ(stated_now(h), later);
  // Which is the weighted rule's on every outcome, in the order of their starts.
  WeightedWaitCalibration expected;
  for (const auto& w : h.store->started_waits(std::nullopt, 1000)) expected.add(w.model, w.wait);
  const WaitQuantiles model = h.controller->wait_predictor()->predict_uncalibrated(
      QueueSnapshot{}, ForecastJob{1, 4, kHour}, "");
  EXPECT_EQ(later, expected.adjust(model));
}

// What the daemon's predictor states for a job of `nodes` nodes now.
WaitQuantiles stated_now(const Harness& h, int nodes) {
  return h.controller->wait_predictor()->predict(QueueSnapshot{}, ForecastJob{nodes, 4, kHour});
}

CampaignRequest request_of(int nodes, int segments, const std::string& name) {
  CampaignRequest r = simple_request(segments, 4 * kHour, name);
  r.shape.nodes = nodes;
  return r;
}

// A 1-node campaign and an 8-node one, each with 20 jobs more than a class needs for its own
// state, run segment by segment side by side: the 1-node jobs wait 10 to 40 minutes, about what
// the file says, the 8-node ones 4 to 10 hours. Returns the 1-node campaign's id.
std::int64_t run_two_classes(Harness& h) {
  const int segments = static_cast<int>(kMinClassOutcomes) + 20;
  const auto small = h.controller->add(request_of(1, segments, "small")).spec.id;
  const auto large = h.controller->add(request_of(8, segments, "large")).spec.id;
  for (int k = 0; k < segments; ++k) {
    h.tick();  // submits segment k of each
    const JobId js = h.job_of(small, k), jl = h.job_of(large, k);
    EXPECT_GT(js, 0);
    EXPECT_GT(jl, 0);
    h.clock.advance((k % 4 + 1) * 10 * kMinute);
    h.slurm.start(js);
    h.tick();
    h.clock.advance((k % 7 + 4) * kHour);
    h.slurm.start(jl);
    h.tick();
    h.clock.advance(10 * kMinute);
    h.slurm.finish(js);
    h.slurm.finish(jl);
  }
  return small;
}

TEST(WaitTracking, AClassWhoseWaitsDriftDoesNotMoveAnotherClasssIntervals) {
  testing::TempDir dir;
  Harness h(config_with(write_short_waits(dir)));
  const std::int64_t small = run_two_classes(h);
  // The 8-node waits, hours where the file says minutes, moved their own class's intervals...
  EXPECT_GT(stated_now(h, 8)[3], 2 * kHour);
  // ...and not the 1-node class's: it states what the 1-node waits alone call for, in the order
  // they started, which all the waits together would not.
  WeightedWaitCalibration alone, all;
  for (const auto& w : h.store->started_waits(std::nullopt, 1000)) {
    if (w.campaign == small) alone.add(w.model, w.wait);
    all.add(w.model, w.wait);
  }
  const WaitQuantiles model = h.controller->wait_predictor()->predict_uncalibrated(
      QueueSnapshot{}, ForecastJob{1, 4, kHour}, "");
  ASSERT_NE(alone.adjust(model), all.adjust(model));
  EXPECT_EQ(stated_now(h, 1), alone.adjust(model));
  EXPECT_LT(stated_now(h, 1)[6], 2 * kHour);
}

TEST(WaitTracking, ARestartRestoresEachClasssState) {
  testing::TempDir dir;
  Harness h(config_with(write_short_waits(dir)));
  run_two_classes(h);
  const WaitQuantiles one = stated_now(h, 1), eight = stated_now(h, 8);
  ASSERT_NE(one, eight);
  h.restart();
  EXPECT_EQ(stated_now(h, 1), one);
  EXPECT_EQ(stated_now(h, 8), eight);
}

TEST(WaitTracking, AStillPendingSuccessorChangesNothing) {
  testing::TempDir dir;
  Harness h(config_with(write_short_waits(dir)));
  const auto id = h.controller->add(simple_request(14)).spec.id;
  run_segments(h, id, 12, 3 * kHour);
  const WaitQuantiles before = stated_now(h);
  h.tick();  // submits segment 12, which waits in the queue
  ASSERT_GT(h.job_of(id, 12), 0);
  ASSERT_EQ(h.store->predicted_waits(id), 13u);
  h.clock.advance(20 * kHour);
  h.tick();
  EXPECT_EQ(stated_now(h), before);
  h.restart();
  EXPECT_EQ(stated_now(h), before);
  // Once it starts, its 20 hours are learned.
  h.slurm.start(h.job_of(id, 12));
  h.tick();
  EXPECT_GT(stated_now(h)[6], before[6]);
}

// A submission Slurm refused for now (a submit limit) is made again later under the same
// attempt: its wait runs from the try Slurm took, and is predicted as things stood then.
TEST(WaitTracking, ASubmissionRefusedForNowWaitsFromTheTrySlurmTook) {
  testing::TempDir dir;
  ControllerConfig c = config_with(write_short_waits(dir));
  c.retry_delay = 4 * kHour;
  Harness h(c);
  // Enough outcomes for the recalibration to act, and one more job queued whose start moves it.
  const auto other = h.controller->add(simple_request(12, kHour, "other")).spec.id;
  run_segments(h, other, 11, 3 * kHour);
  h.tick();
  const JobId moves_calibration = h.job_of(other, 11);
  ASSERT_GT(moves_calibration, 0);
  const auto id = h.controller->add(simple_request(1, kHour, "refused")).spec.id;
  h.slurm.refuse_next_submit("QOSMaxSubmitJobPerUserLimit", /*for_now=*/true);
  h.tick();
  ASSERT_EQ(h.seg(id, 0).seg.state, SegmentState::kPlanned);
  const WaitQuantiles at_refusal = stated_now(h);
  h.clock.advance(c.retry_delay / 2);
  h.slurm.start(moves_calibration);
  h.tick();
  h.clock.advance(c.retry_delay - c.retry_delay / 2);
  const WaitQuantiles at_retry = stated_now(h);
  ASSERT_NE(at_retry, at_refusal);
  const Seconds retried = h.clock.now();
  h.tick();  // Slurm takes it now
  const JobId job = h.job_of(id, 0);
  ASSERT_GT(job, 0);
  const Seconds waited = 2 * kHour;
  h.clock.advance(waited);
  h.slurm.start(job);
  h.tick();
  const auto waits = h.store->started_waits(id, 10);
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].wait, waited);
  EXPECT_EQ(waits[0].queued_at, h.controller->on_controller_clock(retried));
  EXPECT_EQ(waits[0].stated, at_retry);
}

// A first try whose reply was lost, sent again under its attempt and refused for now (its wait
// prediction withdrawn), whose job slurmctld makes late: followed at the next submission, it
// entered the queue hours before any forecast the daemon could make now, so no wait of it is
// recorded or learned, started already or not.
void follow_late_job_after_refusal(bool started_before_followed) {
  testing::TempDir dir;
  ControllerConfig c = config_with(write_short_waits(dir));
  c.retry_delay = kHour;
  Harness h(c);
  const auto id = h.controller->add(simple_request(1, kHour, "late")).spec.id;
  const Seconds submitted = h.controller->on_controller_clock(h.clock.now());
  const Actions first = h.tick(/*perform=*/false);
  ASSERT_EQ(first.submits.size(), 1u);
  testing::lose_reply_then_refuse_for_now(h, first.submits[0], c.reconcile_delay);
  ASSERT_EQ(h.seg(id, 0).seg.state, SegmentState::kPlanned);
  ASSERT_TRUE(h.slurm.submissions().empty());
  // slurmctld makes the first try's job now, as of the submission it received.
  const JobId job = h.slurm.create_job(first.submits[0].request, submitted);
  const Seconds waited = 2 * kHour;  // beyond the retry delay: started before it is followed
  const Seconds retry = c.retry_delay;
  h.clock.advance(started_before_followed ? waited : retry);
  if (started_before_followed) h.slurm.start(job);
  h.clock.advance(started_before_followed ? retry : waited - retry);
  h.tick();  // the retry finds the job and follows it
  ASSERT_EQ(h.job_of(id, 0), job);
  if (!started_before_followed) {
    h.slurm.start(job);
    h.tick();
  }
  ASSERT_EQ(h.seg(id, 0).seg.state, SegmentState::kRunning);
  ASSERT_TRUE(h.slurm.submissions().empty());
  EXPECT_EQ(h.store->predicted_waits(id), 0u);
  EXPECT_TRUE(h.store->started_waits(id, 10).empty());
}

TEST(WaitTracking, ALateJobFollowedRunningAfterARefusalIsNotLearned) {
  follow_late_job_after_refusal(/*started_before_followed=*/true);
}

TEST(WaitTracking, ALateJobFollowedPendingAfterARefusalIsNotLearned) {
  follow_late_job_after_refusal(/*started_before_followed=*/false);
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

TEST(WaitTracking, SuccessorsArePredictedAndDecidedInTheirCampaignsPartition) {
  testing::TempDir dir;
  Harness h(config_with(write_partition_model(dir)));
  auto in_short = simple_request(2, 4 * kHour, "short-run");
  in_short.shape.partition = "short";
  in_short.policy = "quantile";
  auto in_default = simple_request(2, 4 * kHour, "default-run");  // Slurm puts it in "gpu"
  in_default.policy = "quantile";
  const auto s = h.controller->add(in_short).spec.id;
  const auto d = h.controller->add(in_default).spec.id;
  h.tick();  // both first segments submitted
  for (const auto id : {s, d}) h.slurm.start(h.job_of(id, 0));
  h.tick();  // both seen running; the second one's partition is "gpu", as Slurm granted
  EXPECT_EQ(h.campaign(d).spec.partition, "gpu");
  h.clock.advance(kHour);
  h.tick();  // 3 hours left of each predecessor
  // `quantile` asks the model in the campaign's partition: "gpu" waits 6 hours, so its successor
  // goes now; "short" waits minutes, so its successor waits.
  ASSERT_GT(h.job_of(d, 1), 0);
  EXPECT_EQ(h.job_of(s, 1), 0);
  // And the prediction kept beside the decisions was made in that partition too.
  h.slurm.start(h.job_of(d, 1));
  h.tick();
  const auto waits = h.store->started_waits(d, 10);
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_LT(waits[0].model[3], 10 * kMinute);  // submitted before Slurm named the partition
  EXPECT_NEAR(static_cast<double>(waits[1].model[3]), 6.0 * kHour, 0.05 * kHour);
  const auto short_waits = h.store->started_waits(s, 10);
  ASSERT_EQ(short_waits.size(), 1u);
  EXPECT_LT(short_waits[0].model[3], 10 * kMinute);
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

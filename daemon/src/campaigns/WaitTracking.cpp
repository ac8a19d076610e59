// The daemon's own record of its wait predictions: what the predictor said when each job
// entered the queue, the wait the job got, and the calibration those outcomes feed
// (WaitCalibration.h), which the `quantile` policy then decides by and every stated interval is
// recorded under.
#include <spdlog/spdlog.h>

#include <limits>
#include <tuple>

#include "campaigns/CampaignEntry.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/daemon/campaigns/CampaignController.h"

namespace mirage::daemon {
namespace {

// Every stored outcome (SQLite's LIMIT is a signed 64-bit count).
constexpr std::size_t kEveryOutcome = std::numeric_limits<std::int64_t>::max();

}  // namespace

void CampaignController::predict_wait(const Entry& e, const SegmentRecord& s, Seconds now,
                                      const QueueSnapshot& queue) {
  if (!waits_) return;
  const ForecastJob job{e.rec.spec.nodes, e.rec.spec.gpus_per_node, e.rec.spec.time_limit};
  WaitPredictionRecord r;
  r.campaign = e.rec.spec.id;
  r.segment = s.seg.index;
  r.attempt = s.seg.attempts;
  r.queued_at = on_controller_clock(now);  // its start, which the wait runs to, is slurmctld's
  r.predictor = config_.wait_distribution_file;
  r.predictor_digest = waits_digest_;
  r.model = waits_->predict_uncalibrated(queue, job, e.rec.spec.partition);
  r.stated = calibration_->adjust(job.nodes, r.model);
  store_.record_wait_prediction(r);
}

void CampaignController::wait_started(const Entry& e, const SegmentRecord& s) {
  const auto r =
      store_.record_wait_start(e.rec.spec.id, s.seg.index, s.seg.attempts, s.seg.start_time);
  if (!r || !waits_ || r->predictor_digest != waits_digest_) return;
  const std::tuple<Seconds, std::int64_t, int> key{r->started, r->campaign, r->segment};
  if (key < learned_up_to_) {  // seen after a later start: learned in the order of the starts
    restore_calibration();
    return;
  }
  calibration_->add(r->nodes, r->model, r->wait);
  learned_up_to_ = key;
}

void CampaignController::follow_granted_partition(Entry& e) {
  // A policy an injected factory made (the tests' scripted ones) stays as it was made.
  if (!waits_ || factory_ || !e.policy || !reads_wait_distribution(PolicySpec(e.rec.spec.policy)))
    return;
  try {  // `quantile` keeps nothing between decisions but its predictor
    e.policy = make_policy_for(e.rec.spec.policy, e.rec.spec.partition);
  } catch (const std::exception& ex) {
    spdlog::warn("campaign {}: policy '{}' kept for partition {}: {}", e.rec.spec.id,
                 e.rec.spec.policy, e.rec.spec.partition, ex.what());
  }
}

void CampaignController::restore_calibration() {
  if (!waits_) return;
  *calibration_ = ClassWaitCalibration();
  learned_up_to_ = {kUnknownTime, 0, 0};
  for (const auto& r : store_.started_waits(std::nullopt, kEveryOutcome, waits_digest_)) {
    calibration_->add(r.nodes, r.model, r.wait);
    learned_up_to_ = {r.started, r.campaign, r.segment};
  }
  spdlog::info("wait predictor {}", waits_->describe());
}

}  // namespace mirage::daemon

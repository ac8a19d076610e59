#include "mirage/daemon/campaigns/WaitCalibration.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

#include "mirage/agents/WaitTail.h"
#include "mirage/core/Fnv.h"
#include "mirage/core/Time.h"

namespace mirage::daemon {

WaitCalibration::WaitCalibration(std::size_t window, std::size_t min_outcomes)
    : window_size_(std::max<std::size_t>(1, window)), min_outcomes_(min_outcomes) {}

void WaitCalibration::add(const WaitQuantiles& model, Seconds wait) {
  window_.push_back({model, wait});
  if (window_.size() > window_size_)
    window_.erase(window_.begin(),
                  window_.begin() + static_cast<std::ptrdiff_t>(window_.size() - window_size_));
  shift_ = active() ? conformal_shifts(window_) : LevelShifts{};
}

WaitQuantiles WaitCalibration::adjust(const WaitQuantiles& model) const {
  return active() ? shift_levels(model, shift_) : model;
}

std::array<double, kWaitLevels.size()> WaitCalibration::factors() const {
  std::array<double, kWaitLevels.size()> f{};
  for (std::size_t k = 0; k < f.size(); ++k) f[k] = std::exp(shift_[k]);  // on wait + 10 min
  return f;
}

CalibratedWaitPredictor::CalibratedWaitPredictor(
    std::shared_ptr<const WaitPredictor> model,
    std::shared_ptr<const ClassWaitCalibration> calibration, std::string partition)
    : model_(std::move(model)),
      calibration_(std::move(calibration)),
      partition_(std::move(partition)) {}

std::shared_ptr<const CalibratedWaitPredictor> CalibratedWaitPredictor::in_partition(
    std::string partition) const {
  return std::make_shared<CalibratedWaitPredictor>(model_, calibration_, std::move(partition));
}

WaitQuantiles CalibratedWaitPredictor::predict(const QueueSnapshot& queue,
                                               const ForecastJob& job) const {
  return predict_in_partition(queue, job, partition_);
}

WaitQuantiles CalibratedWaitPredictor::predict_in_partition(const QueueSnapshot& queue,
                                                            const ForecastJob& job,
                                                            const std::string& partition) const {
  return calibration_->adjust(job.nodes, predict_uncalibrated(queue, job, partition));
}

WaitQuantiles CalibratedWaitPredictor::predict_uncalibrated(const QueueSnapshot& queue,
                                                            const ForecastJob& job,
                                                            const std::string& partition) const {
  return model_->predict_in_partition(queue, job, partition);
}

std::optional<std::string> CalibratedWaitPredictor::chain_mismatch(int nodes) const {
  return model_->chain_mismatch(nodes);
}

std::string CalibratedWaitPredictor::describe() const {
  const std::size_t seen = calibration_->outcomes();
  if (seen < WeightedWaitCalibration::kMinOutcomes)
    return model_->describe() + fmt::format("; not recalibrated yet ({} of {} jobs seen)", seen,
                                            WeightedWaitCalibration::kMinOutcomes);
  const std::size_t minimum = calibration_->min_class_outcomes();
  return model_->describe() +
         fmt::format(
             "; recalibrated by weighted conformal (decay {:g} a job) on the last {} "
             "jobs{}",
             calibration_->pooled().decay(), std::min(seen, WeightedWaitCalibration::kHistory),
             minimum == kPooled ? std::string()
                                : fmt::format(", per size class from {} of its jobs", minimum));
}

bool CalibratedWaitPredictor::speaks_for(const Job& job, int chain_nodes) const {
  return model_->speaks_for(job, chain_nodes);
}

void AdaptiveWaitCalibration::add(const WaitQuantiles& model, Seconds wait) {
  if (active()) {  // how the correction in force did on this wait moves each working level
    const WaitQuantiles stated = shift_levels(model, shift_);
    for (std::size_t k = 0; k < working_.size(); ++k)
      working_[k] += step_ * (kWaitLevels[k] - (wait <= stated[k] ? 1.0 : 0.0));
  }
  history_.push_back({model, wait});
  if (history_.size() > kHistory) history_.erase(history_.begin());
  shift_ = active() ? conformal_shifts(history_, working_) : LevelShifts{};
}

WaitQuantiles AdaptiveWaitCalibration::adjust(const WaitQuantiles& model) const {
  return active() ? shift_levels(model, shift_) : model;
}

void WeightedWaitCalibration::add(const WaitQuantiles& model, Seconds wait) {
  history_.push_back({model, wait});
  if (history_.size() > kHistory) history_.erase(history_.begin());
  if (!active()) return;
  std::vector<double> weights(history_.size());
  double w = decay_;  // the newest: one job before the job to come, which weighs 1
  for (std::size_t i = weights.size(); i-- > 0; w *= decay_) weights[i] = w;
  shift_ = weighted_conformal_shifts(history_, weights);
}

WaitQuantiles WeightedWaitCalibration::adjust(const WaitQuantiles& model) const {
  return active() ? shift_levels(model, shift_) : model;
}

namespace {

// Each job's quantiles as `adjust(job)` states them after `learn(o)` has seen every job o of the
// stream started by its submission, in the order of their starts.
template <class Learn, class Adjust>
std::vector<WaitQuantiles> recalibrated_stream(const std::vector<StreamJob>& jobs, Learn learn,
                                               Adjust adjust) {
  std::vector<std::size_t> by_start(jobs.size());
  for (std::size_t k = 0; k < by_start.size(); ++k) by_start[k] = k;
  std::stable_sort(by_start.begin(), by_start.end(),
                   [&](std::size_t a, std::size_t b) { return jobs[a].start < jobs[b].start; });
  std::vector<std::size_t> by_submit = by_start;
  std::stable_sort(by_submit.begin(), by_submit.end(),
                   [&](std::size_t a, std::size_t b) { return jobs[a].submit < jobs[b].submit; });
  std::vector<WaitQuantiles> out(jobs.size());
  std::size_t next = 0;  // in by_start: the first wait not yet learned
  for (const std::size_t k : by_submit) {
    for (; next < by_start.size() && jobs[by_start[next]].start <= jobs[k].submit; ++next)
      learn(jobs[by_start[next]]);
    out[k] = adjust(jobs[k]);
  }
  return out;
}

// The same stream through a calibration kept per size class, as the daemon keeps it.
template <class State>
std::vector<WaitQuantiles> recalibrated_per_class(const std::vector<StreamJob>& jobs,
                                                  PerClassCalibration<State> live) {
  return recalibrated_stream(
      jobs, [&](const StreamJob& o) { live.add(o.nodes, o.stated, o.start - o.submit); },
      [&](const StreamJob& j) { return live.adjust(j.nodes, j.stated); });
}

}  // namespace

std::vector<WaitQuantiles> recalibrated_live(const std::vector<StreamJob>& jobs) {
  std::array<WaitCalibration, kSizeClasses> live;
  return recalibrated_stream(
      jobs,
      [&](const StreamJob& o) {
        live[size_class_index(o.nodes)].add(o.stated, o.start - o.submit);
      },
      [&](const StreamJob& j) { return live[size_class_index(j.nodes)].adjust(j.stated); });
}

std::vector<WaitQuantiles> recalibrated_adaptive(const std::vector<StreamJob>& jobs, double step,
                                                 std::size_t min_class_outcomes) {
  return recalibrated_per_class(jobs, PerClassCalibration<AdaptiveWaitCalibration>(
                                          AdaptiveWaitCalibration(step), min_class_outcomes));
}

std::vector<WaitQuantiles> recalibrated_weighted(const std::vector<StreamJob>& jobs, double decay,
                                                 std::size_t min_class_outcomes) {
  return recalibrated_per_class(
      jobs, ClassWaitCalibration(WeightedWaitCalibration(decay), min_class_outcomes));
}

std::string predictor_digest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Fnv1a h;
  h.add(bytes.data(), bytes.size());
  return fmt::format("{:016x}", h.h);
}

IntervalRecord interval_record(const std::vector<WaitOutcome>& outcomes) {
  IntervalRecord r;
  std::vector<Seconds> errors;
  for (const auto& o : outcomes) {
    const auto& w = o.predicted;
    ++r.jobs;
    r.held_90 += o.wait >= w[0] && o.wait <= w[6];
    r.held_50 += o.wait >= w[2] && o.wait <= w[4];
    errors.push_back(std::llabs(o.wait - w[3]));
  }
  if (!errors.empty()) {
    const auto mid = errors.begin() + static_cast<std::ptrdiff_t>(errors.size() / 2);
    std::nth_element(errors.begin(), mid, errors.end());
    r.median_error = *mid;
  }
  return r;
}

std::string describe(const IntervalRecord& r) {
  if (r.jobs == 0) return "no job started yet";
  return fmt::format("90% intervals held {} of {} {}; 50% held {} of {}; median error {}",
                     r.held_90, r.jobs, r.jobs == 1 ? "job" : "jobs", r.held_50, r.jobs,
                     format_short_duration(r.median_error));
}

}  // namespace mirage::daemon

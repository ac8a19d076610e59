#pragma once
// The wait predictor's quantiles recalibrated on the user's own recent jobs: what it said at each
// submission beside the wait the job got, over a sliding window, so that its stated levels hold
// where the model has drifted from the cluster (a site whose queue grew since it was fitted).
//
// Per level, split-conformal on the log of the wait plus 10 minutes (agents/ConformalLevels.h,
// the mechanism the wait model's training recalibrates its size classes with). With fewer
// outcomes than the minimum, the model's own quantiles stand.
#include <array>
#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "mirage/agents/ConformalLevels.h"
#include "mirage/agents/WaitPredictor.h"
#include "mirage/agents/WaitTail.h"

namespace mirage::daemon {

using mirage::WaitOutcome;

class WaitCalibration {
 public:
  static constexpr std::size_t kWindow = 50;       // the most recent outcomes it learns from
  static constexpr std::size_t kMinOutcomes = 10;  // fewer: the model's own quantiles
  explicit WaitCalibration(std::size_t window = kWindow, std::size_t min_outcomes = kMinOutcomes);

  // The model's quantiles at a submission and the wait that job got; the oldest beyond the
  // window is forgotten.
  void add(const WaitQuantiles& model, Seconds wait);
  std::size_t outcomes() const { return window_.size(); }
  bool active() const { return window_.size() >= min_outcomes_; }
  // The model's quantiles corrected (unchanged while not active); never decreasing.
  WaitQuantiles adjust(const WaitQuantiles& model) const;
  // Per level, the factor on (wait + 10 min) the correction applies (1 while not active).
  std::array<double, kWaitLevels.size()> factors() const;

 private:
  std::size_t window_size_, min_outcomes_;
  std::vector<WaitOutcome> window_;  // oldest first
  LevelShifts shift_{};
};

// Adaptive conformal inference (Gibbs & Candes 2021) on the same residuals: each level's
// correction is read at a working level of every outcome learned so far (the latest kHistory),
// and each outcome moves that working level by kStep times (the level's share - whether the
// wait fell at or below the corrected level), so a level that keeps missing reads further out
// until it holds its share again, however the queue drifts.
class AdaptiveWaitCalibration {
 public:
  // The paper's gamma, which the shared logs' fit months chose too: replayed as if live on each
  // window's last third, the least pinball loss relative to each window's best step, the worst
  // case breaking the tie with 0.002 (bench/aci_step.sh, docs/results/wait-model.md).
  static constexpr double kStep = 0.005;
  static constexpr std::size_t kHistory = 1000;
  static constexpr std::size_t kMinOutcomes = WaitCalibration::kMinOutcomes;
  explicit AdaptiveWaitCalibration(double step = kStep) : step_(step) {}
  double step() const { return step_; }
  void add(const WaitQuantiles& model, Seconds wait);
  std::size_t outcomes() const { return history_.size(); }
  bool active() const { return history_.size() >= kMinOutcomes; }
  WaitQuantiles adjust(const WaitQuantiles& model) const;

 private:
  double step_;
  std::vector<WaitOutcome> history_;  // oldest first
  std::array<double, kWaitLevels.size()> working_ = kWaitLevels;
  LevelShifts shift_{};
};

// Nonexchangeable (weighted) split-conformal calibration (Barber, Candes, Ramdas & Tibshirani
// 2023) on the same residuals: each level's correction is the weighted quantile of the latest
// kHistory residuals (weighted_conformal_shifts), the i-th newest weighted decay^i, so the waits
// of now count most and a drift is followed as fast as the decay forgets. Decay 1: the latest
// kHistory alike (split conformal, which AdaptiveWaitCalibration is at step 0).
class WeightedWaitCalibration {
 public:
  // Chosen on the shared logs' fit months as the adaptive step was: replayed as if live on each
  // window's last third, the least pinball loss relative to each window's best among 1, 0.999,
  // 0.995, 0.99, 0.98 and 0.95 (bench/aci_step.sh with DECAYS, docs/results/wait-model.md).
  static constexpr double kDecay = 0.995;
  static constexpr std::size_t kHistory = AdaptiveWaitCalibration::kHistory;
  static constexpr std::size_t kMinOutcomes = WaitCalibration::kMinOutcomes;
  explicit WeightedWaitCalibration(double decay = kDecay) : decay_(decay) {}
  double decay() const { return decay_; }
  void add(const WaitQuantiles& model, Seconds wait);
  std::size_t outcomes() const { return history_.size(); }
  bool active() const { return history_.size() >= kMinOutcomes; }
  WaitQuantiles adjust(const WaitQuantiles& model) const;

 private:
  double decay_;
  std::vector<WaitOutcome> history_;  // oldest first
  LevelShifts shift_{};
};

// A calibration `State` (WeightedWaitCalibration, AdaptiveWaitCalibration) kept per size class
// (1 node, 2-7, 8+) beside a pooled one that every outcome feeds: a job's quantiles are corrected
// by its class's own state once that state has learned `min_class_outcomes` waits of the class,
// by the pooled state before, so a class whose waits drift moves its own intervals and no other
// class's. kPooled: the pooled state corrects every class (the class states are not kept); 0:
// each class by its own state alone, the model's own quantiles until it is active.
inline constexpr std::size_t kPooled = std::numeric_limits<std::size_t>::max();
// Chosen on the shared logs' fit months (replayed as if live on each window's last third, the
// least pinball loss relative to each window's best among pooled, 0, 10, 30, 100 and 300 under
// the adaptive rule; bench/aci_step.sh with MINIMUMS, docs/results/wait-model.md).
inline constexpr std::size_t kMinClassOutcomes = 30;
template <class State>
class PerClassCalibration {
 public:
  explicit PerClassCalibration(State prototype = State(),
                               std::size_t min_class_outcomes = kMinClassOutcomes)
      : min_class_outcomes_(min_class_outcomes), pooled_(prototype) {
    classes_.fill(prototype);
  }
  std::size_t min_class_outcomes() const { return min_class_outcomes_; }
  // Every wait learned, of any class.
  std::size_t outcomes() const { return outcomes_; }
  // The wait a job of `nodes` nodes got, and the model's quantiles at its submission.
  void add(int nodes, const WaitQuantiles& model, Seconds wait) {
    ++outcomes_;
    // A state that can never be in force is not fed (each add sorts up to kHistory residuals).
    if (min_class_outcomes_ > 0) pooled_.add(model, wait);
    if (min_class_outcomes_ != kPooled) classes_[size_class_index(nodes)].add(model, wait);
  }
  // The state that corrects a job of `nodes` nodes now.
  const State& in_force(int nodes) const {
    const State& own = classes_[size_class_index(nodes)];
    return min_class_outcomes_ != kPooled && own.outcomes() >= min_class_outcomes_ ? own : pooled_;
  }
  const State& pooled() const { return pooled_; }
  WaitQuantiles adjust(int nodes, const WaitQuantiles& model) const {
    return in_force(nodes).adjust(model);
  }

 private:
  std::size_t min_class_outcomes_;
  std::size_t outcomes_ = 0;
  State pooled_;
  std::array<State, kSizeClasses> classes_;
};
// The daemon's: the weighted calibration per size class.
using ClassWaitCalibration = PerClassCalibration<WeightedWaitCalibration>;

// A predictor whose quantiles are `model`'s corrected by the calibration it shares with
// whoever feeds it outcomes (the controller), each job by the state in force for its size class:
// what the `quantile` policy decides by in the daemon.
// It asks the model for successors submitted to `partition` (a campaign's; "": the cluster's
// default), which a model that reads partitions reads as one.
class CalibratedWaitPredictor : public WaitPredictor {
 public:
  CalibratedWaitPredictor(std::shared_ptr<const WaitPredictor> model,
                          std::shared_ptr<const ClassWaitCalibration> calibration,
                          std::string partition = {});
  // The same model and calibration, for the successors of a campaign submitted to `partition`.
  std::shared_ptr<const CalibratedWaitPredictor> in_partition(std::string partition) const;
  const std::string& partition() const { return partition_; }
  WaitQuantiles predict(const QueueSnapshot& queue, const ForecastJob& job) const override;
  WaitQuantiles predict_in_partition(const QueueSnapshot& queue, const ForecastJob& job,
                                     const std::string& partition) const override;
  // The model's own quantiles in `partition`, before the correction: what the calibration learns
  // from.
  WaitQuantiles predict_uncalibrated(const QueueSnapshot& queue, const ForecastJob& job,
                                     const std::string& partition) const;
  std::optional<std::string> chain_mismatch(int nodes) const override;
  Seconds fitted_from() const override { return model_->fitted_from(); }
  Seconds fitted_to() const override { return model_->fitted_to(); }
  std::size_t fitted_jobs() const override { return model_->fitted_jobs(); }
  std::string describe() const override;
  bool speaks_for(const Job& job, int chain_nodes) const override;

 private:
  std::shared_ptr<const WaitPredictor> model_;
  std::shared_ptr<const ClassWaitCalibration> calibration_;
  std::string partition_;
};

// A stream of jobs each with the quantiles stated at its submission, recalibrated live: each
// job's by a WaitCalibration of its size class (1 node, 2-7, 8+) that has learned the waits of
// the stream's jobs of that class started by its submission (at their start, in that order).
// What `trace waits --check` states beside a file, on a log.
struct StreamJob {
  Seconds submit = 0, start = 0;
  int nodes = 1;
  WaitQuantiles stated{};
};
std::vector<WaitQuantiles> recalibrated_live(const std::vector<StreamJob>& jobs);
// The same by the daemon's rule (ClassWaitCalibration: every started job's wait learned by the
// pooled state and its class's), its weights decaying by `decay` a job, a class corrected by its
// own state from `min_class_outcomes` of its waits on.
std::vector<WaitQuantiles> recalibrated_weighted(
    const std::vector<StreamJob>& jobs, double decay = WeightedWaitCalibration::kDecay,
    std::size_t min_class_outcomes = kMinClassOutcomes);
// The same by adaptive conformal inference (AdaptiveWaitCalibration per size class, the daemon's
// rule until the weighted one replaced it), its levels moving by `step`.
std::vector<WaitQuantiles> recalibrated_adaptive(
    const std::vector<StreamJob>& jobs, double step = AdaptiveWaitCalibration::kStep,
    std::size_t min_class_outcomes = kMinClassOutcomes);

// The FNV-1a digest of a predictor file's bytes ("" when it cannot be read): a refit written
// over the same path is another predictor, whose calibration starts afresh.
std::string predictor_digest(const std::string& path);

// How often the stated intervals held the waits jobs got, and how far the median was off.
struct IntervalRecord {
  std::size_t jobs = 0;      // with a wait
  std::size_t held_90 = 0;   // in [q05, q95], ends included
  std::size_t held_50 = 0;   // in [q25, q75]
  Seconds median_error = 0;  // median of |wait - q50|
};
IntervalRecord interval_record(const std::vector<WaitOutcome>& outcomes);
// "90% intervals held 17 of 19 jobs; 50% held 10 of 19; median error 12m", or
// "no job started yet".
std::string describe(const IntervalRecord& r);

}  // namespace mirage::daemon

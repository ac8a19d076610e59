#pragma once
// The learned wait model: quantiles of a job's wait from the queue it meets at submission, seen
// through THE encoder (FeatureEncoder::encode_snapshot) and the forecast's plans of the job, and
// from the job's shape. Fitted on every real job of a log's months, all sizes pooled, so the
// sparse large jobs borrow from the rest (`mirage train --agent wait-model`, in the plugin with
// LibTorch); it decides here in plain loops, without LibTorch, from a JSON file.
//
// The network gives a base and six increments through softplus, in log1p(wait in minutes): the
// quantiles never decrease, whatever the weights. `mlp` is one network; `moe` mixes experts of
// the same form by a softmax gate over the same inputs (load regimes), a mixture of
// non-decreasing vectors with non-negative weights, so monotone too.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mirage/agents/WaitPredictor.h"
#include "mirage/agents/WaitTail.h"
#include "mirage/core/ClusterSpec.h"
#include "mirage/core/FeatureEncoder.h"
#include "mirage/traces/Trace.h"

namespace mirage {

inline constexpr char kWaitModelFormat[] = "mirage-wait-model";
// 2: the job's partition or queue among the inputs, and the tail's blend and recalibration per
// size class (WaitTail.h). 3: several networks (members) whose quantiles are averaged; a file of
// version 2 is read as one member.
inline constexpr int kWaitModelFormatVersion = 3;

// The job's partition or queue (issue 57 part 1), where the fit window's log gives one with two
// values or more: read as two inputs, the mean target of the window's jobs of the same one
// (shrunk toward the window's mean by kCategoryPrior jobs, so a rare one reads as the rest) and
// its share of the window's jobs. One not seen in the window, or none given (a prediction for a
// successor, whose partition the caller does not pass), reads as the window's mean and a share
// of 0.
inline constexpr double kCategoryPrior = 30;
struct WaitCategories {
  std::string field;  // "partition", "queue" (SWF's queue number), or "": neither read
  float mean_target = 0;
  std::map<std::string, std::array<float, 2>> table;  // value: {mean target, share}
  const std::string& of(const Job& job) const;
  std::array<float, 2> inputs(const std::string& value) const;
  // Why a log's jobs cannot be read so, if they cannot: it gives no value of `field`.
  std::optional<std::string> missing_in(const Trace& trace) const;
};
// Over the started jobs of `trace` submitted in [from, to): the partition if it takes two values
// or more there, else the queue if it does, else neither.
WaitCategories fit_wait_categories(const Trace& trace, Seconds from, Seconds to);

// The model's inputs for `job` submitted into `queue`: the encoder's snapshot features, then the
// job's own (kJobInputs): its nodes as a share of the machine and in log scale, GPUs per node,
// its limit, the forecast's planned waits (to the limits, running jobs alone, half runtimes,
// recent runtimes), the hour of the day (sine, cosine), whether it is a weekend, and its partition
// or queue (WaitCategories::inputs; {0, 0} where the model reads neither).
inline constexpr int kJobInputs = 13;
inline constexpr int kWaitModelInputs = FeatureEncoder::kPerSnapshot + kJobInputs;
std::array<float, kWaitModelInputs> wait_model_inputs(const QueueSnapshot& queue,
                                                      const ForecastJob& job);
std::array<float, kWaitModelInputs> wait_model_inputs(const QueueSnapshot& queue,
                                                      const ForecastJob& job,
                                                      std::array<float, 2> category);

// The target's scale: log1p(wait / kWaitUnit), so minutes and days both matter.
inline constexpr Seconds kWaitUnit = 60;
float wait_target(Seconds wait);
Seconds wait_from_target(double target);

struct DenseLayer {
  int inputs = 0, outputs = 0;
  std::vector<float> weights;  // outputs x inputs, row-major
  std::vector<float> bias;     // outputs
};

// The network: `experts` (one for mlp), each dense layers with ReLU between them ending in
// kWaitLevels outputs (base, then increments); for moe a `gate` ending in one logit per expert.
// Inputs are standardised first, (x - input_mean) / input_scale, and held within kInputClip: a
// queue unlike any fitted (a job far larger, a backlog far longer) reads as the most extreme one
// fitted, not as a point the network extrapolates to. The quantiles are capped at max_target, the
// longest wait fitted: an exponential scale would otherwise turn an extrapolation into years.
inline constexpr float kInputClip = 5.f;
struct WaitNet {
  std::string architecture = "mlp";  // or "moe"
  std::vector<float> input_mean, input_scale;
  float max_target = 0;
  // Added to each level's output (target units) after the network, then the levels made
  // non-decreasing again (a running maximum): set by calibrate_levels on the validation tail.
  std::array<float, kWaitLevels.size()> level_shift{};
  std::vector<std::vector<DenseLayer>> experts;
  std::vector<DenseLayer> gate;
  // The quantiles in target units, never decreasing. `x` holds kWaitModelInputs raw inputs.
  std::array<double, kWaitLevels.size()> forward(const float* x) const;
  // Throws std::invalid_argument saying what is inconsistent (sizes, expert count).
  void validate() const;
};

// Several networks fitted from different starting weights (seeds), their quantiles averaged level
// by level in target units: an average of non-decreasing vectors, each capped, so non-decreasing
// and capped too. One member is the network alone.
std::array<double, kWaitLevels.size()> ensemble_forward(const std::vector<WaitNet>& members,
                                                        const float* x);

// What was fitted where, and how well it did on its own validation tail.
struct WaitModelInfo {
  std::string trace;
  Seconds from = 0, to = 0;
  std::size_t jobs = 0;      // real jobs fitted on (train + validation)
  int machine_nodes = 0;     // the machine the log ran on
  double val_pinball_h = 0;  // mean pinball over the levels on the validation tail, hours
  double train_seconds = 0;
  // The first submission of the calibration weeks the tail was set on (WaitSplit); 0 in a file
  // fitted before they were apart from the early-stopping rows (the tail was those rows).
  Seconds calibrated_from = 0;
  // The time folds its tail was cross-fitted over (WaitFold): every job of the window set it.
  int cross_fit_folds = 0;
  int encoder_version = FeatureEncoder::kVersion;
  WaitCategories categories;
};

// The networks' averaged quantiles, then, per size class, what its held-out tail set
// (WaitTail.h): a blend with the class's binned distribution and the conformal recalibration, or
// the binned distribution alone. Without a tail (the default), the networks alone.
class WaitModel final : public WaitPredictor {
 public:
  WaitModel(WaitModelInfo info, WaitNet net);
  WaitModel(WaitModelInfo info, WaitNet net, WaitTail tail);
  // Throws std::invalid_argument when `members` is empty or one of them is inconsistent.
  WaitModel(WaitModelInfo info, std::vector<WaitNet> members, WaitTail tail);
  WaitQuantiles predict(const QueueSnapshot& queue, const ForecastJob& job) const override;
  // With the job's partition or queue.
  WaitQuantiles predict_logged(const QueueSnapshot& queue, const Job& job) const override;
  // With the partition where the model reads partitions (a queue number is not one: the mean).
  WaitQuantiles predict_in_partition(const QueueSnapshot& queue, const ForecastJob& job,
                                     const std::string& partition) const override;
  std::optional<std::string> trace_mismatch(const Trace& trace) const override {
    return info_.categories.missing_in(trace);
  }
  std::optional<std::string> chain_mismatch(int) const override { return std::nullopt; }
  Seconds fitted_from() const override { return info_.from; }
  Seconds fitted_to() const override { return info_.to; }
  std::size_t fitted_jobs() const override { return info_.jobs; }
  std::string describe() const override;
  // Every size: the jobs of the chain's size class with a real start.
  bool speaks_for(const Job& job, int chain_nodes) const override;
  const WaitModelInfo& info() const { return info_; }
  // The first member (the only one of a single network).
  const WaitNet& net() const { return members_.front(); }
  const std::vector<WaitNet>& members() const { return members_; }
  const WaitTail& tail() const { return tail_; }

 private:
  WaitQuantiles predict_with(const QueueSnapshot& queue, const ForecastJob& job,
                             std::array<float, 2> category) const;
  WaitModelInfo info_;
  std::vector<WaitNet> members_;
  WaitTail tail_;
};

// Written atomically. read_ throws InputError naming the file, the field and what was expected
// (another format, another encoder version, weights of the wrong sizes, a member unlike the
// others: "members[2]").
void write_wait_model(const std::string& path, const WaitModel& model);
WaitModel read_wait_model(const std::string& path);

// The rows to fit on: every job of `trace` submitted in [from, to) with a real start (at most
// `max_jobs`, evenly thinned), its inputs in the queue the log shows at its submission and its
// real wait as the target, in submission order. Throws InputError naming the trace when the log
// has no start times or fewer than kMinWaitModelJobs such jobs are in the window.
inline constexpr std::size_t kMinWaitModelJobs = 200;
struct WaitTrainingSet {
  std::size_t rows = 0;
  std::vector<float> inputs;   // rows x kWaitModelInputs
  std::vector<float> targets;  // wait_target(real wait)
  std::vector<Seconds> submits;
  std::vector<int> nodes;
  std::vector<Seconds> planned;  // the forecast's planned wait to the limits (the binned one's key)
  std::vector<Seconds> waits;    // the real wait, in seconds
  WaitCategories categories;     // fitted on the window, read into the inputs
  std::size_t window_jobs = 0;   // started jobs in the window before thinning
};
WaitTrainingSet wait_training_set(const Trace& trace, const ClusterSpec& cluster, Seconds from,
                                  Seconds to, std::size_t max_jobs);

// The fit window split for conformalized quantile regression: the networks train on the rows
// submitted before the window's last weeks (early stopping on the latest share of those), and
// the last weeks, which nothing else is fitted or chosen on, set each size class's blend and its
// per-level conformal offsets (fit_model_tail), so the intervals the file states are calibrated
// on jobs as close to the judged months as the window has, and on none of the judged months.
// The span is at most a quarter of the window, so a short window keeps most of it to train on.
inline constexpr Seconds kCalibrationSpan = 14 * kDay;
struct WaitSplit {
  std::size_t calibration_first = 0;  // rows [0, this) train, [this, rows) calibrate
  Seconds calibration_from = 0;       // the span's start: to - min(span, (to - from) / 4)
};
// Throws InputError naming --calibration-days when either side would hold fewer than
// kMinTailJobs rows.
WaitSplit split_for_calibration(const WaitTrainingSet& data, Seconds from, Seconds to,
                                Seconds span);
// Rows [0, n) of `data`: what the networks are fitted on.
WaitTrainingSet first_rows(const WaitTrainingSet& data, std::size_t n);

// Shifts each level of `net` so that, on rows [first, data.rows) of `data` (the validation tail,
// the latest jobs before the judged months), that share of the real waits falls at or below it:
// a network that early stopping left too narrow or too wide is recalibrated (conformalised
// quantile regression, one shift a level).
void calibrate_levels(WaitNet& net, const WaitTrainingSet& data, std::size_t first);

// Rows [first, last) of `data` (by default to the end) with the members' averaged quantiles:
// what fit_wait_tail chooses on.
std::vector<TailRow> tail_rows(const WaitNet& net, const WaitTrainingSet& data, std::size_t first);
std::vector<TailRow> tail_rows(const std::vector<WaitNet>& members, const WaitTrainingSet& data,
                               std::size_t first, std::size_t last = SIZE_MAX);

// Cross-fitted conformal over time folds (`--cross-fit-folds K`): the fit window cut into K spans
// of equal time, one network fitted with each fold left out, so every job of the window has a
// prediction from a network that never saw it; each class's blend and offsets are then set on
// all of those out-of-fold rows, months of levels instead of the window's last weeks alone (the
// judged month drifts from any one span of the window, docs/results/wait-model.md).
struct WaitFold {
  std::size_t first = 0, last = 0;  // rows [first, last) of the training set
  Seconds from = 0, to = 0;         // submitted in [from, to)
};
// Throws InputError naming --cross-fit-folds when a fold would hold fewer than kMinTailJobs rows.
std::vector<WaitFold> time_folds(const WaitTrainingSet& data, Seconds from, Seconds to, int folds);
// The rows of `data` outside `fold`, in submission order: what its network is fitted on.
WaitTrainingSet rows_outside(const WaitTrainingSet& data, const WaitFold& fold);
// Every fold's rows, predicted by its own network (`fold_nets[f]`, its level shifts cleared: a
// shift set on its own fold would be judged on the very rows it was set on; the class offsets
// set on every fold's rows recalibrate instead), each row carrying the levels of its class's
// binned distribution fitted on the window without its fold.
std::vector<TailRow> out_of_fold_rows(const Trace& trace, const ClusterSpec& cluster, Seconds from,
                                      Seconds to, std::vector<WaitNet>& fold_nets,
                                      const WaitTrainingSet& data,
                                      const std::vector<WaitFold>& folds);

// What the held-out tail (rows [first, data.rows) of `data`, the latest jobs of the window
// starting at `from` that it was read from) sets on `members`, fitted without them: each member's
// levels shifted (calibrate_levels), then per size class the blend with the binned distribution
// of the window's jobs before the tail and the conformal recalibration (WaitTail.h). Nothing
// submitted after the rows of `data` is read. `notes` hears why a class has no binned
// distribution.
struct TailSettings {
  bool blend = true;
};
WaitTail fit_model_tail(const Trace& trace, const ClusterSpec& cluster, Seconds from,
                        std::vector<WaitNet>& members, const WaitTrainingSet& data,
                        std::size_t first, const TailSettings& settings, std::string* notes);

// What the out-of-fold rows (out_of_fold_rows) set on the fold networks, which the file keeps as
// its members, averaged: per size class the blend with the binned distribution of the whole
// window [from, to) and the conformal offsets, chosen on every row.
WaitTail fit_cross_fitted_tail(const Trace& trace, const ClusterSpec& cluster, Seconds from,
                               Seconds to, const std::vector<TailRow>& out_of_fold,
                               const TailSettings& settings, std::string* notes);

// The training the plugin does (LibTorch), without LibTorch in the interface.
struct WaitModelTraining {
  std::string architecture = "mlp";  // or "moe"
  int hidden = 64;
  int layers = 2;
  int experts = 4;         // moe
  double val_share = 0.2;  // the latest jobs, held out for early stopping
  int max_epochs = 200;
  int patience = 15;  // epochs without a better validation loss
  int batch_size = 256;
  double lr = 1e-3;
  double weight_decay = 1e-4;
  std::uint64_t seed = 1;
  int threads = 2;
};
struct WaitModelFit {
  WaitNet net;
  int epochs = 0;  // run
  int best_epoch = 0;
  double val_pinball = 0;  // in target units
  double train_seconds = 0;
  std::size_t train_rows = 0, val_rows = 0;
};

}  // namespace mirage

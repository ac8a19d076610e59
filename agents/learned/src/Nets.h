#pragma once
// The LibTorch side shared by the agents: networks, model files, checkpoints, validation.
// Few translation units include this (LibTorch headers compile slowly).
#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "Internal.h"

namespace mirage::learned {

// A network over pooled features: the output of forward() is [N, outputs].
struct ScoreNet : torch::nn::Module {
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
};

// Standardise (with the training set's mean and spread, kept as buffers so the model file carries
// them), clamp, then an MLP.
struct MlpNet : ScoreNet {
  MlpNet(int inputs, int hidden, int layers, int outputs);
  torch::Tensor forward(const torch::Tensor& x) override;
  void set_standardisation(const torch::Tensor& mean, const torch::Tensor& stddev);

  torch::Tensor mean, inv_std;
  torch::nn::Sequential body{nullptr};
  torch::nn::Linear head{nullptr};
};

// The sequence model (Hyperparameters::history): a row is the MLP's inputs (the pooled row and
// the risk inputs), then `history` snapshots oldest first (gather_history). The snapshots,
// standardised per feature and clamped, go through a 1-D convolution over time (kernel
// kSeqKernel, ReLU) averaged over time; those channels join the MLP's inputs.
struct SeqNet : ScoreNet {
  static constexpr int kSeqKernel = 3;
  SeqNet(int inputs, int history, int channels, int hidden, int layers);
  torch::Tensor forward(const torch::Tensor& x) override;
  // The MLP's inputs' moments (the channels are left as they are), and the snapshots'.
  void set_standardisation(const torch::Tensor& mean, const torch::Tensor& stddev,
                           const torch::Tensor& snapshot_mean,
                           const torch::Tensor& snapshot_stddev);

  int inputs = 0, history = 0, channels = 0;
  torch::Tensor snapshot_mean, snapshot_inv_std, history_length;
  torch::nn::Conv1d conv{nullptr};
  std::shared_ptr<MlpNet> mlp;
};

// Mirage's mixture of experts: K Q-networks and a gate; Q = sum_k softmax(gate)_k Q_k.
struct MixtureNet : ScoreNet {
  MixtureNet(int experts, int inputs, int hidden, int layers, int gate_hidden);
  torch::Tensor forward(const torch::Tensor& x) override;
  torch::Tensor gate_weights(const torch::Tensor& x);
  std::shared_ptr<MlpNet> expert(std::size_t k) const { return expert_nets.at(k); }

  torch::nn::ModuleList experts;  // the same networks as expert_nets, registered
  std::vector<std::shared_ptr<MlpNet>> expert_nets;
  std::shared_ptr<MlpNet> gate;
};

// Several networks of one kind trained with different seeds (Hyperparameters::ensemble): their
// outputs averaged, so that the margin is the members' mean margin.
struct EnsembleNet : ScoreNet {
  explicit EnsembleNet(const std::vector<std::shared_ptr<ScoreNet>>& members);
  torch::Tensor forward(const torch::Tensor& x) override;

  std::vector<std::shared_ptr<ScoreNet>> members;
};

// The expected cost of a stochastic stopping policy on one episode, differentiable in its
// submission probabilities: sum_k P(stop at k) cost_k + P(never) fallback_cost, with
// P(stop at k) = p_k prod_{j<k} (1 - p_j). `log_submit` and `log_wait` are log p and log(1 - p)
// of its decisions, `cost` what submitting at each would cost.
torch::Tensor expected_stopping_cost(const torch::Tensor& log_submit, const torch::Tensor& log_wait,
                                     const torch::Tensor& cost, float fallback_cost);

// pg's start: the policy's head set near "submit with probability p0 at each instant", p0 such
// that half the sampled episodes of `train` reach their end.
void start_submitting_rarely(MlpNet& policy, const ProbeSet& data,
                             const std::vector<std::size_t>& train);

// The submission margin: Q(submit) - Q(wait) for two outputs, the logit for one. Submit when > 0.
torch::Tensor submit_margin(ScoreNet& net, const torch::Tensor& x);

// All decisions of the set as one [N, data.width] tensor (no copy: `data` must outlive it).
torch::Tensor features_tensor(const ProbeSet& data);
// `x` with one column more: each row's ln r (a risk-input dqn's or moe's row).
torch::Tensor with_log_ratio(const torch::Tensor& x, const std::vector<float>& log_ratio);
// The decision indices of `episodes`, back to back.
std::vector<std::int64_t> decision_indices(const ProbeSet& data,
                                           const std::vector<std::size_t>& episodes);
// Mean and standard deviation of each feature over the decisions of `episodes`.
std::pair<torch::Tensor, torch::Tensor> feature_moments(const ProbeSet& data,
                                                        const std::vector<std::size_t>& episodes);
// The submission margins of every decision of `episodes`, back to back. `x` holds the network's
// input for every decision of the set (features_tensor(data), or that with columns added).
std::vector<float> margins(ScoreNet& net, const torch::Tensor& x, const ProbeSet& data,
                           const std::vector<std::size_t>& episodes);
// The decision thresholds an agent's calibration tries (margins of dqn and moe are in hours,
// pg's are logits), "never" (infinity) among them.
std::vector<double> decision_thresholds(AgentKind kind);
// The rules tried on validation: every threshold of decision_thresholds(kind) under each guard
// that `forecast_guard` admits ("auto": off, limits and halved; hp.forecast_guard but where moe's
// experts are held to another), each also with every threshold (and kAlways) after `average`;
// with `window`, each of those also with every clause of window_clauses().
std::vector<DecisionRule> candidate_rules(AgentKind kind,
                                          const std::optional<ForecastGuard>& forecast_guard,
                                          bool window = false);

// The decision rule, among `rules`, with the lowest mean cost on the episodes (the validation
// episodes; choosing for the least interruption under `average`'s overlap, "match-average", lost
// in real waits and was removed). Infinity stands for "never submit early" (reactive): a model
// that does worse than that on the validation episodes is not trusted with decisions. Epochs
// are selected by the same score.
struct Calibration {
  DecisionRule rule;
  StopMetrics val;
  double score = 0;
};
Calibration calibrate(const std::vector<float>& margins, const ProbeSet& data,
                      const std::vector<std::size_t>& episodes, const CostModel& cost,
                      const std::vector<DecisionRule>& rules);

// A model trained with the risk as an input (RiskInput.h) is validated at every level of
// kRiskLevels: `margins_at(q)` gives the margins of the decisions of `val` at the risk q, back to
// back; at each level the rule among `rules` (thresholds alone: the other clauses are not
// trained with the risk) that costs least at that level's price goes into `points`. Returns the
// mean risk-weighted cost over the levels, the epoch's score; its rule and figures are the
// default risk's, the file's plain rule.
Calibration calibrate_risk_levels(const std::function<std::vector<float>(double)>& margins_at,
                                  const ProbeSet& data, const std::vector<std::size_t>& val,
                                  const CostModel& cost, const std::vector<DecisionRule>& rules,
                                  std::vector<RiskPoint>& points);
// The rules a risk-input model is validated with: each of decision_thresholds(kind) alone.
std::vector<DecisionRule> threshold_rules(AgentKind kind);

// Early stopping on the validation score, the same for every learner: the epochs so far, those
// since the best, and the best score with the rule and figures it came with. Checkpoints keep it
// under the same keys whatever the learner.
struct EarlyStopping {
  int epoch = 0, bad_epochs = 0;
  double best_score = std::numeric_limits<double>::infinity();
  DecisionRule best_rule;
  StopMetrics best_val;

  bool done(const Hyperparameters& hp) const {
    return epoch >= hp.max_epochs || bad_epochs >= hp.patience;
  }
  // Counts an epoch whose weights scored `cal`; true when they are the best so far (the caller
  // keeps a copy of them).
  bool record(const Calibration& cal);
  void save(torch::serialize::OutputArchive& a) const;
  void load(torch::serialize::InputArchive& a);
};

// Copies parameters and buffers by name.
void copy_state(torch::nn::Module& from, torch::nn::Module& to);
std::vector<torch::Tensor> trainable_parameters(torch::nn::Module& m);

// Small typed values in archives.
void put_string(torch::serialize::OutputArchive& a, const std::string& key, const std::string& v);
std::string get_string(torch::serialize::InputArchive& a, const std::string& key);
void put_int(torch::serialize::OutputArchive& a, const std::string& key, std::int64_t v);
std::int64_t get_int(torch::serialize::InputArchive& a, const std::string& key);
void put_double(torch::serialize::OutputArchive& a, const std::string& key, double v);
double get_double(torch::serialize::InputArchive& a, const std::string& key);
void put_metrics(torch::serialize::OutputArchive& a, const std::string& key, const StopMetrics& m);
StopMetrics get_metrics(torch::serialize::InputArchive& a, const std::string& key);
std::string rng_state(const std::mt19937_64& rng);
void set_rng_state(std::mt19937_64& rng, const std::string& state);
// Writes the archive to `path` through a temporary file and a rename.
void save_atomically(torch::serialize::OutputArchive& a, const std::string& path);

// Checkpoints: the archive of a run, tagged with its fingerprint.
torch::serialize::OutputArchive begin_checkpoint(const TrainContext& ctx);
// Opens ctx.checkpoint_path when resuming and it exists; throws InputError when it was made by
// another run configuration.
bool open_checkpoint(const TrainContext& ctx, torch::serialize::InputArchive& in);

// Writes the model file: metadata (with the validation figures and the decision rule added)
// and the network.
void save_model(const TrainContext& ctx, ScoreNet& net, const StopMetrics& val, int epochs,
                const DecisionRule& rule = {});
// Writes the model file of a network trained with the risk as an input: `inputs` describes what
// it reads beyond the pooled row (`pooled_features` in all), `points` the threshold and
// validation at each level; the file's plain rule is the default risk's (MODEL without a knob).
AgentResult save_risk_model(const TrainContext& ctx, ScoreNet& net, const RiskInputs& inputs,
                            const std::vector<RiskPoint>& points, int epochs, int pooled_features);

// The network's input for every decision of ctx.data, one row each, given each decision's
// ln r (the logarithm of its price ratio, RiskInput.h), for a Q-learner trained with the risk as
// an input.
using RiskRows = std::function<torch::Tensor(const std::vector<float>& log_ratio)>;

// Fitted Q-learning on probe transitions, used by dqn and by moe's experts and gate (Dqn.cpp).
// `x` is the network's input for every decision of ctx.data (one row each). With `risk_rows`
// (Hyperparameters::risk_input) the input comes from it instead: each epoch prices each training
// episode at a risk q drawn uniformly from [kMinRisk, kMaxRisk], the targets are the
// risk-weighted costs q x interruption + (1 - q) x overlap, and validation chooses a threshold
// at each of kRiskLevels (calibrate_risk_levels).
// A Q-learner's inputs (dqn, moe): every decision's features, their moments over the training
// episodes, and with the risk as an input (Hyperparameters::risk_input) the rows with ln r
// appended (its moments 0 and 1: bounded, |ln r| <= 2.2, and kept as it is); `rows` is empty
// without.
struct QInputs {
  torch::Tensor x, mean, stddev;
  RiskRows rows;
};
QInputs q_inputs(const TrainContext& ctx);

class QLearner {
 public:
  using Factory = std::function<std::shared_ptr<ScoreNet>()>;
  // `forecast_guard`: the guard candidates of its decision rules (Hyperparameters::forecast_guard).
  QLearner(std::string phase, const Factory& make, const TrainContext& ctx, torch::Tensor x,
           std::vector<std::size_t> train, std::uint64_t seed,
           const std::optional<ForecastGuard>& forecast_guard, RiskRows risk_rows = {});

  bool done() const;
  // One pass over the training transitions, then validation; keeps the best weights. With
  // `report_steps` false the step callback is not called (learners running side by side).
  EpochStats run_epoch(bool report_steps = true);
  ScoreNet& best() { return *best_; }
  const StopMetrics& best_val() const { return stop_.best_val; }
  const DecisionRule& best_rule() const { return stop_.best_rule; }
  int epochs() const { return stop_.epoch; }
  // With the risk as an input: the best epoch's threshold and validation at each level.
  const std::vector<RiskPoint>& best_points() const { return best_points_; }
  // The network's input for every decision, each at the risk `risk` (with the risk as an input).
  torch::Tensor rows_at(double risk) const;

  void save(torch::serialize::OutputArchive& a);
  void load(torch::serialize::InputArchive& a);

 private:
  std::string phase_;
  const TrainContext& ctx_;
  const Hyperparameters& hp_;
  std::vector<std::size_t> train_;
  std::shared_ptr<ScoreNet> online_, target_, best_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  torch::Tensor x_, submit_value_, last_wait_value_;
  torch::Tensor wait_target_;        // y(wait) of every decision, from the target network
  void sync_target();                // copies the online network into the target, then:
  void update_wait_targets();        // y(wait) of every decision from the target network
  std::vector<DecisionRule> rules_;  // decision rules tried on validation
  std::mt19937_64 rng_;
  std::int64_t steps_ = 0;
  EarlyStopping stop_;
  RiskRows risk_rows_;                  // set: the risk is an input
  std::vector<RiskPoint> best_points_;  // the best epoch's, at each level
  void price_episodes();                // draws each training episode's risk, sets x_ and values
  void price_submissions(const std::vector<float>& risk);  // the values at each decision's risk
  // The epoch's validation; with the risk as an input at every level, into `points`.
  Calibration validate(std::vector<RiskPoint>& points);
};

}  // namespace mirage::learned

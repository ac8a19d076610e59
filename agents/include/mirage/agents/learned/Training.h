#pragma once
// Training the learned agents (`mirage train`), without LibTorch in the interface: the CLI, the
// tests and the benchmark include this header only.
//
//   dqn  fitted Q-learning over {wait, submit} on every probe transition (the replay buffer is the
//        whole probed window), target network, Huber loss, prioritised replay;
//        the value of waiting is the exact cost of the target network's policy from the next
//        instant
//   pg   REINFORCE with a learned baseline: stopping times sampled from the policy on the probed
//        episodes, whose return is exact for any stopping time
//   moe  Mirage's default: K DQN experts, each trained on its own period of the training window,
//        and a gate trained on the whole window that mixes their Q-values
//
// All three select the epoch, and its decision rule (calibrate: a threshold on the margin, a
// forecast guard, a clause that follows `average`, a window clause), with the lowest cost (see
// `overlap_weight`) on held-out validation episodes, the time-ordered tail of each of `val_blocks`
// periods of the window (early stopping); they are deterministic for a seed and write one model
// file. Decisions are deterministic.
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mirage/agents/learned/ProbeData.h"
#include "mirage/agents/learned/RiskInput.h"

namespace mirage::learned {

enum class AgentKind { kDqn, kPg, kMoe };
std::string_view to_string(AgentKind kind);
std::optional<AgentKind> parse_agent_kind(std::string_view text);

// A forecast guard, or none named: chosen on validation ("auto").
std::string_view to_string(const std::optional<ForecastGuard>& guard);

// A decision rule's threshold after `average` that submits wherever `average` would, whatever the
// margin (DecisionRule::after_average; "always" in model files).
inline constexpr double kAlwaysAfterAverage = std::numeric_limits<double>::lowest();

// How a model turns margins into decisions: submit when the margin exceeds `threshold`
// (infinity: never submit early), only where `guard` allows it (forecast_allows_submit); or,
// where `average` would submit (average_would_submit), when the margin exceeds `after_average`
// (infinity: not there either; kAlways: there whatever the margin, as `average` does). The second
// clause makes `average` one of the rules: the network can then bring its submissions forward
// where the queue says so, and hold them back where `average` would overlap. The third, the
// window clause (WindowClause), submits where a closing window fires it, whatever the margin:
// submits() leaves it out, and decisions test it before the network.
struct DecisionRule {
  static constexpr double kAlways = kAlwaysAfterAverage;
  double threshold = 0;
  ForecastGuard guard = ForecastGuard::kOff;
  double after_average = std::numeric_limits<double>::infinity();
  WindowClause window;
  bool submits(double margin, bool guard_allows, bool average_submits) const {
    return (margin > threshold && guard_allows) || (average_submits && margin > after_average);
  }
};

// Every knob, with the defaults `mirage train` shows in its help.
struct Hyperparameters {
  // Shared by all agents.
  int hidden = 64;             // units per hidden layer
  int layers = 2;              // hidden layers
  int batch_size = 512;        // transitions (dqn, moe) per gradient step
  double lr = 1e-3;            // Adam learning rate
  double weight_decay = 1e-4;  // AdamW decoupled weight decay
  int max_epochs = 40;         // passes over the training data (per expert and gate for moe)
  int patience = 6;            // epochs without a better validation score before stopping
  double val_fraction = 0.15;  // share of each block of the window held out for validation
  int val_blocks = 3;          // blocks, each validated on its time-ordered tail
  double overlap_weight = 1;   // cost = interruption h + overlap_weight x overlap h
  // Hold the agent to a forecast guard (ForecastGuard, forecast_allows_submit: no submission
  // while the queue forecast plans the successor to start before the predecessor's end):
  // "limits" ("on" before there were two), "halved", "off", or "auto" (one of those, chosen on
  // validation together with the threshold, by the same score).
  std::optional<ForecastGuard> forecast_guard;  // none: auto
  // dqn (and moe's experts and gate)
  int target_update = 250;      // gradient steps between target-network copies
  double huber_delta = 1.0;     // Huber loss threshold (hours)
  double gamma = 1.0;           // discount per decision (1: the cost counts whenever it comes)
  double priority_alpha = 0.6;  // prioritised replay: sample transitions ~ |TD error|^alpha
                                // (0: uniform), priorities refreshed every epoch
  double priority_beta = 0.4;   // importance-sampling correction exponent of that bias
  // pg
  int pg_batch_episodes = 32;  // episodes per policy-gradient step
  int pg_samples = 16;         // stopping times sampled per episode
  double entropy = 0.0;        // entropy bonus weight
  // pg on the user's objective with the price as an input (RiskInput.h): each episode priced at
  // a risk drawn from [kMinRisk, kMaxRisk], the risk an input, the expected cost of the
  // stochastic stopping policy at that price minimised exactly; a threshold chosen on
  // validation at each of kRiskLevels for the lowest cost there (overlap_weight and the guard do
  // not apply). One network (ensemble = 1).
  bool risk_input = false;
  // With risk_input and a wait predictor: the margin is quantile@risk's plus the network's, whose
  // last layer starts at zero, so that the untrained model decides as quantile@risk and learns
  // only where to depart from it.
  bool quantile_residual = false;
  // With risk_input: the sequence model, Mirage's aggressive option. The last `history` queue
  // snapshots, an hour apart (gather_history), through a 1-D convolution over time
  // (`history_channels` filters of 3 snapshots, ReLU, the mean over time) beside the pooled
  // row, then the MLP; trained by the same policy gradient. 0: none.
  int history = 0;
  int history_channels = 16;
  // moe
  int experts = 3;       // experts, each trained on one consecutive period of the window
  int gate_hidden = 32;  // units of the gate's hidden layers
  // Members trained with seeds seed, seed + 1, ...; the model decides on their mean margin, with
  // its rule chosen on validation. One network's choices vary with its seed as much as between
  // agents; the mean varies less.
  int ensemble = 3;
};

struct TrainConfig {
  AgentKind agent = AgentKind::kDqn;
  Hyperparameters hp;
  ProbeSpec probes;
  std::string trace_path;       // recorded in the model file
  std::string out;              // the model file
  std::string probe_cache_dir;  // where probes are cached (empty: no cache)
  bool resume = false;          // continue from the checkpoint when it exists
  std::string checkpoint;       // written after every epoch (empty: out + ".ckpt")
  std::uint64_t seed = 1;
  int threads = 2;  // probing threads; moe trains this many experts side by side
  // LibTorch intra-op threads. 1 by default: the networks are small, and on a loaded 2-core
  // machine OpenMP's spinning threads made each step several times slower (measured).
  int torch_threads = 1;
};

// Validation metrics of one epoch, reported as training goes.
struct EpochStats {
  std::string phase;  // "dqn", "pg", "moe expert 2/3", "moe gate"
  int epoch = 0;      // 1-based
  int max_epochs = 0;
  double loss = 0;
  double steps_per_s = 0;  // gradient steps per second over the epoch
  StopMetrics val;
  bool best = false;  // the best validation cost so far (its weights are kept)
};

struct TrainCallbacks {
  CountProgress probe;                                         // probing: episodes
  std::function<void(std::size_t, std::size_t, double)> step;  // steps done, total, loss
  std::function<void(const EpochStats&)> epoch;                // end of each epoch
  std::function<void(const std::string&)> message;             // one line of news
};

struct TrainSummary {
  std::size_t episodes = 0, train_episodes = 0, val_episodes = 0, purged_episodes = 0;
  std::size_t transitions = 0;
  bool probes_from_cache = false;
  // Logged world: the episodes and decision instants left out for want of a logged wait.
  std::size_t unscored_episodes = 0, unscored_instants = 0;
  double probe_seconds = 0, train_seconds = 0;
  int epochs = 0;  // epochs run (all phases), this session and resumed ones
  // On the validation episodes, greedy.
  StopMetrics agent, reactive, average, hindsight;
  DecisionRule rule;                   // the saved one
  std::vector<RiskPoint> risk_points;  // risk_input: the rule and validation at each level
};

// Probes (or loads) the window, trains, and writes the model file atomically. Throws
// InputError on bad configuration.
TrainSummary train_agent(const Trace& trace, const TrainConfig& config,
                         const TrainCallbacks& callbacks = {});

}  // namespace mirage::learned

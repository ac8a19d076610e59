// dqn: fitted Q-learning over {wait, submit} on the probe transitions.
//
// Every decision instant k of every probed episode is a transition whose outcome is known
// exactly for both actions: submitting ends the episode with cost(gap_k); waiting moves to
// instant k+1 (or, after the last instant, to the fallback submission with cost(fallback_gap)).
// So the replay buffer is the whole probed window, and each sample supervises both outputs:
//   y(submit) = -cost(gap_k)
//   y(wait)   = -cost at the instant where the target network's greedy policy, started at
//               s_{k+1}, submits (the fallback if it never does)
// with a Huber loss. The probe table says what every stopping instant gives, so the rollout
// value is exact for the target policy: no estimate, and no over-estimation from the max, is
// needed for the continuation (as in Longstaff-Schwartz regression for optimal stopping; the
// Q-learning bootstrap, gamma * max_a Q_target(s_{k+1}, a), was tried and lost). The
// first target policy is reactive, so the first fit learns where submitting beats it; each copy
// of the target network (every `target_update` steps) is one step of policy iteration. At each
// copy y(wait) is computed once for every transition (fitted Q iteration), so a gradient step
// costs one forward and one backward pass. Prioritised replay (priority_alpha > 0): each epoch
// draws its transitions with probability ~ |TD error|^alpha (errors refreshed at the start of
// the epoch), with importance weights ^beta. Most probed instants are easy (an idle machine:
// waiting is plainly right); the few busy episodes where the moment matters get the attention.
// Greedy at evaluation, by a margin chosen on validation (calibrate); the epoch with the best
// validation score is kept (early stopping).
//
// With the risk as an input (risk_input, RiskInput.h) the row also holds ln r, each epoch
// prices each training episode at its own risk q (drawn uniformly from [kMinRisk, kMaxRisk]),
// y(submit) and y(wait) are then minus the risk-weighted cost q x interruption + (1 - q) x
// overlap, and the target network's greedy policy is read at the episode's own risk: one network
// learns the stopping values at every price. Validation chooses a threshold at each level of
// kRiskLevels, as for pg's (calibrate_risk_levels).
#include <algorithm>
#include <chrono>
#include <numeric>

#include "ModelFile.h"
#include "Nets.h"

namespace mirage::learned {
namespace {

constexpr std::int64_t kChunk = 16384;

}  // namespace

QLearner::QLearner(std::string phase, const Factory& make, const TrainContext& ctx, torch::Tensor x,
                   std::vector<std::size_t> train, std::uint64_t seed,
                   const std::optional<ForecastGuard>& forecast_guard, RiskRows risk_rows)
    : phase_(std::move(phase)),
      ctx_(ctx),
      hp_(ctx.config.hp),
      train_(std::move(train)),
      x_(std::move(x)),
      rng_(seed),
      risk_rows_(std::move(risk_rows)) {
  // Margins are in hours. With the risk as an input, thresholds alone (as pg's).
  rules_ = risk_rows_ ? threshold_rules(AgentKind::kDqn)
                      : candidate_rules(AgentKind::kDqn, forecast_guard);
  torch::manual_seed(seed);
  online_ = make();
  target_ = make();
  best_ = make();
  copy_state(*online_, *target_);
  copy_state(*online_, *best_);
  optimizer_ = std::make_unique<torch::optim::AdamW>(
      trainable_parameters(*online_),
      torch::optim::AdamWOptions(hp_.lr).weight_decay(hp_.weight_decay));

  // The transition table: value of submitting, value of waiting at the end.
  const ProbeSet& data = ctx.data;
  const auto n = static_cast<std::int64_t>(data.decisions());
  submit_value_ = torch::zeros({n});
  last_wait_value_ = torch::zeros({n});
  auto submit = submit_value_.accessor<float, 1>();
  auto last_wait = last_wait_value_.accessor<float, 1>();
  if (risk_rows_) {
    // Until each epoch prices its episodes: every decision at the default risk.
    x_ = rows_at(kDefaultRisk);
    price_submissions(std::vector<float>(data.decisions(), static_cast<float>(kDefaultRisk)));
  } else {
    for (const auto& ep : data.episodes) {
      const auto fallback = static_cast<float>(-ctx.cost(ep.fallback_gap));
      for (std::size_t k = 0; k < ep.count; ++k) {
        const auto i = static_cast<std::int64_t>(ep.first + k);
        submit[i] = static_cast<float>(-ctx.cost(data.gap[ep.first + k]));
        last_wait[i] = fallback;
      }
    }
  }
  sync_target();
}

torch::Tensor QLearner::rows_at(double risk) const {
  return risk_rows_(
      std::vector<float>(ctx_.data.decisions(), static_cast<float>(std::log(price_ratio(risk)))));
}

void QLearner::price_submissions(const std::vector<float>& risk) {
  const ProbeSet& data = ctx_.data;
  auto submit = submit_value_.accessor<float, 1>();
  auto last_wait = last_wait_value_.accessor<float, 1>();
  const auto value = [&](double q, Seconds gap) {
    return static_cast<float>(
        -(q * ctx_.cost.interruption_h(gap) + (1 - q) * ctx_.cost.overlap_h(gap)));
  };
  for (const auto& ep : data.episodes)
    for (std::size_t k = 0; k < ep.count; ++k) {
      const std::size_t i = ep.first + k;
      const auto row = static_cast<std::int64_t>(i);
      submit[row] = value(risk[i], data.gap[i]);
      last_wait[row] = value(risk[i], ep.fallback_gap);
    }
}

void QLearner::price_episodes() {
  const ProbeSet& data = ctx_.data;
  std::vector<float> risk(data.decisions(), static_cast<float>(kDefaultRisk));
  std::uniform_real_distribution<double> draw(kMinRisk, kMaxRisk);
  for (const std::size_t e : train_) {
    const auto& ep = data.episodes[e];
    const auto first = risk.begin() + static_cast<std::ptrdiff_t>(ep.first);
    std::fill(first, first + static_cast<std::ptrdiff_t>(ep.count), static_cast<float>(draw(rng_)));
  }
  std::vector<float> log_ratio(risk.size());
  for (std::size_t i = 0; i < risk.size(); ++i) log_ratio[i] = std::log(price_ratio(risk[i]));
  x_ = risk_rows_(log_ratio);
  price_submissions(risk);
  update_wait_targets();
}

Calibration QLearner::validate(std::vector<RiskPoint>& points) {
  const auto& val = ctx_.split.val;
  if (!risk_rows_)
    return calibrate(margins(*online_, x_, ctx_.data, val), ctx_.data, val, ctx_.cost, rules_);
  return calibrate_risk_levels(
      [&](double q) { return margins(*online_, rows_at(q), ctx_.data, val); }, ctx_.data, val,
      ctx_.cost, rules_, points);
}

void QLearner::sync_target() {
  copy_state(*online_, *target_);
  update_wait_targets();
}

void QLearner::update_wait_targets() {
  torch::NoGradGuard no_grad;
  target_->eval();
  // Where the target network's greedy policy submits after each instant, and what that costs.
  // The first policy is reactive (never submit early): the first fit learns to improve on it.
  // It stays so until the first copy of the online network (also after a resume).
  auto m = margins(*target_, x_, ctx_.data, train_);
  if (steps_ < std::max(1, hp_.target_update)) std::fill(m.begin(), m.end(), -1.f);
  auto y = torch::zeros({x_.size(0)});
  auto acc = y.accessor<float, 1>();
  const auto submit = submit_value_.accessor<float, 1>();
  const auto last = last_wait_value_.accessor<float, 1>();
  std::size_t at = 0;
  for (std::size_t e : train_) {
    const auto& ep = ctx_.data.episodes[e];
    if (ep.count == 0) continue;
    // Backwards: the value of waiting at k is the value at the next stop of the policy.
    float after = last[static_cast<std::int64_t>(ep.first + ep.count - 1)];
    for (std::size_t k = ep.count; k-- > 0;) {
      const auto i = static_cast<std::int64_t>(ep.first + k);
      acc[i] = after;
      if (m[at + k] > 0) after = submit[i];
      if (hp_.gamma != 1.0) after = static_cast<float>(hp_.gamma) * after;
    }
    at += ep.count;
  }
  wait_target_ = y;
}

bool QLearner::done() const {
  return stop_.done(hp_);
}

EpochStats QLearner::run_epoch(bool report_steps) {
  const auto t0 = std::chrono::steady_clock::now();
  if (risk_rows_) price_episodes();
  online_->train();
  std::vector<std::int64_t> order = decision_indices(ctx_.data, train_);
  // Importance weights of the drawn transitions (empty: uniform replay, all 1).
  std::vector<float> weights;
  if (hp_.priority_alpha > 0 && !order.empty()) {
    const std::vector<std::int64_t> all = order;
    std::vector<double> priority;
    priority.reserve(all.size());
    {
      torch::NoGradGuard no_grad;
      online_->eval();
      for (std::size_t at = 0; at < all.size(); at += kChunk) {
        const std::size_t n = std::min<std::size_t>(kChunk, all.size() - at);
        const auto rows = torch::from_blob(const_cast<std::int64_t*>(all.data() + at),
                                           {static_cast<std::int64_t>(n)}, torch::kInt64);
        const auto y = torch::stack(
            {wait_target_.index_select(0, rows), submit_value_.index_select(0, rows)}, 1);
        const auto td = std::get<0>((online_->forward(x_.index_select(0, rows)) - y).abs().max(1))
                            .to(torch::kFloat64)
                            .contiguous();
        const double* p = td.data_ptr<double>();
        for (std::size_t i = 0; i < n; ++i)
          priority.push_back(std::pow(p[i] + 1e-3, hp_.priority_alpha));
      }
      online_->train();
    }
    double total = 0;
    for (double p : priority) total += p;
    std::discrete_distribution<std::size_t> draw(priority.begin(), priority.end());
    const double n = static_cast<double>(all.size());
    double max_w = 0;
    weights.resize(all.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
      const std::size_t j = draw(rng_);
      order[i] = all[j];
      weights[i] = static_cast<float>(std::pow(n * priority[j] / total, -hp_.priority_beta));
      max_w = std::max(max_w, static_cast<double>(weights[i]));
    }
    for (float& w : weights) w = static_cast<float>(w / max_w);
  } else {
    std::shuffle(order.begin(), order.end(), rng_);
  }
  const std::size_t batch = static_cast<std::size_t>(std::max(1, hp_.batch_size));
  const std::size_t steps = (order.size() + batch - 1) / batch;
  const auto huber =
      torch::nn::functional::HuberLossFuncOptions().delta(hp_.huber_delta).reduction(torch::kNone);
  double loss_sum = 0;
  for (std::size_t s = 0; s < steps; ++s) {
    const std::size_t lo = s * batch, n = std::min(batch, order.size() - lo);
    const auto idx =
        torch::from_blob(order.data() + lo, {static_cast<std::int64_t>(n)}, torch::kInt64);
    const auto y =
        torch::stack({wait_target_.index_select(0, idx), submit_value_.index_select(0, idx)}, 1);
    auto loss =
        torch::nn::functional::huber_loss(online_->forward(x_.index_select(0, idx)), y, huber);
    if (weights.empty())
      loss = loss.mean();
    else
      loss = (loss * torch::from_blob(weights.data() + lo, {static_cast<std::int64_t>(n), 1},
                                      torch::kFloat32))
                 .mean();
    optimizer_->zero_grad();
    loss.backward();
    optimizer_->step();
    loss_sum += loss.item<double>();
    if (++steps_ % std::max(1, hp_.target_update) == 0) sync_target();
    if (report_steps && ctx_.callbacks.step)
      ctx_.callbacks.step(s + 1, steps, loss_sum / static_cast<double>(s + 1));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  online_->eval();
  EpochStats st = epoch_stats(phase_, ++stop_.epoch, hp_.max_epochs, loss_sum, steps, seconds);
  std::vector<RiskPoint> points;
  const Calibration cal = validate(points);
  st.val = cal.val;
  st.best = stop_.record(cal);
  if (st.best) {
    copy_state(*online_, *best_);
    best_points_ = points;
  }
  return st;
}

void QLearner::save(torch::serialize::OutputArchive& a) {
  torch::serialize::OutputArchive online, target, best, optimizer;
  online_->save(online);
  target_->save(target);
  best_->save(best);
  optimizer_->save(optimizer);
  a.write("online", online);
  a.write("target", target);
  a.write("best", best);
  a.write("optimizer", optimizer);
  put_int(a, "steps", steps_);
  stop_.save(a);
  put_string(a, "rng", rng_state(rng_));
  if (risk_rows_) put_string(a, "points", risk_input_json({}, best_points_).dump());
}

void QLearner::load(torch::serialize::InputArchive& a) {
  torch::serialize::InputArchive online, target, best, optimizer;
  a.read("online", online);
  a.read("target", target);
  a.read("best", best);
  a.read("optimizer", optimizer);
  online_->load(online);
  best_->load(best);
  optimizer_->load(optimizer);
  steps_ = get_int(a, "steps");
  stop_.load(a);
  set_rng_state(rng_, get_string(a, "rng"));
  if (risk_rows_) {
    const auto points = nlohmann::json::parse(get_string(a, "points"));
    best_points_.clear();
    if (!points.at("levels").empty())
      best_points_ = read_risk_model({{"risk_input", points}}, ctx_.checkpoint_path)->points;
  }
  // The y(wait) table comes from the target network's weights as saved.
  target_->load(target);
  update_wait_targets();
}

AgentResult train_dqn(const TrainContext& ctx) {
  const Hyperparameters& hp = ctx.config.hp;
  const auto [x, mean, stddev, rows] = q_inputs(ctx);
  const int inputs = static_cast<int>(mean.size(0));
  auto make = [&] {
    auto net = std::make_shared<MlpNet>(inputs, hp.hidden, hp.layers, 2);
    net->set_standardisation(mean, stddev);
    return std::static_pointer_cast<ScoreNet>(net);
  };
  QLearner learner("dqn", make, ctx, x, ctx.split.train, ctx.config.seed,
                   ctx.config.hp.forecast_guard, rows);
  torch::serialize::InputArchive in;
  if (open_checkpoint(ctx, in)) {
    torch::serialize::InputArchive state;
    in.read("learner", state);
    learner.load(state);
    report_message(
        ctx, fmt::format("resumed from {} after epoch {}", ctx.checkpoint_path, learner.epochs()));
  }
  while (!learner.done()) {
    report_epoch(ctx, learner.run_epoch());
    auto out = begin_checkpoint(ctx);
    torch::serialize::OutputArchive state;
    learner.save(state);
    out.write("learner", state);
    save_atomically(out, ctx.checkpoint_path);
  }
  if (hp.risk_input)
    return save_risk_model(ctx, learner.best(), RiskInputs{}, learner.best_points(),
                           learner.epochs(), inputs);
  save_model(ctx, learner.best(), learner.best_val(), learner.epochs(), learner.best_rule());
  return {learner.best_val(), learner.epochs(), learner.best_rule()};
}

}  // namespace mirage::learned

// pg: REINFORCE with a learned baseline, on the probed episodes.
//
// The policy gives, at each decision instant, the probability of submitting now. The instants of
// an episode do not depend on what the policy did before it submitted, so a stopping time can be
// sampled for a whole probed episode at once, and its return is exact: -cost(gap) at the instant
// it submits, or -cost(fallback_gap) if it never does. For each sampled episode
//   loss_pi = - sum_{j <= stop} log pi(a_j | s_j) (G - b(s_j)) / scale
//   loss_b  =   sum_{j <= stop} (b(s_j) - G)^2
// where b is the baseline network and `scale` the spread of the batch's returns. (Minimising the
// expected cost over all stopping times directly, without sampling, was tried and removed: on
// LS6's 1-node chains it chose the same epoch and rule, and decided alike.) The policy starts with
// a small submission probability, so that a sampled episode reaches its end about half the time.
// Deterministic at evaluation: submit at the first instant whose submission probability exceeds a
// threshold. A stochastic stopping policy spreads its probability over many instants, so one half
// would rarely be reached; the threshold is chosen, with the weights, on the validation episodes
// (from decision_thresholds).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "PgEpochs.h"

namespace mirage::learned {
namespace {

struct PgState {
  std::shared_ptr<MlpNet> policy, baseline, best;
  std::unique_ptr<torch::optim::AdamW> policy_opt, baseline_opt;
  std::mt19937_64 rng;
  EarlyStopping stop;  // its rule's threshold in logits

  void save(torch::serialize::OutputArchive& a) {
    torch::serialize::OutputArchive p, b, be, po, bo;
    policy->save(p);
    baseline->save(b);
    best->save(be);
    policy_opt->save(po);
    baseline_opt->save(bo);
    a.write("policy", p);
    a.write("baseline", b);
    a.write("best", be);
    a.write("policy_opt", po);
    a.write("baseline_opt", bo);
    stop.save(a);
    put_string(a, "rng", rng_state(rng));
  }
  void load(torch::serialize::InputArchive& a) {
    torch::serialize::InputArchive p, b, be, po, bo;
    a.read("policy", p);
    a.read("baseline", b);
    a.read("best", be);
    a.read("policy_opt", po);
    a.read("baseline_opt", bo);
    policy->load(p);
    baseline->load(b);
    best->load(be);
    policy_opt->load(po);
    baseline_opt->load(bo);
    stop.load(a);
    set_rng_state(rng, get_string(a, "rng"));
  }
};

}  // namespace

AgentResult train_pg(const TrainContext& ctx) {
  const Hyperparameters& hp = ctx.config.hp;
  const ProbeSet& data = ctx.data;
  const auto [mean, stddev] = feature_moments(data, ctx.split.train);

  PgState st;
  torch::manual_seed(ctx.config.seed);
  st.rng.seed(ctx.config.seed);
  st.policy = std::make_shared<MlpNet>(ctx.data.width, hp.hidden, hp.layers, 1);
  st.baseline = std::make_shared<MlpNet>(ctx.data.width, hp.hidden, hp.layers, 1);
  st.best = std::make_shared<MlpNet>(ctx.data.width, hp.hidden, hp.layers, 1);
  st.policy->set_standardisation(mean, stddev);
  st.baseline->set_standardisation(mean, stddev);
  start_submitting_rarely(*st.policy, data, ctx.split.train);
  copy_state(*st.policy, *st.best);
  st.policy_opt = std::make_unique<torch::optim::AdamW>(
      st.policy->parameters(), torch::optim::AdamWOptions(hp.lr).weight_decay(hp.weight_decay));
  st.baseline_opt = std::make_unique<torch::optim::AdamW>(
      st.baseline->parameters(), torch::optim::AdamWOptions(hp.lr).weight_decay(hp.weight_decay));

  torch::serialize::InputArchive in;
  if (open_checkpoint(ctx, in)) {
    torch::serialize::InputArchive state;
    in.read("pg", state);
    st.load(state);
    report_message(
        ctx, fmt::format("resumed from {} after epoch {}", ctx.checkpoint_path, st.stop.epoch));
  }

  const auto x = features_tensor(data);
  auto shaped = [&](Seconds gap) { return ctx.cost(gap); };
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const int samples = std::max(1, hp.pg_samples);
  PgEpochs epochs;
  epochs.phase = "pg";
  epochs.key = "pg";
  epochs.step = [&](const std::vector<std::size_t>& eps) -> std::optional<double> {
    auto idx = decision_indices(data, eps);
    if (idx.empty()) return std::nullopt;
    const auto rows =
        torch::from_blob(idx.data(), {static_cast<std::int64_t>(idx.size())}, torch::kInt64);
    const auto xb = x.index_select(0, rows);
    const auto logits = st.policy->forward(xb).squeeze(1);
    const auto values = st.baseline->forward(xb).squeeze(1);

    // Sample stopping times; gather, per decision, how often it was passed or chosen and the
    // returns that followed.
    const auto p = torch::sigmoid(logits.detach()).contiguous();
    const float* prob = p.data_ptr<float>();
    const std::size_t n = idx.size();
    std::vector<float> n_stop(n, 0), n_wait(n, 0), g_stop(n, 0), g_wait(n, 0), g2(n, 0);
    std::vector<double> returns;
    std::size_t at = 0;
    for (std::size_t e : eps) {
      const auto& ep = data.episodes[e];
      for (int k = 0; k < samples; ++k) {
        std::size_t stop = ep.count;
        for (std::size_t j = 0; j < ep.count; ++j)
          if (uniform(st.rng) < prob[at + j]) {
            stop = j;
            break;
          }
        const double g = -shaped(stop < ep.count ? data.gap[ep.first + stop] : ep.fallback_gap);
        returns.push_back(g);
        for (std::size_t j = 0; j < std::min(stop + 1, ep.count); ++j) {
          const bool stopped = j == stop;
          (stopped ? n_stop : n_wait)[at + j] += 1;
          (stopped ? g_stop : g_wait)[at + j] += static_cast<float>(g);
          g2[at + j] += static_cast<float>(g * g);
        }
      }
      at += ep.count;
    }
    const double total = static_cast<double>(returns.size());
    const double mean_g = std::accumulate(returns.begin(), returns.end(), 0.0) / total;
    double var = 0;
    for (double g : returns) var += (g - mean_g) * (g - mean_g);
    const double scale = std::max(0.1, std::sqrt(var / total));
    auto t = [&](std::vector<float>& v) {
      return torch::from_blob(v.data(), {static_cast<std::int64_t>(n)}, torch::kFloat32);
    };
    const auto ns = t(n_stop), nw = t(n_wait), gs = t(g_stop), gw = t(g_wait), gg = t(g2);
    const auto b = values.detach();
    const auto advantage_stop = (gs - ns * b) / scale;
    const auto advantage_wait = (gw - nw * b) / scale;
    auto policy_loss = -(advantage_stop * torch::log_sigmoid(logits) +
                         advantage_wait * torch::log_sigmoid(-logits))
                            .sum() /
                       total;
    if (hp.entropy > 0) {
      const auto q = torch::sigmoid(logits);
      const auto h = -(q * torch::log_sigmoid(logits) + (1 - q) * torch::log_sigmoid(-logits));
      policy_loss = policy_loss - hp.entropy * ((ns + nw) * h).sum() / total;
    }
    const auto visits = ns + nw;
    const auto baseline_loss =
        (visits * values * values - 2 * values * (gs + gw) + gg).sum() / total;
    st.policy_opt->zero_grad();
    st.baseline_opt->zero_grad();
    (policy_loss + baseline_loss).backward();
    st.policy_opt->step();
    st.baseline_opt->step();
    return baseline_loss.item<double>();
  };
  // The best threshold for these weights.
  epochs.validate = [&] {
    return calibrate(margins(*st.policy, x, data, ctx.split.val), data, ctx.split.val, ctx.cost,
                     candidate_rules(AgentKind::kPg, hp.forecast_guard));
  };
  epochs.keep_best = [&] { copy_state(*st.policy, *st.best); };
  epochs.save = [&](torch::serialize::OutputArchive& state) { st.save(state); };
  run_pg_epochs(ctx, *st.policy, st.rng, st.stop, epochs);
  save_model(ctx, *st.best, st.stop.best_val, st.stop.epoch, st.stop.best_rule);
  return {st.stop.best_val, st.stop.epoch, st.stop.best_rule};
}

void start_submitting_rarely(MlpNet& policy, const ProbeSet& data,
                             const std::vector<std::size_t>& train) {
  double mean_count = 0;
  for (std::size_t e : train) mean_count += static_cast<double>(data.episodes[e].count);
  mean_count = std::max(1.0, mean_count / std::max<double>(1, train.size()));
  const double p0 = 1 - std::pow(0.5, 1 / mean_count);
  torch::NoGradGuard no_grad;
  policy.head->weight.mul_(0.01);
  policy.head->bias.fill_(std::log(p0 / (1 - p0)));
}

}  // namespace mirage::learned

// pg with the risk as an input (Hyperparameters::risk_input, RiskInput.h): one network for every
// price between an idle hour and an hour charged twice.
//
// Each training episode is priced at a risk q drawn uniformly from [kMinRisk, kMaxRisk]; the
// network reads its pooled features with ln r (and, with the residual, quantile@q's margin) and
// gives the logit of submitting at each decision. The loss is the stochastic stopping policy's
// expected cost on the episode at that price, q x interruption + (1 - q) x overlap, summed
// exactly over its stopping times (P(stop at k) = p_k prod_{j<k} (1 - p_j)): the policy
// gradient without sampling noise. With the residual the logit is quantile@q's margin (in hours)
// plus the network's output, whose last layer starts at zero.
//
// With `history` (the sequence model, Mirage's aggressive option) the network is a SeqNet: the
// last snapshots of the queue, an hour apart, through a 1-D convolution over time beside the
// same inputs, trained by the same gradient.
//
// Each epoch is scored on the validation episodes at every level of kRiskLevels, each with the
// threshold that costs least there (as pg's rule, without the guard or the other clauses); the
// epoch with the lowest mean risk-weighted cost is kept, with its thresholds.
#include <algorithm>
#include <cmath>

#include "ModelFile.h"
#include "PgEpochs.h"

namespace mirage::learned {
namespace {

// The network's input for decisions `idx` of `data`, each at its own risk: the pooled row, the
// risk inputs, and with `history` the snapshots.
torch::Tensor risk_rows(const ProbeSet& data, const RiskInputs& in, int history,
                        const std::vector<std::int64_t>& idx, const std::vector<double>& risk) {
  const auto width = static_cast<std::size_t>(data.width);
  const auto risk_width = static_cast<std::size_t>(in.width());
  const std::size_t cols = width + risk_width + static_cast<std::size_t>(history_width(history));
  auto out = torch::empty({static_cast<std::int64_t>(idx.size()), static_cast<std::int64_t>(cols)});
  float* o = out.data_ptr<float>();
  for (std::size_t i = 0; i < idx.size(); ++i, o += cols) {
    const auto d = static_cast<std::size_t>(idx[i]);
    const float* row = data.x.data() + d * width;
    std::copy(row, row + width, o);
    in.append(row, in.residual ? &data.predicted[d] : nullptr, risk[i], o + width);
    if (history > 0) gather_history(data.latest(d), history, o + width + risk_width);
  }
  return out;
}

// With the residual, quantile@risk's part of each decision's margin (hours x slope); zeros
// without.
torch::Tensor baseline_logits(const ProbeSet& data, const RiskInputs& in,
                              const std::vector<std::int64_t>& idx,
                              const std::vector<double>& risk) {
  auto out = torch::zeros({static_cast<std::int64_t>(idx.size())});
  if (!in.residual) return out;
  float* o = out.data_ptr<float>();
  const auto width = static_cast<std::size_t>(data.width);
  for (std::size_t i = 0; i < idx.size(); ++i) {
    const auto d = static_cast<std::size_t>(idx[i]);
    o[i] = in.baseline(data.x.data() + d * width, &data.predicted[d], risk[i]);
  }
  return out;
}

struct RiskPgState {
  std::shared_ptr<ScoreNet> policy, best;
  std::unique_ptr<torch::optim::AdamW> opt;
  std::mt19937_64 rng;
  EarlyStopping stop;
  std::vector<RiskPoint> best_points;

  void save(torch::serialize::OutputArchive& a, const RiskInputs& in) {
    torch::serialize::OutputArchive p, b, o;
    policy->save(p);
    best->save(b);
    opt->save(o);
    a.write("policy", p);
    a.write("best", b);
    a.write("opt", o);
    stop.save(a);
    put_string(a, "rng", rng_state(rng));
    put_string(a, "points", risk_input_json(in, best_points).dump());
  }
  void load(torch::serialize::InputArchive& a, const std::string& path) {
    torch::serialize::InputArchive p, b, o;
    a.read("policy", p);
    a.read("best", b);
    a.read("opt", o);
    policy->load(p);
    best->load(b);
    opt->load(o);
    stop.load(a);
    set_rng_state(rng, get_string(a, "rng"));
    const auto meta =
        nlohmann::json{{"risk_input", nlohmann::json::parse(get_string(a, "points"))}};
    best_points = read_risk_model(meta, path)->points;
  }
};

}  // namespace

AgentResult train_risk_pg(const TrainContext& ctx) {
  const Hyperparameters& hp = ctx.config.hp;
  const ProbeSet& data = ctx.data;
  RiskInputs in;
  in.residual = hp.quantile_residual;
  const int inputs = data.width + in.width();  // the MLP's, before any snapshots
  const int cols = inputs + history_width(hp.history);

  RiskPgState st;
  torch::manual_seed(ctx.config.seed);
  st.rng.seed(ctx.config.seed);
  const auto make = [&]() -> std::shared_ptr<ScoreNet> {
    if (hp.history > 0)
      return std::make_shared<SeqNet>(inputs, hp.history, hp.history_channels, hp.hidden,
                                      hp.layers);
    return std::make_shared<MlpNet>(inputs, hp.hidden, hp.layers, 1);
  };
  st.policy = make();
  st.best = make();
  {
    // The pooled features standardised as pg's; the risk inputs are bounded (|ln r| <= 2.2,
    // the residual's margin in [-4, 4]) and kept as they are; the snapshots as the latest one,
    // the pooled row's first features.
    auto [pooled_mean, pooled_stddev] = feature_moments(data, ctx.split.train);
    const auto mean = torch::cat({pooled_mean, torch::zeros({in.width()})});
    const auto stddev = torch::cat({pooled_stddev, torch::ones({in.width()})});
    MlpNet* mlp = nullptr;
    if (auto* seq = dynamic_cast<SeqNet*>(st.policy.get())) {
      constexpr int kSnap = FeatureEncoder::kPerSnapshot;
      seq->set_standardisation(mean, stddev, pooled_mean.narrow(0, 0, kSnap),
                               pooled_stddev.narrow(0, 0, kSnap));
      mlp = seq->mlp.get();
    } else {
      mlp = dynamic_cast<MlpNet*>(st.policy.get());
      mlp->set_standardisation(mean, stddev);
    }
    if (in.residual) {
      // Exactly quantile@risk until it learns otherwise.
      torch::NoGradGuard no_grad;
      mlp->head->weight.zero_();
      mlp->head->bias.zero_();
    } else {
      start_submitting_rarely(*mlp, data, ctx.split.train);  // as pg
    }
  }
  copy_state(*st.policy, *st.best);
  st.opt = std::make_unique<torch::optim::AdamW>(
      st.policy->parameters(), torch::optim::AdamWOptions(hp.lr).weight_decay(hp.weight_decay));
  torch::serialize::InputArchive ckpt;
  if (open_checkpoint(ctx, ckpt)) {
    torch::serialize::InputArchive state;
    ckpt.read("risk_pg", state);
    st.load(state, ctx.checkpoint_path);
    report_message(
        ctx, fmt::format("resumed from {} after epoch {}", ctx.checkpoint_path, st.stop.epoch));
  }

  // Interruption and overlap (hours) of submitting at each decision, and of each fallback.
  std::vector<float> interruption(data.decisions()), overlap(data.decisions());
  for (std::size_t i = 0; i < data.decisions(); ++i) {
    interruption[i] = static_cast<float>(ctx.cost.interruption_h(data.gap[i]));
    overlap[i] = static_cast<float>(ctx.cost.overlap_h(data.gap[i]));
  }
  const auto priced = [&](double q, Seconds gap) {
    return q * ctx.cost.interruption_h(gap) + (1 - q) * ctx.cost.overlap_h(gap);
  };

  // The thresholds tried at each level: pg's (logits), none of the other clauses.
  const std::vector<DecisionRule> rules = threshold_rules(AgentKind::kPg);
  const auto val_idx = decision_indices(data, ctx.split.val);
  const auto validate = [&](ScoreNet& net, std::vector<RiskPoint>& points) {
    torch::NoGradGuard no_grad;
    return calibrate_risk_levels(
        [&](double q) {
          const std::vector<double> risk(val_idx.size(), q);
          const auto logits =
              (net.forward(risk_rows(data, in, hp.history, val_idx, risk)).squeeze(1) +
               baseline_logits(data, in, val_idx, risk))
                  .contiguous();
          return std::vector<float>(logits.data_ptr<float>(),
                                    logits.data_ptr<float>() + logits.numel());
        },
        data, ctx.split.val, ctx.cost, rules, points);
  };

  std::uniform_real_distribution<double> draw_risk(kMinRisk, kMaxRisk);
  // The untrained network is the score to beat (with the residual: quantile@risk itself).
  if (st.best_points.empty()) st.stop.best_score = validate(*st.best, st.best_points).score;
  std::vector<RiskPoint> points;  // the epoch's, at each level
  PgEpochs epochs;
  epochs.phase = "pg, risk as an input";
  epochs.key = "risk_pg";
  epochs.step = [&](const std::vector<std::size_t>& batch) -> std::optional<double> {
    std::vector<std::int64_t> idx;
    std::vector<double> risk;
    std::vector<std::pair<std::size_t, double>> eps;  // episode, its risk
    for (const std::size_t e : batch) {
      const auto& ep = data.episodes[e];
      const double q = draw_risk(st.rng);
      eps.emplace_back(e, q);
      for (std::size_t j = 0; j < ep.count; ++j) {
        idx.push_back(static_cast<std::int64_t>(ep.first + j));
        risk.push_back(q);
      }
    }
    if (idx.empty()) return std::nullopt;
    const auto logits = st.policy->forward(risk_rows(data, in, hp.history, idx, risk)).squeeze(1) +
                        baseline_logits(data, in, idx, risk);
    const auto log_submit = torch::log_sigmoid(logits);
    const auto log_wait = torch::log_sigmoid(-logits);
    std::vector<torch::Tensor> terms;
    std::int64_t at = 0;
    for (const auto& [e, q] : eps) {
      const auto& ep = data.episodes[e];
      const auto n = static_cast<std::int64_t>(ep.count);
      const auto first = static_cast<std::int64_t>(ep.first);
      if (n == 0) continue;
      const auto cost = static_cast<float>(q) *
                            torch::from_blob(interruption.data() + first, {n}, torch::kFloat32) +
                        static_cast<float>(1 - q) *
                            torch::from_blob(overlap.data() + first, {n}, torch::kFloat32);
      terms.push_back(expected_stopping_cost(log_submit.narrow(0, at, n), log_wait.narrow(0, at, n),
                                             cost, static_cast<float>(priced(q, ep.fallback_gap))));
      at += n;
    }
    if (terms.empty()) return std::nullopt;
    const auto loss = torch::stack(terms).mean();
    st.opt->zero_grad();
    loss.backward();
    st.opt->step();
    return loss.item<double>();
  };
  // Reported, and kept as the file's plain rule: the default risk's.
  epochs.validate = [&] { return validate(*st.policy, points); };
  epochs.keep_best = [&] {
    copy_state(*st.policy, *st.best);
    st.best_points = points;
  };
  epochs.save = [&](torch::serialize::OutputArchive& state) { st.save(state, in); };
  run_pg_epochs(ctx, *st.policy, st.rng, st.stop, epochs);
  return save_risk_model(ctx, *st.best, in, st.best_points, st.stop.epoch, cols);
}

}  // namespace mirage::learned

// moe: Mirage's default agent, a gated mixture of DQN experts.
//
// The training window is cut into `experts` consecutive periods; expert k is a DQN (Dqn.cpp's
// QLearner) trained on period k only, each selected on the same validation tail. The experts are
// independent, so they train side by side (`threads` at a time, one epoch per round). Then a gate
// network, trained on the whole window with the experts frozen, mixes their Q-values:
//   Q(s, a) = sum_k softmax(gate(s))_k Q_k(s, a)
// with the same fitted-Q loss. Frozen experts give the same Q-values all along, so they are
// computed once and fed to the gate phase as extra input columns. The gate starts uniform (the
// experts' mean). Greedy at evaluation.
//
// With the risk as an input (risk_input, RiskInput.h) the experts and the gate read ln r after
// the pooled row and are QLearners trained over prices (Dqn.cpp); the experts' Q-values then
// depend on the risk, so the gate's extra columns are computed again whenever its rows are
// priced (each epoch, and at each validated level).
#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "Nets.h"

namespace mirage::learned {
namespace {

constexpr std::int64_t kChunk = 16384;

// The mixture over precomputed expert Q-values: input = [features | Q_1(wait, submit) .. Q_K].
struct CachedMixture : ScoreNet {
  CachedMixture(std::shared_ptr<MlpNet> g, int width, int k) : width(width), experts(k) {
    gate = register_module("gate", std::move(g));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    const auto w = torch::softmax(gate->forward(x.narrow(1, 0, width)), 1);
    const auto q = x.narrow(1, width, 2 * experts).reshape({-1, experts, 2});
    return (q * w.unsqueeze(2)).sum(1);
  }
  std::int64_t width, experts;
  std::shared_ptr<MlpNet> gate;
};

}  // namespace

AgentResult train_moe(const TrainContext& ctx) {
  const Hyperparameters& hp = ctx.config.hp;
  const int n_experts = std::max(1, hp.experts);
  const auto [x, mean, stddev, rows] = q_inputs(ctx);
  const int inputs = static_cast<int>(mean.size(0));
  torch::manual_seed(ctx.config.seed);
  auto mixture =
      std::make_shared<MixtureNet>(n_experts, inputs, hp.hidden, hp.layers, hp.gate_hidden);
  for (int k = 0; k < n_experts; ++k) mixture->expert(k)->set_standardisation(mean, stddev);
  mixture->gate->set_standardisation(mean, stddev);

  // Consecutive periods of the training episodes, one per expert.
  const auto& train = ctx.split.train;
  std::vector<std::vector<std::size_t>> periods(static_cast<std::size_t>(n_experts));
  for (std::size_t i = 0; i < train.size(); ++i)
    periods[i * static_cast<std::size_t>(n_experts) / train.size()].push_back(train[i]);

  // Learners are made in order on this thread, so their initial weights do not depend on timing.
  std::vector<std::unique_ptr<QLearner>> experts;
  for (int k = 0; k < n_experts; ++k) {
    auto make = [&] {
      auto net = std::make_shared<MlpNet>(inputs, hp.hidden, hp.layers, 2);
      net->set_standardisation(mean, stddev);
      return std::static_pointer_cast<ScoreNet>(net);
    };
    experts.push_back(std::make_unique<QLearner>(
        fmt::format("moe expert {}/{}", k + 1, n_experts), make, ctx, x,
        periods[static_cast<std::size_t>(k)], ctx.config.seed + 1 + static_cast<std::uint64_t>(k),
        // An expert's own decision rule is never used, only its Q-values: it is selected on
        // them unguarded, and the gate's rule (saved with the model) chooses the guard.
        ForecastGuard::kOff, rows));
  }
  torch::serialize::InputArchive in;
  const bool resumed = open_checkpoint(ctx, in);
  if (resumed) {
    for (int k = 0; k < n_experts; ++k) {
      torch::serialize::InputArchive state;
      in.read(fmt::format("expert{}", k), state);
      experts[static_cast<std::size_t>(k)]->load(state);
    }
    report_message(ctx, fmt::format("resumed from {}", ctx.checkpoint_path));
  }
  // The gate's state is worth resuming only over the experts it was trained with: not when they
  // train on (a resume with more epochs).
  const bool resume_gate =
      resumed && get_int(in, "phase") == 1 &&
      std::all_of(experts.begin(), experts.end(), [](const auto& e) { return e->done(); });
  auto save_experts = [&](torch::serialize::OutputArchive& out) {
    for (int k = 0; k < n_experts; ++k) {
      torch::serialize::OutputArchive state;
      experts[static_cast<std::size_t>(k)]->save(state);
      out.write(fmt::format("expert{}", k), state);
    }
  };

  // Rounds: every unfinished expert trains one epoch, `threads` of them at a time.
  const int threads = std::max(1, ctx.config.threads);
  while (std::any_of(experts.begin(), experts.end(), [](const auto& e) { return !e->done(); })) {
    std::vector<std::size_t> active;
    for (std::size_t k = 0; k < experts.size(); ++k)
      if (!experts[k]->done()) active.push_back(k);
    std::vector<EpochStats> stats(active.size());
    std::atomic<std::size_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto worker = [&] {
      try {
        for (std::size_t i; (i = next.fetch_add(1)) < active.size();)
          stats[i] = experts[active[i]]->run_epoch(/*report_steps=*/active.size() == 1);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        failure = std::current_exception();
      }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < std::min<int>(threads, static_cast<int>(active.size())); ++t)
      pool.emplace_back(worker);
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
    for (const auto& s : stats) report_epoch(ctx, s);
    auto out = begin_checkpoint(ctx);
    put_int(out, "phase", 0);
    save_experts(out);
    save_atomically(out, ctx.checkpoint_path);
  }
  int epochs = 0;
  for (int k = 0; k < n_experts; ++k) {
    copy_state(experts[static_cast<std::size_t>(k)]->best(), *mixture->expert(k));
    epochs += experts[static_cast<std::size_t>(k)]->epochs();
  }

  // The experts' Q-values on every decision as extra input columns for the gate: once, or with
  // the risk as an input each time the gate's rows are priced.
  const auto with_experts = [&](const torch::Tensor& in) {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> parts;
    for (std::int64_t at = 0; at < in.size(0); at += kChunk) {
      const auto chunk = in.narrow(0, at, std::min(kChunk, in.size(0) - at));
      std::vector<torch::Tensor> cols = {chunk};
      for (int k = 0; k < n_experts; ++k) cols.push_back(mixture->expert(k)->forward(chunk));
      parts.push_back(torch::cat(cols, 1));
    }
    return torch::cat(parts, 0);
  };
  RiskRows gate_rows;
  if (rows)
    gate_rows = [&](const std::vector<float>& log_ratio) { return with_experts(rows(log_ratio)); };
  auto make_gate = [&] {
    auto g = std::make_shared<MlpNet>(inputs, hp.gate_hidden, 1, n_experts);
    g->set_standardisation(mean, stddev);
    torch::NoGradGuard no_grad;
    g->head->weight.zero_();
    g->head->bias.zero_();
    return std::static_pointer_cast<ScoreNet>(
        std::make_shared<CachedMixture>(g, inputs, n_experts));
  };
  QLearner gate("moe gate", make_gate, ctx, rows ? torch::Tensor() : with_experts(x), train,
                ctx.config.seed + 1 + static_cast<std::uint64_t>(n_experts), hp.forecast_guard,
                gate_rows);
  if (resume_gate) {
    torch::serialize::InputArchive state;
    in.read("gate", state);
    gate.load(state);
  }
  while (!gate.done()) {
    report_epoch(ctx, gate.run_epoch());
    auto out = begin_checkpoint(ctx);
    put_int(out, "phase", 1);
    save_experts(out);
    torch::serialize::OutputArchive state;
    gate.save(state);
    out.write("gate", state);
    save_atomically(out, ctx.checkpoint_path);
  }
  epochs += gate.epochs();
  copy_state(*dynamic_cast<CachedMixture&>(gate.best()).gate, *mixture->gate);
  // The saved mixture must decide as the validated one did.
  if (rows) return save_risk_model(ctx, *mixture, RiskInputs{}, gate.best_points(), epochs, inputs);
  save_model(ctx, *mixture, gate.best_val(), epochs, gate.best_rule());
  return {gate.best_val(), epochs, gate.best_rule()};
}

}  // namespace mirage::learned

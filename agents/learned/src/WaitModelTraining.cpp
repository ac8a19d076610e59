// Fits the wait model (mirage/agents/WaitModel.h) in LibTorch: pinball loss over the levels, the
// latest jobs held out for early stopping (split by time: the model is judged on later months),
// the weights handed back as a WaitNet that decides without LibTorch.
#include "mirage/agents/learned/WaitModelTraining.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <limits>

namespace mirage::learned {
namespace {

constexpr int kLevelCount = static_cast<int>(kWaitLevels.size());

// Dense layers with ReLU between them: kWaitModelInputs -> hidden^layers -> outputs.
torch::nn::Sequential dense_stack(int hidden, int layers, int outputs) {
  torch::nn::Sequential s;
  int width = kWaitModelInputs;
  for (int l = 0; l < layers; ++l) {
    s->push_back(torch::nn::Linear(width, hidden));
    s->push_back(torch::nn::ReLU());
    width = hidden;
  }
  s->push_back(torch::nn::Linear(width, outputs));
  return s;
}

// A base and softplus increments, accumulated: never decreasing by construction.
torch::Tensor monotone(const torch::Tensor& raw) {
  const torch::Tensor base = raw.narrow(1, 0, 1);
  const torch::Tensor steps = torch::nn::functional::softplus(raw.narrow(1, 1, kLevelCount - 1));
  return torch::cat({base, base + torch::cumsum(steps, 1)}, 1);
}

struct WaitNetModule : torch::nn::Module {
  std::vector<torch::nn::Sequential> experts;
  torch::nn::Sequential gate{nullptr};
  WaitNetModule(const WaitModelTraining& t) {
    const int n = t.architecture == "moe" ? t.experts : 1;
    for (int e = 0; e < n; ++e)
      experts.push_back(register_module("expert" + std::to_string(e),
                                        dense_stack(t.hidden, t.layers, kLevelCount)));
    if (n > 1) gate = register_module("gate", dense_stack(t.hidden / 2, 1, n));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    if (experts.size() == 1) return monotone(experts[0]->forward(x));
    const torch::Tensor g = torch::softmax(gate->forward(x), 1);  // [batch, experts]
    torch::Tensor out = torch::zeros({x.size(0), kLevelCount});
    for (std::size_t e = 0; e < experts.size(); ++e)
      out = out + g.narrow(1, static_cast<std::int64_t>(e), 1) * monotone(experts[e]->forward(x));
    return out;
  }
};

// Mean over levels and rows of the pinball loss of `pred` [n, levels] against `y` [n].
torch::Tensor pinball(const torch::Tensor& pred, const torch::Tensor& y, const torch::Tensor& tau) {
  const torch::Tensor diff = y.unsqueeze(1) - pred;
  return torch::max(tau * diff, (tau - 1) * diff).mean();
}

std::vector<DenseLayer> layers_of(const torch::nn::Sequential& s) {
  std::vector<DenseLayer> out;
  for (const auto& m : s->children())
    if (const auto* lin = m->as<torch::nn::Linear>()) {
      DenseLayer l;
      l.inputs = static_cast<int>(lin->weight.size(1));
      l.outputs = static_cast<int>(lin->weight.size(0));
      const torch::Tensor w = lin->weight.detach().contiguous();
      const torch::Tensor b = lin->bias.detach().contiguous();
      l.weights.assign(w.data_ptr<float>(), w.data_ptr<float>() + w.numel());
      l.bias.assign(b.data_ptr<float>(), b.data_ptr<float>() + b.numel());
      out.push_back(std::move(l));
    }
  return out;
}

}  // namespace

WaitModelFit train_wait_model(const WaitTrainingSet& data, const WaitModelTraining& t,
                              const std::function<void(const std::string&)>& message) {
  const auto t0 = std::chrono::steady_clock::now();
  torch::manual_seed(t.seed);
  if (t.threads > 0) at::set_num_threads(t.threads);
  const auto rows = static_cast<std::int64_t>(data.rows);
  const torch::Tensor x_all = torch::from_blob(const_cast<float*>(data.inputs.data()),
                                               {rows, kWaitModelInputs}, torch::kFloat32)
                                  .clone();
  const torch::Tensor y_all =
      torch::from_blob(const_cast<float*>(data.targets.data()), {rows}, torch::kFloat32).clone();
  // The latest jobs validate (rows are in submission order).
  const auto val_rows = std::max<std::int64_t>(1, static_cast<std::int64_t>(rows * t.val_share));
  const std::int64_t train_rows = rows - val_rows;
  const torch::Tensor mean = x_all.narrow(0, 0, train_rows).mean(0);
  const torch::Tensor scale = x_all.narrow(0, 0, train_rows).std(0).clamp_min(1e-3);
  const torch::Tensor x = ((x_all - mean) / scale).clamp(-kInputClip, kInputClip);
  const torch::Tensor x_train = x.narrow(0, 0, train_rows),
                      y_train = y_all.narrow(0, 0, train_rows);
  const torch::Tensor x_val = x.narrow(0, train_rows, val_rows),
                      y_val = y_all.narrow(0, train_rows, val_rows);
  std::vector<float> levels(kWaitLevels.begin(), kWaitLevels.end());
  const torch::Tensor tau = torch::tensor(levels).unsqueeze(0);

  const float max_target = y_all.narrow(0, 0, train_rows).max().item<float>();
  auto net = std::make_shared<WaitNetModule>(t);
  torch::optim::Adam opt(net->parameters(),
                         torch::optim::AdamOptions(t.lr).weight_decay(t.weight_decay));
  WaitModelFit fit;
  fit.train_rows = static_cast<std::size_t>(train_rows);
  fit.val_rows = static_cast<std::size_t>(val_rows);
  double best = std::numeric_limits<double>::infinity();
  std::vector<torch::Tensor> best_state;
  int bad = 0;
  for (int epoch = 1; epoch <= t.max_epochs; ++epoch) {
    net->train();
    const torch::Tensor order = torch::randperm(train_rows);
    double sum = 0;
    int batches = 0;
    for (std::int64_t b = 0; b < train_rows; b += t.batch_size) {
      const torch::Tensor idx =
          order.narrow(0, b, std::min<std::int64_t>(t.batch_size, train_rows - b));
      const torch::Tensor loss =
          pinball(net->forward(x_train.index_select(0, idx)), y_train.index_select(0, idx), tau);
      opt.zero_grad();
      loss.backward();
      opt.step();
      sum += loss.item<double>();
      ++batches;
    }
    net->eval();
    double val = 0;
    {
      torch::NoGradGuard no_grad;
      val = pinball(net->forward(x_val), y_val, tau).item<double>();
    }
    fit.epochs = epoch;
    const bool better = val < best - 1e-6;
    if (better) {
      best = val;
      fit.best_epoch = epoch;
      bad = 0;
      best_state.clear();
      for (const auto& p : net->parameters()) best_state.push_back(p.detach().clone());
    } else {
      ++bad;
    }
    if (message && (epoch == 1 || epoch % 10 == 0 || better))
      message(fmt::format("{} epoch {}/{}: pinball {:.4f} | validation {:.4f}{}", t.architecture,
                          epoch, t.max_epochs, sum / std::max(1, batches), val,
                          better ? "  (best so far)" : ""));
    if (bad >= t.patience) break;
  }
  {
    torch::NoGradGuard no_grad;
    const auto params = net->parameters();
    for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(best_state[i]);
  }
  fit.val_pinball = best;
  fit.net.max_target = max_target;
  fit.net.architecture = t.architecture == "moe" ? "moe" : "mlp";
  fit.net.input_mean.assign(mean.data_ptr<float>(), mean.data_ptr<float>() + mean.numel());
  fit.net.input_scale.assign(scale.data_ptr<float>(), scale.data_ptr<float>() + scale.numel());
  for (const auto& e : net->experts) fit.net.experts.push_back(layers_of(e));
  if (net->gate) fit.net.gate = layers_of(net->gate);
  fit.train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return fit;
}

}  // namespace mirage::learned

// The networks the learners train and the model files hold: an MLP, a mixture of experts behind
// a gate, an ensemble of seeds; and the small LibTorch helpers every learner shares.
#include "Nets.h"

namespace mirage::learned {
namespace {

constexpr double kMinStddev = 0.05;  // features that barely moved in training stay tame

}  // namespace

MlpNet::MlpNet(int inputs, int hidden, int layers, int outputs) {
  mean = register_buffer("mean", torch::zeros({inputs}));
  inv_std = register_buffer("inv_std", torch::ones({inputs}));
  torch::nn::Sequential seq;
  int width = inputs;
  for (int l = 0; l < layers; ++l) {
    seq->push_back(torch::nn::Linear(width, hidden));
    seq->push_back(torch::nn::ReLU());
    width = hidden;
  }
  body = register_module("body", seq);
  head = register_module("head", torch::nn::Linear(width, outputs));
}

torch::Tensor MlpNet::forward(const torch::Tensor& x) {
  auto z = ((x - mean) * inv_std).clamp(-kInputClamp, kInputClamp);
  return head(body->forward(z));
}

void MlpNet::set_standardisation(const torch::Tensor& m, const torch::Tensor& s) {
  torch::NoGradGuard no_grad;
  mean.copy_(m);
  inv_std.copy_(1.0 / s.clamp_min(kMinStddev));
}

SeqNet::SeqNet(int in, int hist, int ch, int hidden, int layers)
    : inputs(in), history(hist), channels(ch) {
  constexpr int kSnap = FeatureEncoder::kPerSnapshot;
  snapshot_mean = register_buffer("snapshot_mean", torch::zeros({kSnap}));
  snapshot_inv_std = register_buffer("snapshot_inv_std", torch::ones({kSnap}));
  // What RowNet reads the row's length from.
  history_length = register_buffer("history_length", torch::full({1}, static_cast<float>(hist)));
  conv = register_module("conv", torch::nn::Conv1d(kSnap, ch, kSeqKernel));
  mlp = register_module("mlp", std::make_shared<MlpNet>(in + ch, hidden, layers, 1));
}

torch::Tensor SeqNet::forward(const torch::Tensor& x) {
  constexpr int kSnap = FeatureEncoder::kPerSnapshot;
  const auto snapshots =
      x.narrow(1, inputs, static_cast<std::int64_t>(history) * kSnap).reshape({-1, history, kSnap});
  const auto z = ((snapshots - snapshot_mean) * snapshot_inv_std)
                     .clamp(-kInputClamp, kInputClamp)
                     .transpose(1, 2);                // [N, kSnap, history]
  const auto summary = torch::relu(conv(z)).mean(2);  // [N, channels]
  return mlp->forward(torch::cat({x.narrow(1, 0, inputs), summary}, 1));
}

void SeqNet::set_standardisation(const torch::Tensor& mean, const torch::Tensor& stddev,
                                 const torch::Tensor& s_mean, const torch::Tensor& s_stddev) {
  mlp->set_standardisation(torch::cat({mean, torch::zeros({channels})}),
                           torch::cat({stddev, torch::ones({channels})}));
  torch::NoGradGuard no_grad;
  snapshot_mean.copy_(s_mean);
  snapshot_inv_std.copy_(1.0 / s_stddev.clamp_min(kMinStddev));
}

MixtureNet::MixtureNet(int n, int inputs, int hidden, int layers, int gate_hidden) {
  for (int k = 0; k < n; ++k) {
    expert_nets.push_back(std::make_shared<MlpNet>(inputs, hidden, layers, 2));
    experts->push_back(expert_nets.back());
  }
  register_module("experts", experts);
  gate = register_module("gate", std::make_shared<MlpNet>(inputs, gate_hidden, 1, n));
}

torch::Tensor MixtureNet::gate_weights(const torch::Tensor& x) {
  return torch::softmax(gate->forward(x), 1);
}

torch::Tensor MixtureNet::forward(const torch::Tensor& x) {
  std::vector<torch::Tensor> qs;
  for (const auto& e : expert_nets) qs.push_back(e->forward(x));
  const auto q = torch::stack(qs, 1);           // [N, K, 2]
  const auto w = gate_weights(x).unsqueeze(2);  // [N, K, 1]
  return (q * w).sum(1);                        // [N, 2]
}

EnsembleNet::EnsembleNet(const std::vector<std::shared_ptr<ScoreNet>>& nets) : members(nets) {
  for (std::size_t k = 0; k < members.size(); ++k)
    register_module("member" + std::to_string(k), members[k]);
}

torch::Tensor EnsembleNet::forward(const torch::Tensor& x) {
  std::vector<torch::Tensor> outs;
  for (const auto& m : members) outs.push_back(m->forward(x));
  return torch::stack(outs, 0).mean(0);
}

torch::Tensor expected_stopping_cost(const torch::Tensor& log_submit, const torch::Tensor& log_wait,
                                     const torch::Tensor& cost, float fallback_cost) {
  const auto survive = torch::cumsum(log_wait, 0) - log_wait;  // log prod_{j<k} (1 - p_j)
  return (torch::exp(survive + log_submit) * cost).sum() +
         torch::exp(log_wait.sum()) * fallback_cost;
}

torch::Tensor submit_margin(ScoreNet& net, const torch::Tensor& x) {
  const auto out = net.forward(x);
  if (out.size(1) == 2) return out.select(1, 1) - out.select(1, 0);
  return out.select(1, 0);
}

void copy_state(torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  auto dst = to.named_parameters(true);
  for (const auto& p : from.named_parameters(true)) dst[p.key()].copy_(p.value());
  auto dst_b = to.named_buffers(true);
  for (const auto& b : from.named_buffers(true)) dst_b[b.key()].copy_(b.value());
}

std::vector<torch::Tensor> trainable_parameters(torch::nn::Module& m) {
  std::vector<torch::Tensor> out;
  for (const auto& p : m.parameters(true))
    if (p.requires_grad()) out.push_back(p);
  return out;
}

void set_torch_threads(int threads) {
  if (threads > 0) at::set_num_threads(threads);
}

}  // namespace mirage::learned

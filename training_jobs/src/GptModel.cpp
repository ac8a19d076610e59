#include "GptModel.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/init.h>
#include <torch/version.h>

#include <cmath>

namespace mirage::training {
namespace {

constexpr double kInitStd = 0.02;  // GPT-2's initialisation

// ATen's linear: one matrix product with the bias added in its epilogue. The C++ frontend's
// Linear module (torch::nn::functional::linear) multiplies 3-d inputs, then adds the bias in a
// separate broadcast kernel: 14% of a 124M step on an H100.
torch::Tensor linear(const torch::nn::Linear& layer, const torch::Tensor& x) {
  return torch::linear(x, layer->weight, layer->bias);
}

torch::nn::LayerNorm layer_norm(int width) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}));
}

torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, double dropout, bool training) {
#if TORCH_VERSION_MAJOR >= 2
  // One fused kernel (flash / memory-efficient on GPU) where LibTorch has it.
  return torch::scaled_dot_product_attention(q, k, v, {}, training ? dropout : 0.0, true);
#else
  const auto t = q.size(-2);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(q.size(-1))));
  auto mask =
      torch::ones({t, t}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).tril();
  scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity());
  auto weights = torch::softmax(scores, -1);
  if (training && dropout > 0) weights = torch::dropout(weights, dropout, true);
  return torch::matmul(weights, v);
#endif
}

}  // namespace

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const GptConfig& config)
    : n_head(config.n_head), dropout(config.dropout) {
  c_attn = register_module("c_attn", torch::nn::Linear(config.n_embd, 3 * config.n_embd));
  c_proj = register_module("c_proj", torch::nn::Linear(config.n_embd, config.n_embd));
  resid_drop = register_module("resid_drop", torch::nn::Dropout(config.dropout));
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  const auto b = x.size(0), t = x.size(1), c = x.size(2);
  auto qkv = linear(c_attn, x).split(c, 2);
  auto heads = [&](const torch::Tensor& y) {
    return y.view({b, t, n_head, c / n_head}).transpose(1, 2);
  };
  auto y = causal_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), dropout, is_training());
  return resid_drop(linear(c_proj, y.transpose(1, 2).contiguous().view({b, t, c})));
}

MlpImpl::MlpImpl(const GptConfig& config) {
  c_fc = register_module("c_fc", torch::nn::Linear(config.n_embd, 4 * config.n_embd));
  c_proj = register_module("c_proj", torch::nn::Linear(4 * config.n_embd, config.n_embd));
  drop = register_module("drop", torch::nn::Dropout(config.dropout));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  return drop(linear(c_proj, torch::gelu(linear(c_fc, x), "tanh")));
}

BlockImpl::BlockImpl(const GptConfig& config) {
  ln_1 = register_module("ln_1", layer_norm(config.n_embd));
  attn = register_module("attn", CausalSelfAttention(config));
  ln_2 = register_module("ln_2", layer_norm(config.n_embd));
  mlp = register_module("mlp", Mlp(config));
}

torch::Tensor BlockImpl::forward(torch::Tensor x) {
  x = x + attn(ln_1(x));
  return x + mlp(ln_2(x));
}

GptModelImpl::GptModelImpl(const GptConfig& cfg) : config(cfg) {
  wte = register_module("wte", torch::nn::Embedding(config.vocab_size, config.n_embd));
  wpe = register_module("wpe", torch::nn::Embedding(config.block_size, config.n_embd));
  drop = register_module("drop", torch::nn::Dropout(config.dropout));
  h = register_module("h", torch::nn::ModuleList());
  for (int i = 0; i < config.n_layer; ++i) h->push_back(Block(config));
  ln_f = register_module("ln_f", layer_norm(config.n_embd));

  // GPT-2: N(0, 0.02) weights, zero biases, residual projections scaled by 1/sqrt(2 * layers)
  // so the residual stream's variance does not grow with depth.
  torch::NoGradGuard no_grad;
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    if (name.ends_with(".bias")) {
      p.zero_();
    } else if (name.find("ln_") != std::string::npos) {
      p.fill_(1.0);
    } else if (name.ends_with("c_proj.weight")) {
      p.normal_(0.0, kInitStd / std::sqrt(2.0 * config.n_layer));
    } else {
      p.normal_(0.0, kInitStd);
    }
  }
}

torch::Tensor GptModelImpl::forward(const torch::Tensor& tokens) {
  const auto t = tokens.size(1);
  TORCH_CHECK(t <= config.block_size, "sequence of ", t, " exceeds the context of ",
              config.block_size);
  auto positions =
      torch::arange(t, torch::TensorOptions().dtype(torch::kLong).device(tokens.device()));
  auto x = drop(wte(tokens) + wpe(positions));
  for (const auto& block : *h) x = block->as<Block>()->forward(x);
  // Output projection tied to the token embedding, as in GPT-2.
  return torch::linear(ln_f(x), wte->weight);
}

torch::Tensor GptModelImpl::loss(const torch::Tensor& tokens, const torch::Tensor& targets) {
  auto logits = forward(tokens);
  return torch::nn::functional::cross_entropy(logits.view({-1, logits.size(-1)}).to(torch::kFloat),
                                              targets.reshape({-1}));
}

}  // namespace mirage::training

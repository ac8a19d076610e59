#include "AdamW.h"

#include <cmath>
#include <string>

#if __has_include(<ATen/ops/_fused_adamw.h>)
#include <ATen/ops/_fused_adamw.h>
#define MIRAGE_HAVE_FUSED_ADAMW 1
#else
#define MIRAGE_HAVE_FUSED_ADAMW 0
#endif

namespace mirage::training {

AdamW::AdamW(std::vector<torch::Tensor> params, AdamWOptions options) : options_(options) {
  decay_.weight_decay = options.weight_decay;
  no_decay_.weight_decay = 0.0;
  for (auto& p : params) {
    Group& g = p.dim() >= 2 ? decay_ : no_decay_;
    g.params.push_back(p);
    g.exp_avg.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    g.exp_avg_sq.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
  }
#if MIRAGE_HAVE_FUSED_ADAMW
  fused_ = !params.empty() && params.front().is_cuda();
  if (fused_) {
    for (Group* g : {&decay_, &no_decay_}) {
      for (auto& p : g->params)
        g->step.push_back(torch::zeros({}, p.options().dtype(torch::kFloat)));
    }
  }
#endif
}

void AdamW::zero_grad() {
  // Dropped rather than zeroed, as PyTorch's set_to_none: backward then writes the first
  // gradient instead of adding it to zeros, and no kernel per parameter runs here.
  for (Group* g : {&decay_, &no_decay_}) {
    for (auto& p : g->params) p.mutable_grad().reset();
  }
}

void AdamW::step(double lr) {
  torch::NoGradGuard no_grad;
  ++steps_;
  for (Group* g : {&decay_, &no_decay_}) {
    if (g->params.empty()) continue;
    if (fused_) {
      step_fused(*g, lr);
    } else {
      step_unfused(*g, lr);
    }
  }
}

void AdamW::step_unfused(Group& g, double lr) {
  const double bias1 = 1.0 - std::pow(options_.beta1, double(steps_));
  const double bias2 = 1.0 - std::pow(options_.beta2, double(steps_));
  const double step_size = lr / bias1;
  const double bias2_sqrt = std::sqrt(bias2);
  for (std::size_t i = 0; i < g.params.size(); ++i) {
    auto& p = g.params[i];
    if (!p.grad().defined()) continue;
    const auto& grad = p.grad();
    if (g.weight_decay != 0) p.mul_(1.0 - lr * g.weight_decay);
    g.exp_avg[i].mul_(options_.beta1).add_(grad, 1.0 - options_.beta1);
    g.exp_avg_sq[i].mul_(options_.beta2).addcmul_(grad, grad, 1.0 - options_.beta2);
    auto denom = (g.exp_avg_sq[i].sqrt() / bias2_sqrt).add_(options_.eps);
    p.addcdiv_(g.exp_avg[i], denom, -step_size);
  }
}

void AdamW::step_fused([[maybe_unused]] Group& g, [[maybe_unused]] double lr) {
#if MIRAGE_HAVE_FUSED_ADAMW
  // Parameters without a gradient this step are left alone, as the per-tensor path does.
  std::vector<torch::Tensor> params, grads, exp_avg, exp_avg_sq, step;
  for (std::size_t i = 0; i < g.params.size(); ++i) {
    if (!g.params[i].grad().defined()) continue;
    params.push_back(g.params[i]);
    grads.push_back(g.params[i].grad());
    exp_avg.push_back(g.exp_avg[i]);
    exp_avg_sq.push_back(g.exp_avg_sq[i]);
    step.push_back(g.step[i]);
  }
  if (params.empty()) return;
  // The kernel reads the step count but, as in PyTorch's own fused path, the caller advances it
  // (one launch for all of them).
  at::_foreach_add_(step, 1);
  at::_fused_adamw_(params, grads, exp_avg, exp_avg_sq, /*max_exp_avg_sqs=*/{}, step, lr,
                    options_.beta1, options_.beta2, g.weight_decay, options_.eps,
                    /*amsgrad=*/false, /*maximize=*/false);
#endif
}

void AdamW::set_steps_taken(std::int64_t steps) {
  steps_ = steps;
  for (Group* g : {&decay_, &no_decay_}) {
    for (auto& s : g->step) s.fill_(double(steps));
  }
}

std::vector<torch::Tensor> AdamW::state_tensors() const {
  std::vector<torch::Tensor> out;
  for (const Group* g : {&decay_, &no_decay_}) {
    out.insert(out.end(), g->exp_avg.begin(), g->exp_avg.end());
    out.insert(out.end(), g->exp_avg_sq.begin(), g->exp_avg_sq.end());
  }
  return out;
}

void AdamW::save(torch::serialize::OutputArchive& archive) const {
  archive.write("steps", torch::tensor(steps_, torch::kLong));
  int i = 0;
  for (const Group* g : {&decay_, &no_decay_}) {
    for (std::size_t k = 0; k < g->params.size(); ++k, ++i) {
      archive.write("exp_avg_" + std::to_string(i), g->exp_avg[k].cpu());
      archive.write("exp_avg_sq_" + std::to_string(i), g->exp_avg_sq[k].cpu());
    }
  }
}

void AdamW::load(torch::serialize::InputArchive& archive) {
  torch::NoGradGuard no_grad;
  torch::Tensor steps;
  archive.read("steps", steps);
  set_steps_taken(steps.item<std::int64_t>());
  int i = 0;
  for (Group* g : {&decay_, &no_decay_}) {
    for (std::size_t k = 0; k < g->params.size(); ++k, ++i) {
      torch::Tensor m, v;
      archive.read("exp_avg_" + std::to_string(i), m);
      archive.read("exp_avg_sq_" + std::to_string(i), v);
      TORCH_CHECK(m.sizes() == g->exp_avg[k].sizes() && v.sizes() == g->exp_avg_sq[k].sizes(),
                  "optimizer state ", i, " has the wrong shape");
      g->exp_avg[k].copy_(m);
      g->exp_avg_sq[k].copy_(v);
    }
  }
}

}  // namespace mirage::training

#include "Bf16Replica.h"

#include <ATen/Context.h>
#include <ATen/Functions.h>

#if __has_include(<ATen/ops/_foreach_copy.h>)
#define MIRAGE_HAVE_FOREACH_COPY 1
#else
#define MIRAGE_HAVE_FOREACH_COPY 0
#endif

namespace mirage::training {
namespace {

// dst[i] <- src[i], converting the dtype: one multi-tensor kernel where LibTorch has it (a copy
// per parameter is ~150 small launches per step for the 124M model).
void copy_all(std::vector<torch::Tensor>& dst, const std::vector<torch::Tensor>& src) {
  if (dst.empty()) return;
#if MIRAGE_HAVE_FOREACH_COPY
  at::_foreach_copy_(dst, src);
#else
  for (std::size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
#endif
}

}  // namespace

Bf16Replica::Bf16Replica(const GptConfig& config, const std::vector<torch::Tensor>& master,
                         torch::Device device)
    : master_(master) {
  // Building the model draws its initial weights (overwritten below) from the CPU generator:
  // its state is put back so that dropout and everything after sees the same random stream with
  // or without a replica.
  auto generator = at::globalContext().defaultGenerator(c10::Device(c10::kCPU));
  torch::Tensor saved;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    saved = generator.get_state();
  }
  model_ = GptModel(config);
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(saved);
  }
  model_->to(device, torch::kBFloat16);
  params_ = model_->parameters();
  TORCH_CHECK(params_.size() == master_.size(), "replica has ", params_.size(),
              " parameters, the master model ", master_.size());
  for (const auto& p : master_) master_grads_.push_back(torch::zeros_like(p));
  pull_weights();
}

void Bf16Replica::pull_weights() {
  torch::NoGradGuard no_grad;
  copy_all(params_, master_);
}

void Bf16Replica::push_gradients() {
  torch::NoGradGuard no_grad;
  // The optimizer drops the master gradients after each step: the first micro-step of a step
  // copies into the fp32 buffers kept here, later ones add to them.
  std::vector<torch::Tensor> fresh_dst, fresh_src;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto& grad = params_[i].mutable_grad();
    if (!grad.defined()) continue;
    auto& master_grad = master_[i].mutable_grad();
    if (master_grad.defined()) {
      master_grad.add_(grad);
    } else {
      master_grad = master_grads_[i];
      fresh_dst.push_back(master_grad);
      fresh_src.push_back(grad);
    }
  }
  copy_all(fresh_dst, fresh_src);
  for (auto& p : params_) p.mutable_grad().reset();
}

}  // namespace mirage::training

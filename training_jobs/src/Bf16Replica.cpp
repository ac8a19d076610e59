#include "Bf16Replica.h"

#include <ATen/Context.h>

namespace mirage::training {

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
  pull_weights();
}

void Bf16Replica::pull_weights() {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) params_[i].copy_(master_[i]);
}

void Bf16Replica::push_gradients() {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto& grad = params_[i].mutable_grad();
    if (!grad.defined()) continue;
    auto& master_grad = master_[i].mutable_grad();
    if (master_grad.defined()) {
      master_grad.add_(grad);
    } else {
      master_grad = grad.to(torch::kFloat);
    }
    grad.reset();
  }
}

}  // namespace mirage::training

#include "GradientClip.h"

#include <torch/version.h>

namespace mirage::training {

torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  std::vector<torch::Tensor> grads;
  grads.reserve(params.size());
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return torch::zeros({});
  auto total = torch::stack(at::_foreach_norm(grads, 2)).norm();
  auto scale = (max_norm / (total + 1e-6)).clamp_max(1.0);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  at::_foreach_mul_(grads, scale);
#else
  for (auto& g : grads) g.mul_(scale);
#endif
  return total;
}

}  // namespace mirage::training

#pragma once
// Gradient clipping by global L2 norm, as torch.nn.utils.clip_grad_norm_ does on GPUs: a few
// multi-tensor kernels instead of two per parameter, and no wait for the device (the norm stays
// a tensor), so the host keeps queueing work ahead of the GPU.
#include <torch/types.h>

#include <vector>

namespace mirage::training {

// Scales the gradients of `params` (those that have one) so that their global L2 norm is at
// most `max_norm`; returns the norm before scaling (a 0-dim tensor on the gradients' device).
torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace mirage::training

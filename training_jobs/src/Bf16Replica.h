#pragma once
// bf16 compute with fp32 master weights (as Megatron and llm.c train): forward and backward run on
// a bf16 copy of the model, so the activations (residual stream, norms, GELU, attention inputs)
// move half the bytes that autocast's fp32 ones do. The master model keeps the fp32 weights that
// the optimizer steps, the checkpoint stores and the ranks all-reduce gradients into; gradients
// are accumulated there in fp32.
#include <torch/types.h>

#include <vector>

#include "GptConfig.h"
#include "GptModel.h"

namespace mirage::training {

class Bf16Replica {
 public:
  // `master` is the master model's parameter list (it must outlive the replica).
  Bf16Replica(const GptConfig& config, const std::vector<torch::Tensor>& master,
              torch::Device device);

  GptModel& model() { return model_; }
  // Master weights -> replica (after each optimizer step, and once before the first).
  void pull_weights();
  // Replica gradients -> added to the master gradients in fp32; the replica's are dropped.
  void push_gradients();

 private:
  GptModel model_{nullptr};
  std::vector<torch::Tensor> params_;
  const std::vector<torch::Tensor>& master_;
  std::vector<torch::Tensor> master_grads_;  // fp32, reused every step
};

}  // namespace mirage::training

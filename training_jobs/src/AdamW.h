#pragma once
// AdamW with decoupled weight decay on matrices and embeddings only (not biases or layer
// norms), as GPT-2 training does. Its own small class, rather than torch::optim::AdamW, so that
// (a) the state is a few plain tensors the checkpoint names explicitly and (b) on CUDA the fused
// kernel (at::_fused_adamw_) is used where the LibTorch in use has it.
#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <vector>

namespace mirage::training {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

class AdamW {
 public:
  AdamW(std::vector<torch::Tensor> params, AdamWOptions options);

  void zero_grad();
  void step(double lr);

  // Whether steps run the fused CUDA kernel (else per-tensor ops).
  bool fused() const { return fused_; }
  // Sets the step count that bias correction uses (ranks that did not read the checkpoint).
  void set_steps_taken(std::int64_t steps);

  // The state tensors (moments of every parameter), e.g. to broadcast them across ranks.
  std::vector<torch::Tensor> state_tensors() const;
  void save(torch::serialize::OutputArchive& archive) const;
  // Throws c10::Error when the archive does not match these parameters.
  void load(torch::serialize::InputArchive& archive);

 private:
  struct Group {
    std::vector<torch::Tensor> params, exp_avg, exp_avg_sq, step;  // step: fused kernel only
    double weight_decay = 0;
  };
  void step_unfused(Group& group, double lr);
  void step_fused(Group& group, double lr);

  AdamWOptions options_;
  Group decay_, no_decay_;
  std::int64_t steps_ = 0;
  bool fused_ = false;
};

}  // namespace mirage::training

#pragma once
// A trained network evaluated on one row of features in plain loops, for live decisions: on one
// row LibTorch's per-operator overhead is most of the time (about 0.1 ms per MLP, so most of a
// decision by an ensemble of mixtures), the arithmetic a few microseconds. Built from the
// LibTorch network it copies; training and validation keep using LibTorch on whole batches.
#include <memory>
#include <vector>

#include "Nets.h"

namespace mirage::learned {

class RowNet {
 public:
  // MlpNet, MixtureNet or EnsembleNet (of either); throws std::invalid_argument otherwise.
  static std::unique_ptr<RowNet> copy_of(ScoreNet& net);
  virtual ~RowNet() = default;
  // The network's outputs for one row (as forward() on a [1, inputs] tensor).
  virtual std::vector<float> forward(const float* x) const = 0;
  // As submit_margin(): Q(submit) - Q(wait) for two outputs, the logit for one.
  float margin(const float* x) const;
};

}  // namespace mirage::learned

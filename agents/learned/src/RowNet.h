#pragma once
// A trained network evaluated on one row of features in plain loops, for live decisions: on one
// row LibTorch's per-operator overhead is most of the time (about 0.1 ms per MLP, so most of a
// decision by an ensemble of mixtures), the arithmetic a few microseconds. Built from the
// network's weights as a model file holds them (TorchArchive.h), so deciding needs no LibTorch;
// training and validation keep using LibTorch on whole batches.
#include <memory>
#include <vector>

#include "TorchArchive.h"

namespace mirage::learned {

class RowNet {
 public:
  // The network saved as `net` (Nets.h's MlpNet, MixtureNet or EnsembleNet of either); throws
  // std::invalid_argument naming what is missing when it is none of them.
  static std::unique_ptr<RowNet> from(const ArchiveModule& net);
  virtual ~RowNet() = default;
  // The width of the row forward() reads.
  virtual std::size_t inputs() const = 0;
  // The network's outputs for one row (as forward() on a [1, inputs] tensor).
  virtual std::vector<float> forward(const float* x) const = 0;
  // As submit_margin(): Q(submit) - Q(wait) for two outputs, the logit for one.
  float margin(const float* x) const;
};

}  // namespace mirage::learned

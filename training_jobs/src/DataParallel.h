#pragma once
// Data parallelism over the ranks srun starts: a c10d process group (NCCL when LibTorch has CUDA
// and the model is on a GPU, gloo otherwise) plus its key-value store for the few byte blobs the
// ranks exchange (start decision, RNG states). With one rank every call is a local no-op.
#include <torch/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "Rendezvous.h"

namespace mirage::training {

struct DataParallelOptions {
  std::string rendezvous_dir;  // non-empty: FileStore in this (shared) directory; else TCPStore
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
};

class DataParallel {
 public:
  // Blocks until every rank has joined (or the timeout passes: throws).
  DataParallel(const DistributedEnv& env, const DataParallelOptions& options, torch::Device device);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_; }
  // "gloo", "nccl" or "none".
  std::string backend() const;

  // Averages the gradients of `params` (float32) across ranks and sums the step's `loss` (a
  // scalar on the device) and `flags` (small host values: stop requests) in the same collective,
  // so a step costs one all-reduce. Afterwards the gradients are views of one buffer. Returns the
  // sums, loss first, as a tensor on the device: nothing here waits for the device, so the caller
  // queues the optimizer step before it reads them.
  torch::Tensor reduce_step(const std::vector<torch::Tensor>& params, const torch::Tensor& loss,
                            const std::vector<double>& flags);
  // Sums a few values across ranks.
  std::vector<double> sum(const std::vector<double>& values);
  // Overwrites `tensors` on every rank with rank 0's.
  void broadcast_from_rank0(const std::vector<torch::Tensor>& tensors);
  void barrier();

  // The store: rank 0 posts, others read. `get` waits up to the timeout; `check` does not wait.
  void store_set(const std::string& key, const std::string& value);
  std::string store_get(const std::string& key);
  bool store_check(const std::string& key);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0;
  int world_ = 1;
  torch::Device device_;
};

}  // namespace mirage::training

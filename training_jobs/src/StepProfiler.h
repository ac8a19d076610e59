#pragma once
// --profile FILE: records a few training steps with LibTorch's profiler (Kineto: the operators
// on the host and, on GPUs, every kernel), writes them as a Chrome trace and logs where the
// device's time went by kernel, so a slow step can be taken apart without a Python twin.
#include <torch/types.h>

#include <cstdint>
#include <filesystem>

namespace mirage::training {

class StepProfiler {
 public:
  // Records steps [first, first + count) of this run; count 0 disables it.
  StepProfiler(std::filesystem::path trace_file, std::int64_t first, std::int64_t count,
               torch::Device device);
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  // Called around each step with the number of steps this run has taken before it.
  void before_step(std::int64_t run_step);
  void after_step(std::int64_t run_step);

 private:
  void finish();

  std::filesystem::path trace_file_;
  std::int64_t first_, count_;
  torch::Device device_;
  bool recording_ = false;
};

}  // namespace mirage::training

#include "StepProfiler.h"

#include <spdlog/spdlog.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace mirage::training {
namespace {

namespace kineto = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

std::set<ActivityType> activities(const torch::Device& device) {
  if (device.is_cuda()) return {ActivityType::CPU, ActivityType::CUDA};
  return {ActivityType::CPU};
}

// Kineto events count microseconds in LibTorch 1.x, nanoseconds from 2.x.
template <typename Event>
double duration_us(const Event& e) {
  if constexpr (requires { e.durationNs(); }) {
    return double(e.durationNs()) / 1e3;
  } else {
    return double(e.durationUs());
  }
}

}  // namespace

StepProfiler::StepProfiler(std::filesystem::path trace_file, std::int64_t first, std::int64_t count,
                           torch::Device device)
    : trace_file_(std::move(trace_file)), first_(first), count_(count), device_(device) {
  if (count_ > 0)
    kineto::prepareProfiler(ProfilerConfig(ProfilerState::KINETO), activities(device_));
}

StepProfiler::~StepProfiler() {
  // A run that stops while recording still leaves the trace of the steps it took.
  if (recording_) {
    try {
      finish();
    } catch (const std::exception& e) {
      spdlog::warn("profile: {}", e.what());
    }
  }
}

void StepProfiler::before_step(std::int64_t run_step) {
  if (count_ <= 0 || run_step != first_) return;
  if (device_.is_cuda()) torch::cuda::synchronize();
  kineto::enableProfiler(ProfilerConfig(ProfilerState::KINETO), activities(device_));
  recording_ = true;
}

void StepProfiler::after_step(std::int64_t run_step) {
  if (recording_ && run_step + 1 == first_ + count_) finish();
}

void StepProfiler::finish() {
  if (device_.is_cuda()) torch::cuda::synchronize();
  recording_ = false;
  auto result = kineto::disableProfiler();
  if (!result) return;
  // Device time by kernel: the events Kineto took from the GPU (CUPTI) carry the CUDA device.
  std::map<std::string, std::pair<double, int>> by_kernel;  // microseconds, launches
  double total_us = 0;
  int launches = 0;
  for (const auto& e : result->events()) {
    if (e.deviceType() != c10::DeviceType::CUDA) continue;
    auto& [us, n] = by_kernel[e.name()];
    us += duration_us(e);
    ++n;
    total_us += duration_us(e);
    ++launches;
  }
  try {
    result->save(trace_file_.string());
    spdlog::info("profile: {} step(s) written to {}", count_, trace_file_.string());
  } catch (const c10::Error& e) {
    // Debian's LibTorch is built without Kineto: it records operators but cannot write traces.
    spdlog::warn("profile: no trace written ({})", e.msg().substr(0, e.msg().find('\n')));
  }
  if (by_kernel.empty()) return;
  std::vector<std::tuple<double, int, std::string>> ranked;
  for (auto& [name, t] : by_kernel) ranked.emplace_back(t.first, t.second, name);
  std::sort(ranked.rbegin(), ranked.rend());
  const double steps = double(count_);
  spdlog::info("profile: device time {:.2f} ms per step, {:.0f} launches of {} kernel(s)",
               total_us / 1e3 / steps, launches / steps, ranked.size());
  for (std::size_t i = 0; i < std::min<std::size_t>(ranked.size(), 25); ++i) {
    const auto& [us, n, name] = ranked[i];
    spdlog::info("profile: {:8.3f} ms {:5.1f}% x{:<4.0f} {}", us / 1e3 / steps,
                 100.0 * us / total_us, n / steps, name.substr(0, 140));
  }
}

}  // namespace mirage::training

#pragma once
// Training the learned agents, as a plugin of the `mirage` program. Debian's LibTorch brings some
// 280 shared libraries (OpenCV, ffmpeg, Qt among them) and about a second of start-up, which
// every `mirage campaign show` would pay, and which a site that only decides with model files
// need not install: `mirage` loads this plugin (dlopen) only for `mirage train`, and decides with
// a model file without it (LearnedModel.h). Tests and benchmarks link mirage_learned directly.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "mirage/agents/learned/Training.h"
#include "mirage/agents/learned/WaitModelTraining.h"
#include "mirage/core/Policy.h"

namespace mirage::learned {

// Raised whenever a type crossing this boundary changes its meaning.
inline constexpr std::uint32_t kPluginAbi = 4;  // 3: training only; 4: the wait model
inline constexpr const char* kPluginFileName = "libmirage_learned_plugin.so";
inline constexpr const char* kPluginEntryPoint = "mirage_learned_plugin_api";

struct PluginApi {
  std::uint32_t abi = kPluginAbi;
  // The sizes of the structures that cross, as the plugin was built: a plugin left over from
  // another build is refused instead of misreading them.
  std::size_t api_size = sizeof(PluginApi);
  std::size_t config_size = sizeof(TrainConfig);
  std::size_t summary_size = sizeof(TrainSummary);
  TrainSummary (*train_agent)(const Trace& trace, const TrainConfig& config,
                              const TrainCallbacks& callbacks) = nullptr;
  std::size_t wait_training_size = sizeof(WaitModelTraining);
  WaitModelFit (*train_wait_model)(const WaitTrainingSet& data, const WaitModelTraining& training,
                                   const std::function<void(const std::string&)>& message) =
      nullptr;
};

// The plugin's entry point (kPluginEntryPoint), C linkage so dlsym finds it by that name.
using PluginEntryPoint = const PluginApi* (*)();

}  // namespace mirage::learned

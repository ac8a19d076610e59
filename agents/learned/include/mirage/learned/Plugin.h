#pragma once
// The learned agents as a plugin of the `mirage` program. Debian's LibTorch brings some 280
// shared libraries (OpenCV, ffmpeg, Qt among them) and about a second of start-up, which every
// `mirage campaign show` would pay; `mirage` loads this plugin (dlopen) only when a command needs
// a learned agent: a model file as a policy, or `mirage train`. Tests and benchmarks link the
// learned agents directly (mirage_learned).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "mirage/core/Policy.h"
#include "mirage/learned/Training.h"

namespace mirage::learned {

// Raised whenever a type crossing this boundary changes its meaning.
inline constexpr std::uint32_t kPluginAbi = 2;  // 2: load_policy takes a threshold
inline constexpr const char* kPluginFileName = "libmirage_learned_plugin.so";
inline constexpr const char* kPluginEntryPoint = "mirage_learned_plugin_api";

struct PluginApi {
  std::uint32_t abi = kPluginAbi;
  // The sizes of the structures that cross, as the plugin was built: a plugin left over from
  // another build is refused instead of misreading them.
  std::size_t api_size = sizeof(PluginApi);
  std::size_t config_size = sizeof(TrainConfig);
  std::size_t summary_size = sizeof(TrainSummary);
  std::unique_ptr<Policy> (*load_policy)(const std::string& path,
                                         std::optional<double> threshold) = nullptr;
  TrainSummary (*train_agent)(const Trace& trace, const TrainConfig& config,
                              const TrainCallbacks& callbacks) = nullptr;
};

// The plugin's entry point (kPluginEntryPoint), C linkage so dlsym finds it by that name.
using PluginEntryPoint = const PluginApi* (*)();

}  // namespace mirage::learned

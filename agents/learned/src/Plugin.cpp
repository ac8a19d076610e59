// The entry point of libmirage_learned_plugin.so (see Plugin.h).
#include "mirage/learned/Plugin.h"

#include "mirage/learned/LearnedModel.h"

namespace {

mirage::learned::TrainSummary train(const mirage::Trace& trace,
                                    const mirage::learned::TrainConfig& config,
                                    const mirage::learned::TrainCallbacks& callbacks) {
  return mirage::learned::train_agent(trace, config, callbacks);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const mirage::learned::PluginApi*
mirage_learned_plugin_api() {
  static const mirage::learned::PluginApi api = [] {
    // The plugin holds its own copy of the policy registry: model files named inside it (an
    // ensemble's members, evaluation during training) load through it too.
    mirage::learned::register_learned_policies();
    mirage::learned::PluginApi a;
    a.load_policy = &mirage::learned::load_learned_policy;
    a.train_agent = &train;
    return a;
  }();
  return &api;
}

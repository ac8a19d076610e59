// The entry point of libmirage_learned_plugin.so (see Plugin.h).
#include "mirage/learned/Plugin.h"

#include "mirage/learned/LearnedModel.h"

extern "C" __attribute__((visibility("default"))) const mirage::learned::PluginApi*
mirage_learned_plugin_api() {
  static const mirage::learned::PluginApi api = [] {
    mirage::learned::PluginApi a;
    a.load_policy = &mirage::learned::load_learned_policy;
    a.train_agent = &mirage::learned::train_agent;
    return a;
  }();
  return &api;
}

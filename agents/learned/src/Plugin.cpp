// The entry point of libmirage_learned_plugin.so (see Plugin.h).
#include "mirage/agents/learned/Plugin.h"

extern "C" __attribute__((visibility("default"))) const mirage::learned::PluginApi*
mirage_learned_plugin_api() {
  static const mirage::learned::PluginApi api = [] {
    mirage::learned::PluginApi a;
    a.train_agent = &mirage::learned::train_agent;
    return a;
  }();
  return &api;
}

// The entry point of libmirage_learned_plugin.so (see Plugin.h).
#include "mirage/agents/learned/Plugin.h"

extern "C" __attribute__((visibility("default"))) const mirage::learned::PluginApi*
mirage_learned_plugin_api() {
  static const mirage::learned::PluginApi api = [] {
    mirage::learned::PluginApi a;
    a.train_agent = &mirage::learned::train_agent;
    a.train_wait_model = &mirage::learned::train_wait_model;
    return a;
  }();
  return &api;
}

#pragma once
// Loads the learned agents' plugin (mirage/learned/Plugin.h) on first use, so that commands
// without a learned agent never load LibTorch.
#include "mirage/learned/Plugin.h"

namespace mirage::cli {

// The plugin, loaded on the first call: $MIRAGE_LEARNED_PLUGIN when set, else the file beside
// this program, else ../lib/mirage/ from it. Throws InputError naming where it looked and why
// it failed. Thread-safe.
const learned::PluginApi& learned_plugin();

// Makes make_policy() load model files through the plugin, loading it when the first model file
// is named. Call once at program start.
void load_model_files_through_plugin();

}  // namespace mirage::cli

#pragma once
// Loads the learned agents' training plugin (mirage/agents/learned/Plugin.h) on first use, so
// that only `mirage train` loads LibTorch.
#include "mirage/agents/learned/Plugin.h"

namespace mirage::cli {

// The plugin, loaded on the first call: $MIRAGE_LEARNED_PLUGIN when set, else the file beside
// this program, else ../lib/mirage/ from it. Throws InputError naming where it looked and why
// it failed. Thread-safe.
const learned::PluginApi& learned_plugin();

}  // namespace mirage::cli

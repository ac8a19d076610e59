#include "LearnedPlugin.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "mirage/core/Error.h"

namespace mirage::cli {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> candidate_paths() {
  if (const char* env = std::getenv("MIRAGE_LEARNED_PLUGIN"); env && *env) return {env};
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {learned::kPluginFileName};  // the dynamic loader's own search
  const fs::path dir = exe.parent_path();
  return {dir / learned::kPluginFileName, dir / ".." / "lib" / "mirage" / learned::kPluginFileName};
}

const learned::PluginApi& load() {
  std::string tried;
  for (const fs::path& path : candidate_paths()) {
    if (path.has_parent_path() && !fs::exists(path)) {
      tried += fmt::format("\n  {}: no such file", path.string());
      continue;
    }
    // RTLD_LOCAL: the plugin's copies of the static libraries stay its own. Never closed: its
    // policies and their code live until the program ends.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      tried += fmt::format("\n  {}: {}", path.string(), dlerror());
      continue;
    }
    auto entry =
        reinterpret_cast<learned::PluginEntryPoint>(dlsym(handle, learned::kPluginEntryPoint));
    if (!entry) {
      throw InputError(
          {path.string(), 0, ""},
          fmt::format("not a mirage learned-agent plugin (no {})", learned::kPluginEntryPoint));
    }
    const learned::PluginApi* api = entry();
    const learned::PluginApi expected;
    if (!api || api->abi != expected.abi || api->api_size != expected.api_size ||
        api->config_size != expected.config_size || api->summary_size != expected.summary_size ||
        api->wait_training_size != expected.wait_training_size) {
      throw InputError({path.string(), 0, ""},
                       "this learned-agent plugin was built from other sources than this "
                       "`mirage` (rebuild both)");
    }
    return *api;
  }
  throw InputError({learned::kPluginFileName, 0, ""},
                   "the learned agents' plugin could not be loaded (set MIRAGE_LEARNED_PLUGIN "
                   "to its path). Tried:" +
                       tried);
}

}  // namespace

const learned::PluginApi& learned_plugin() {
  static const learned::PluginApi& api = load();  // a failed load throws and is tried again
  return api;
}

}  // namespace mirage::cli

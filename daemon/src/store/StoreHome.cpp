#include "mirage/daemon/store/StoreHome.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <filesystem>

#include "mirage/daemon/store/CampaignStore.h"

namespace mirage::daemon {
namespace {

constexpr const char* kHomeKey = "home_path";

}  // namespace

bool same_store_file(const std::string& a, const std::string& b) {
  struct stat sa {};
  struct stat sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

void check_store_home(CampaignStore& store, const std::string& path, bool moved) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::canonical(path, ec);
  const std::string here = ec ? path : canonical.string();
  const std::string home = store.value(kHomeKey);
  if (home == here || (!home.empty() && same_store_file(home, path))) return;
  if (home.empty() || moved) {
    if (!home.empty())
      spdlog::warn("store {}: moved here from {}, as the user said; it belongs here from now on",
                   here, home);
    store.set_value(kHomeKey, here);
    return;
  }
  throw StoreCopyError(
      "the store " + here + " is a copy of the one made at " + home + " (store id " +
      store.store_id() +
      "): a copy acting too would submit that store's campaigns' segments a second time, so it "
      "does not act. Run mirage on " +
      home + "; if the store was moved here and " + home +
      " is gone for good, start once with --store-moved");
}

}  // namespace mirage::daemon

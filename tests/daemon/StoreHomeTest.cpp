// A store belongs to the path it was made at: a copy elsewhere (a second login node's, a backup
// restored beside it) shares its store id and tags, so it is refused, naming its own place; the
// same file under another name is the same store; a store the user moved is bound to its new path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "TestSupport.h"
#include "mirage/daemon/service/CampaignPass.h"
#include "mirage/daemon/store/StoreHome.h"

namespace mirage::daemon {
namespace {

struct StoreHomeHarness {
  StoreHomeHarness() : clock(1'700'000'000) {
    config = parse_daemon_config("[log]\nlevel = \"warn\"\n", "t.toml");
    config.store_path = dir.file("store.db");
    CampaignPass made(config, clock);  // the store, made at its home
  }
  DaemonConfig at(const std::string& path, bool moved = false) const {
    DaemonConfig c = config;
    c.store_path = path;
    c.store_moved = moved;
    return c;
  }
  testing::TempDir dir;
  ManualClock clock;
  DaemonConfig config;
};

TEST(StoreHome, ACopyAtAnotherPathIsRefusedNamingTheFirst) {
  StoreHomeHarness h;
  const std::string copy = h.dir.file("copy.db");
  std::filesystem::copy_file(h.config.store_path, copy);
  try {
    CampaignPass pass(h.at(copy), h.clock);
    FAIL() << "a copy of the store acted";
  } catch (const StoreCopyError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("is a copy of the one made at " +
                        std::filesystem::canonical(h.config.store_path).string()),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("--store-moved"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(CampaignPass(h.config, h.clock));  // the first goes on
}

TEST(StoreHome, TheSameFileUnderAnotherNameIsTheSameStore) {
  StoreHomeHarness h;
  const std::string link = h.dir.file("link.db");
  std::filesystem::create_symlink(h.config.store_path, link);
  EXPECT_NO_THROW(CampaignPass(h.at(link), h.clock));
}

TEST(StoreHome, AStoreMovedByTheUserBelongsToItsNewPath) {
  StoreHomeHarness h;
  const std::string moved = h.dir.file("moved.db");
  std::filesystem::rename(h.config.store_path, moved);
  EXPECT_THROW(CampaignPass(h.at(moved), h.clock), StoreCopyError);
  EXPECT_NO_THROW(CampaignPass(h.at(moved, /*moved=*/true), h.clock));
  EXPECT_NO_THROW(CampaignPass(h.at(moved), h.clock));  // from now on, without the flag
}

TEST(StoreHome, AStoreThatKeptNoHomeTakesItsPathAsItsHome) {
  StoreHomeHarness h;
  {
    CampaignStore store(h.config.store_path);
    store.set_value("home_path", "");  // made before homes were kept
  }
  EXPECT_NO_THROW(CampaignPass(h.config, h.clock));
  const std::string copy = h.dir.file("copy.db");
  std::filesystem::copy_file(h.config.store_path, copy);
  EXPECT_THROW(CampaignPass(h.at(copy), h.clock), StoreCopyError);
}

}  // namespace
}  // namespace mirage::daemon

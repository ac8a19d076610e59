// One process at a time on a store: a second holder is refused and told who holds it, the lock
// comes free when its holder ends however it ends, and another user's store is refused.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "TestSupport.h"
#include "mirage/daemon/store/StoreLock.h"

namespace mirage::daemon {
namespace {

TEST(StoreLock, SecondHolderIsRefusedAndToldWhoHoldsIt) {
  testing::TempDir dir;
  const std::string store = dir.file("store.db");
  auto first = StoreLock::acquire(store, "mirage daemon", 0);
  ASSERT_TRUE(first.has_value());
  std::string held_by;
  EXPECT_FALSE(StoreLock::acquire(store, "mirage tick", 0.3, &held_by).has_value());
  EXPECT_EQ(held_by, "pid " + std::to_string(::getpid()) + " (mirage daemon)");
}

TEST(StoreLock, IsFreeAgainOnceItsHolderLetsGo) {
  testing::TempDir dir;
  const std::string store = dir.file("store.db");
  { auto first = StoreLock::acquire(store, "mirage tick", 0); }
  EXPECT_TRUE(StoreLock::acquire(store, "mirage tick", 0).has_value());
}

TEST(StoreLock, IsFreeAgainWhenItsHolderIsKilled) {
  testing::TempDir dir;
  const std::string store = dir.file("store.db");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    auto held = StoreLock::acquire(store, "mirage tick", 0);
    const char c = held ? 'y' : 'n';
    [[maybe_unused]] const ssize_t n = ::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  std::string held_by;
  EXPECT_FALSE(StoreLock::acquire(store, "mirage tick", 0, &held_by).has_value());
  EXPECT_EQ(held_by, "pid " + std::to_string(child) + " (mirage tick)");
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(StoreLock::acquire(store, "mirage tick", 0).has_value());
  ::close(ready[0]);
  ::close(ready[1]);
}

// Root owns every path it makes, so the store is given away; anyone else finds root's files.
TEST(StoreLock, StoreOfAnotherUserIsRefusedNamingItsOwner) {
  testing::TempDir dir;
  std::string store = "/etc/passwd";
  std::string owner = "root (uid 0)";
  if (::geteuid() == 0) {
    store = dir.file("store.db");
    std::ofstream(store) << "";
    ASSERT_EQ(::chown(store.c_str(), 65534, 65534), 0);
    owner = "uid 65534";
  }
  try {
    StoreLock::acquire(store, "mirage tick", 0);
    FAIL() << "another user's store was locked";
  } catch (const StoreOwnerError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(store + " belongs to "), std::string::npos) << what;
    EXPECT_NE(what.find(owner), std::string::npos) << what;
    EXPECT_NE(what.find("give --config a store of your own"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace mirage::daemon

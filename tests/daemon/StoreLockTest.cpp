// One process at a time on a store: a second holder is refused and told who holds it, the lock
// comes free when its holder ends however it ends, and another user's store is refused.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

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

// A holder writes its line over the last holder's, then cuts the file to it: one that reads in
// between finds the new line with the tail of a longer old one after it, and names the new one.
TEST(StoreLock, HolderReadBeforeItsLineIsCutToLengthIsItsLineAlone) {
  testing::TempDir dir;
  const std::string store = dir.file("store.db");
  const std::string path = StoreLock::lock_path(store);
  { std::ofstream(path) << "pid 5322 (mirage tick)\ngn)\n"; }
  const int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  std::string held_by;
  EXPECT_FALSE(StoreLock::acquire(store, "mirage tick", 0, &held_by).has_value());
  EXPECT_EQ(held_by, "pid 5322 (mirage tick)");
  ::close(fd);
}

// The flock guards the file it was taken on: a lock file deleted while held lets the next one
// lock a new file at the path, which the holder must be able to tell.
TEST(StoreLock, HolderIsToldItsLockFileWasDeletedOrReplaced) {
  testing::TempDir dir;
  const std::string store = dir.file("store.db");
  auto held = StoreLock::acquire(store, "mirage daemon", 0);
  ASSERT_TRUE(held.has_value());
  EXPECT_FALSE(held->lost().has_value());
  std::filesystem::remove(StoreLock::lock_path(store));
  ASSERT_TRUE(held->lost().has_value());
  EXPECT_EQ(*held->lost(), StoreLock::lock_path(store) + " was deleted");
  std::ofstream(StoreLock::lock_path(store)) << "";
  ASSERT_TRUE(held->lost().has_value());
  EXPECT_EQ(*held->lost(), StoreLock::lock_path(store) + " was replaced by another file");
}

// A waiter on the old file gets its flock once the old holder ends, but the file is no longer the
// store's lock: a third process holds the one at the path now, and the waiter must not act too.
TEST(StoreLock, WaiterOnADeletedLockFileDoesNotTakeTheStore) {
  testing::TempDir dir;
  const std::string store = dir.file("store.db");
  auto first = StoreLock::acquire(store, "mirage daemon", 0);
  ASSERT_TRUE(first.has_value());
  std::optional<StoreLock> waiter;
  std::string held_by;
  std::thread waiting([&] { waiter = StoreLock::acquire(store, "mirage tick", 2, &held_by); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the waiter opened the old file
  std::filesystem::remove(StoreLock::lock_path(store));
  auto third = StoreLock::acquire(store, "mirage daemon", 0);
  ASSERT_TRUE(third.has_value());
  first.reset();  // the old file's flock comes free
  waiting.join();
  EXPECT_FALSE(waiter.has_value());
  EXPECT_EQ(held_by, "pid " + std::to_string(::getpid()) + " (mirage daemon)");
}

// A store moved to the shared file system with a symlink left where it was: `link` names `real`.
struct SymlinkedStore {
  testing::TempDir dir;
  std::string real = dir.file("shared/store.db");
  std::string link = dir.file("store.db");
  SymlinkedStore() {
    std::filesystem::create_directory(dir.file("shared"));
    std::ofstream(real) << "";
    std::filesystem::create_symlink(real, link);
  }
};

// A store reached under two names (a symlink left where the store was before it moved to the
// shared file system) is one store: its lock is the real file's, so both names share it.
TEST(StoreLock, StoreReachedThroughASymlinkSharesTheRealFilesLock) {
  const SymlinkedStore store;
  const std::string& real = store.real;
  const std::string& link = store.link;
  auto held = StoreLock::acquire(real, "mirage daemon", 0);
  ASSERT_TRUE(held.has_value());
  std::string held_by;
  EXPECT_FALSE(StoreLock::acquire(link, "mirage tick", 0, &held_by).has_value());
  EXPECT_EQ(held_by, "pid " + std::to_string(::getpid()) + " (mirage daemon)");
  EXPECT_EQ(StoreLock::lock_path(link), StoreLock::lock_path(real));
  EXPECT_FALSE(held->lost().has_value());
}

// A mirage of before the lock moved beside the real file (a daemon not yet restarted, an older
// mirage on another login node) locks `<link>.lock` for a store that is a symlink: while it holds
// that, a new one given the link must not act too, and must name it.
TEST(StoreLock, SymlinkedStoreHeldUnderItsOldLockByAnOlderMirageIsRefusedNamingIt) {
  const SymlinkedStore store;
  const std::string& link = store.link;
  const std::string legacy = link + ".lock";
  { std::ofstream(legacy) << "pid 4242 (mirage daemon)\n"; }
  // Another open file description: flock locks are per description, so this one is the older
  // mirage's as far as the lock goes.
  const int fd = ::open(legacy.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  std::string held_by;
  EXPECT_FALSE(StoreLock::acquire(link, "mirage tick", 0, &held_by).has_value());
  EXPECT_EQ(held_by, "pid 4242 (mirage daemon)");
  ::close(fd);
  EXPECT_TRUE(StoreLock::acquire(link, "mirage tick", 0).has_value());
}

// The other way round: a new mirage on the link holds the old lock too, so an older mirage (which
// locks `<link>.lock` and reads its holder there) is refused and told who holds the store.
TEST(StoreLock, SymlinkedStoreHeldByANewMirageHoldsItsOldLockToo) {
  const SymlinkedStore store;
  const std::string& real = store.real;
  const std::string& link = store.link;
  auto held = StoreLock::acquire(link, "mirage daemon", 0);
  ASSERT_TRUE(held.has_value());
  const std::string legacy = link + ".lock";
  const int fd = ::open(legacy.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << legacy << " was not made";
  EXPECT_NE(::flock(fd, LOCK_EX | LOCK_NB), 0);
  ::close(fd);
  std::string line;
  std::getline(std::ifstream(legacy), line);
  EXPECT_EQ(line, "pid " + std::to_string(::getpid()) + " (mirage daemon)");
  // And a new mirage on the real path still meets the lock beside the real file.
  std::string held_by;
  EXPECT_FALSE(StoreLock::acquire(real, "mirage tick", 0, &held_by).has_value());
  EXPECT_EQ(held_by, "pid " + std::to_string(::getpid()) + " (mirage daemon)");
}

// While a new mirage on the link holds the old lock and waits on the real file's, an older mirage
// refused by the old one is told who holds it now, not the process that held it before.
TEST(StoreLock, SymlinkedStoreWaiterNamesItselfInTheOldLockWhileItWaits) {
  const SymlinkedStore store;
  const std::string& link = store.link;
  const std::string legacy = link + ".lock";
  { std::ofstream(legacy) << "pid 4242 (mirage daemon)\n"; }
  const std::string real_lock = StoreLock::lock_path(store.real);
  const int fd = ::open(real_lock.c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);  // the real file's lock is held: the waiter waits on it
  std::optional<StoreLock> waiter;
  std::thread waiting([&] { waiter = StoreLock::acquire(link, "mirage tick", 5); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::string line;
  std::getline(std::ifstream(legacy), line);
  EXPECT_EQ(line, "pid " + std::to_string(::getpid()) + " (mirage tick)");
  ::close(fd);
  waiting.join();
  EXPECT_TRUE(waiter.has_value());
}

// Either lock file deleted or replaced lets another process act: lost() watches both.
TEST(StoreLock, SymlinkedStoreHolderIsToldItsOldLockFileWasDeletedOrReplaced) {
  const SymlinkedStore store;
  const std::string& link = store.link;
  auto held = StoreLock::acquire(link, "mirage daemon", 0);
  ASSERT_TRUE(held.has_value());
  EXPECT_FALSE(held->lost().has_value());
  const std::string legacy = link + ".lock";
  std::filesystem::remove(legacy);
  ASSERT_TRUE(held->lost().has_value());
  EXPECT_EQ(*held->lost(), legacy + " was deleted");
  std::ofstream(legacy) << "";
  ASSERT_TRUE(held->lost().has_value());
  EXPECT_EQ(*held->lost(), legacy + " was replaced by another file");
}

// A symlinked directory above a store that is a plain file leaves `<store>.lock` the real lock
// file under another name: one lock, not two (two open descriptions of one file would refuse
// each other), and the other name meets it.
TEST(StoreLock, StoreUnderASymlinkedDirectoryTakesOneLock) {
  testing::TempDir dir;
  std::filesystem::create_directory(dir.file("real"));
  std::filesystem::create_directory_symlink(dir.file("real"), dir.file("alias"));
  const std::string through_alias = dir.file("alias/store.db");
  std::ofstream(through_alias) << "";
  auto held = StoreLock::acquire(through_alias, "mirage daemon", 0);
  ASSERT_TRUE(held.has_value());
  EXPECT_FALSE(held->lost().has_value());
  std::string held_by;
  EXPECT_FALSE(StoreLock::acquire(dir.file("real/store.db"), "mirage tick", 0, &held_by));
  EXPECT_EQ(held_by, "pid " + std::to_string(::getpid()) + " (mirage daemon)");
}

// A hard link has no one real name to key the lock on (and SQLite keeps its journal beside the
// name it was given), so a store with two names in the file system is refused, saying so.
TEST(StoreLock, HardLinkedStoreIsRefusedNamingIt) {
  testing::TempDir dir;
  const std::string store = dir.file("store.db");
  std::ofstream(store) << "";
  std::filesystem::create_hard_link(store, dir.file("other.db"));
  try {
    StoreLock::acquire(store, "mirage tick", 0);
    FAIL() << "a hard-linked store was locked";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(store + " has 2 hard links"), std::string::npos) << what;
  }
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

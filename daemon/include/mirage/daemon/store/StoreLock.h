#pragma once
// One process at a time acts on a store: the daemon for its life, `mirage tick` for its pass,
// a `campaign` command for its request when no daemon runs. An flock on `<store>.lock` beside
// the store's real file (a symlink to the store locks the same one; a store that is a symlink also
// locks `<link>.lock`, the lock of an older mirage that may still run), which the kernel releases
// when the holder dies, however it dies. The flock guards only the file it was taken on: a lock
// file deleted or replaced while held lets the next process lock a new file at the path, so a
// holder that lasts asks `lost()` and takes the path again (or stops).
#include <optional>
#include <stdexcept>
#include <string>

namespace mirage::daemon {

// The store (or its lock file) belongs to another user: one line saying whose.
class StoreOwnerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class StoreLock {
 public:
  // Takes the lock for `holder` (written into the lock file for the next one's message),
  // retrying for up to `wait_s` seconds. nullopt when another holds it; `held_by` then says who
  // ("pid 812 (mirage daemon)"). Throws StoreOwnerError for a store or lock file of another
  // user, std::runtime_error when the lock file cannot be made.
  static std::optional<StoreLock> acquire(const std::string& store_path, const std::string& holder,
                                          double wait_s, std::string* held_by = nullptr);
  static std::string lock_path(const std::string& store_path);

  // Why this lock no longer guards the store: its file was deleted or replaced since it was
  // taken (the next process to lock the path locks another file); nullopt while it holds.
  std::optional<std::string> lost() const;

  // Takes anew, without waiting, each of its files lost() finds deleted or replaced, keeping the
  // others (another acquire would meet this very lock on them): false when another process holds
  // a new one (`held_by` then says who), the lost one kept.
  bool take_again(const std::string& holder, std::string* held_by = nullptr);

  StoreLock(StoreLock&& other) noexcept;
  StoreLock& operator=(StoreLock&& other) noexcept;
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;
  ~StoreLock();

 private:
  StoreLock(int fd, std::string path, int old_fd, std::string old_path)
      : fd_(fd), path_(std::move(path)), old_fd_(old_fd), old_path_(std::move(old_path)) {}
  int fd_ = -1;
  std::string path_;
  int old_fd_ = -1;  // `<link>.lock` of a store that is a symlink, else -1
  std::string old_path_;
};

// Why `path` may not be used by this process's user: it exists and belongs to another user.
std::optional<std::string> foreign_owner(const std::string& path);

}  // namespace mirage::daemon

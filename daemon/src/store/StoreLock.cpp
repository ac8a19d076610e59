#include "mirage/daemon/store/StoreLock.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "mirage/daemon/store/StoreHome.h"
#include "store/PathChecks.h"

namespace mirage::daemon {

namespace {

// Opened anew this often when the file locked is found deleted or replaced.
constexpr int kMostTries = 20;

std::string user_name(uid_t uid) {
  const passwd* pw = ::getpwuid(uid);
  return pw ? std::string(pw->pw_name) + " (uid " + std::to_string(uid) + ")"
            : "uid " + std::to_string(uid);
}

// Why the flock on `fd` does not guard `path` (the file there is not the one locked), if so.
std::optional<std::string> not_the_file_at(int fd, const std::string& path) {
  struct stat held {};
  struct stat there {};
  if (::fstat(fd, &held) != 0) return path + " cannot be checked: " + std::strerror(errno);
  if (::stat(path.c_str(), &there) != 0)
    return errno == ENOENT ? path + " was deleted" : path + ": " + std::strerror(errno);
  if (held.st_dev != there.st_dev || held.st_ino != there.st_ino)
    return path + " was replaced by another file";
  return std::nullopt;
}

// The first line only: read between a holder's write and its cut to length, the file still has
// the tail of a longer line of the one before after it.
std::string read_holder(int fd) {
  char buf[256];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  s.resize(std::min(s.find('\n'), s.size()));
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s.empty() ? "another process" : s;
}

// Takes the flock on `fd`, trying until `deadline`; false when another still holds it then.
bool lock_until(int fd, const std::string& path, std::chrono::steady_clock::time_point deadline) {
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const int err = errno;
      ::close(fd);
      throw std::runtime_error("cannot lock " + path + ": " + std::strerror(err));
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return true;
}

// Opens and flocks `path`, trying until `deadline`: the fd, or -1 when another still holds it then
// (`held_by` then says who).
int take(const std::string& path, std::chrono::steady_clock::time_point deadline,
         std::string* held_by) {
  for (int tries = 1;; ++tries) {
    // Not O_CLOEXEC on purpose: the sbatch a pass runs inherits the lock, so a pass killed while
    // its sbatch still talks to slurmctld keeps the store locked until that sbatch is gone, and
    // the next pass settles the submission against a dump that can already show its job.
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);  // NOLINT(hicpp-signed-bitwise)
    if (fd < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
    const bool timed_out = !lock_until(fd, path, deadline);
    // Locked, but perhaps a file deleted or replaced while this one waited on it: a process
    // opening the path now would lock another file, so this lock would guard nothing.
    const auto moved = timed_out ? std::nullopt : not_the_file_at(fd, path);
    if (!timed_out && !moved) return fd;
    if (timed_out) {
      if (held_by) *held_by = read_holder(fd);
      ::close(fd);
      return -1;
    }
    ::close(fd);
    // A path that cannot be stat'ed, or replaced again and again, is not a lock to wait on.
    if (tries == kMostTries) throw std::runtime_error("cannot lock " + *moved);
  }
}

// The line a holder writes into its lock files, for the next one's message.
std::string holder_line(const std::string& holder) {
  return "pid " + std::to_string(::getpid()) + " (" + holder + ")\n";
}

// Written over the last holder's line, then cut to length: one that reads it meanwhile finds a
// whole first line. A failure costs only the next one's message.
void write_holder(int fd, const std::string& who) {
  if (::pwrite(fd, who.data(), who.size(), 0) == static_cast<ssize_t>(who.size()) &&
      ::ftruncate(fd, static_cast<off_t>(who.size())) != 0) {
    // A longer line of an earlier holder keeps its tail; the lock is held all the same.
  }
}

// `<store path as given>.lock`, the lock of a mirage of before the lock moved beside the real file,
// where that is another file than `lock`: only for a store that is itself a symlink (a symlinked
// directory above the store leaves it the same file under another name, and two open
// descriptions of one file would refuse each other).
std::optional<std::string> old_lock_path(const std::string& store_path, const std::string& lock) {
  std::error_code ec;
  if (!std::filesystem::is_symlink(store_path, ec)) return std::nullopt;
  const std::string old = store_path + ".lock";
  if (same_store_file(old, lock)) return std::nullopt;
  return old;
}

}  // namespace

std::optional<std::string> foreign_owner(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || st.st_uid == ::geteuid()) return std::nullopt;
  return path + " belongs to " + user_name(st.st_uid) + ", not to you (" + user_name(::geteuid()) +
         "); give --config a store of your own";
}

std::string StoreLock::lock_path(const std::string& store_path) {
  // The real file's: a store reached under two names (a symlink left where it was before it
  // moved) is one store, and SQLite opens the real file whichever name it is given.
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::weakly_canonical(store_path, ec);
  return (ec ? store_path : real.string()) + ".lock";
}

std::optional<StoreLock> StoreLock::acquire(const std::string& store_path,
                                            const std::string& holder, double wait_s,
                                            std::string* held_by) {
  const std::string path = lock_path(store_path);
  // An older mirage (a daemon not yet restarted, one on another login node) locks the link's own
  // `.lock`: while one may still run, a store that is a symlink takes both.
  const auto old = old_lock_path(store_path, path);
  for (const auto& p : {store_path, path, old.value_or(path)})
    if (auto why = foreign_owner(p)) throw StoreOwnerError(*why);
  if (auto why = hard_link_problem(store_path)) throw std::runtime_error(*why);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<long>(wait_s * 1000));
  // The old one first, always: two new mirages on the link cannot each hold one and wait on the
  // other's (one on the real path takes only the real file's).
  const int old_fd = old ? take(*old, deadline, held_by) : -1;
  if (old && old_fd < 0) return std::nullopt;
  // In both, the old one at once: an older mirage refused by it while this one still waits on the
  // real file's reads who holds the store there, not the last holder.
  const std::string who = holder_line(holder);
  if (old_fd >= 0) write_holder(old_fd, who);
  int fd = -1;
  try {
    fd = take(path, deadline, held_by);
  } catch (...) {
    if (old_fd >= 0) ::close(old_fd);
    throw;
  }
  if (fd < 0) {
    if (old_fd >= 0) ::close(old_fd);
    return std::nullopt;
  }
  write_holder(fd, who);
  return StoreLock(fd, path, old_fd, old.value_or(""));
}

std::optional<std::string> StoreLock::lost() const {
  // Either file deleted or replaced lets another process take the store under that name.
  if (old_fd_ >= 0)
    if (auto why = not_the_file_at(old_fd_, old_path_)) return why;
  return not_the_file_at(fd_, path_);
}

bool StoreLock::take_again(const std::string& holder, std::string* held_by) {
  const std::string who = holder_line(holder);
  // The old one first, as acquire takes them.
  for (auto [fd, path] : {std::pair{&old_fd_, &old_path_}, std::pair{&fd_, &path_}}) {
    if (*fd < 0 || !not_the_file_at(*fd, *path)) continue;
    const int again = take(*path, std::chrono::steady_clock::now(), held_by);
    if (again < 0) return false;
    write_holder(again, who);
    ::close(*fd);
    *fd = again;
  }
  return true;
}

StoreLock::StoreLock(StoreLock&& other) noexcept
    : fd_(other.fd_),
      path_(std::move(other.path_)),
      old_fd_(other.old_fd_),
      old_path_(std::move(other.old_path_)) {
  other.fd_ = -1;
  other.old_fd_ = -1;
}

StoreLock& StoreLock::operator=(StoreLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    if (old_fd_ >= 0) ::close(old_fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    old_fd_ = other.old_fd_;
    old_path_ = std::move(other.old_path_);
    other.fd_ = -1;
    other.old_fd_ = -1;
  }
  return *this;
}

StoreLock::~StoreLock() {
  if (fd_ >= 0) ::close(fd_);
  if (old_fd_ >= 0) ::close(old_fd_);
}

}  // namespace mirage::daemon

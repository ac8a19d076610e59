#include "Handoff.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>
#include <system_error>
#include <thread>

#include "AtomicFile.h"

namespace mirage::training {
namespace {

constexpr const char* kLockName = "trainer.lock";
constexpr const char* kMarkerName = "handoff.json";

}  // namespace

std::optional<TrainerLock> TrainerLock::try_acquire(const std::filesystem::path& dir,
                                                    const std::string& owner) {
  std::filesystem::create_directories(dir);
  std::filesystem::path file = dir / kLockName;
  int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::system_error(errno, std::generic_category(), "cannot open " + file.string());
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  // Informational only: the flock, not the text, is what excludes.
  if (::ftruncate(fd, 0) == 0) {
    std::string text = owner + "\n";
    [[maybe_unused]] ssize_t ignored = ::pwrite(fd, text.data(), text.size(), 0);
  }
  return TrainerLock(fd);
}

std::string TrainerLock::holder(const std::filesystem::path& dir) {
  try {
    std::string text = read_file(dir / kLockName);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  } catch (const std::exception&) {
    return "";
  }
}

TrainerLock::TrainerLock(TrainerLock&& other) noexcept : fd_(other.fd_) {
  other.fd_ = -1;
}

TrainerLock& TrainerLock::operator=(TrainerLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

TrainerLock::~TrainerLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

void write_handoff_marker(const std::filesystem::path& dir, const HandoffMarker& marker) {
  nlohmann::json j = {{"step", marker.step},
                      {"checkpoint", marker.checkpoint},
                      {"job_id", marker.job_id},
                      {"time", marker.time_unix},
                      {"reason", marker.reason}};
  write_file_atomically(dir / kMarkerName, {j.dump() + "\n"});
}

std::optional<HandoffMarker> read_handoff_marker(const std::filesystem::path& dir) {
  try {
    auto j = nlohmann::json::parse(read_file(dir / kMarkerName));
    HandoffMarker m;
    m.step = j.at("step").get<std::int64_t>();
    m.checkpoint = j.at("checkpoint").get<std::string>();
    m.job_id = j.at("job_id").get<std::string>();
    m.time_unix = j.at("time").get<double>();
    m.reason = j.value("reason", "");
    return m;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

HandoffWait wait_for_predecessor(const std::filesystem::path& dir, const std::string& owner,
                                 std::chrono::milliseconds timeout, std::chrono::milliseconds poll,
                                 const std::function<bool()>& should_stop,
                                 std::optional<TrainerLock>& lock) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    lock = TrainerLock::try_acquire(dir, owner);
    if (lock) return HandoffWait::acquired;
    if (should_stop()) return HandoffWait::stopped;
    if (std::chrono::steady_clock::now() >= deadline) return HandoffWait::timed_out;
    std::this_thread::sleep_for(poll);
  }
}

double unix_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace mirage::training

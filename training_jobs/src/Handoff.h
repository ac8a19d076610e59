#pragma once
// Who owns a checkpoint directory, and the hand-off between consecutive segments of a campaign.
//
// Protocol: while a trainer runs, its rank 0 holds an exclusive flock on `<dir>/trainer.lock`
// (the kernel drops it when the process dies, however it dies). On a clean exit it writes its
// final checkpoint, then `<dir>/handoff.json` ({step, checkpoint, job_id, time, reason}), then
// lets the lock go. A successor started while its predecessor still runs (`--handoff-wait`)
// polls, for a bounded time, until it can take the lock; it then resumes from the newest valid
// checkpoint, which the marker names when the predecessor handed off after the successor started.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace mirage::training {

class TrainerLock {
 public:
  // Takes the lock without blocking, or returns nullopt when another process holds it.
  // `owner` (pid, host, job) is written into the file for whoever finds it held.
  static std::optional<TrainerLock> try_acquire(const std::filesystem::path& dir,
                                                const std::string& owner);
  // What the current holder wrote, or "" (best effort, for error messages).
  static std::string holder(const std::filesystem::path& dir);

  TrainerLock(TrainerLock&& other) noexcept;
  TrainerLock& operator=(TrainerLock&& other) noexcept;
  TrainerLock(const TrainerLock&) = delete;
  TrainerLock& operator=(const TrainerLock&) = delete;
  ~TrainerLock();

 private:
  explicit TrainerLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

struct HandoffMarker {
  std::int64_t step = 0;
  std::string checkpoint;  // file name inside the directory
  std::string job_id;
  double time_unix = 0;  // when it was written
  std::string reason;    // "SIGUSR1", "time budget", "done", ...
};

void write_handoff_marker(const std::filesystem::path& dir, const HandoffMarker& marker);
std::optional<HandoffMarker> read_handoff_marker(const std::filesystem::path& dir);

enum class HandoffWait { acquired, stopped, timed_out };

// Polls every `poll` until the lock is free (and takes it), `should_stop()` is true, or
// `timeout` passes.
HandoffWait wait_for_predecessor(const std::filesystem::path& dir, const std::string& owner,
                                 std::chrono::milliseconds timeout, std::chrono::milliseconds poll,
                                 const std::function<bool()>& should_stop,
                                 std::optional<TrainerLock>& lock);

double unix_time_now();

}  // namespace mirage::training

#pragma once
// The one time seam of the daemon: the controller asks a Clock, never the system directly, so the
// simulator backend can run accelerated and unit tests can step time by hand.
#include <atomic>
#include <chrono>

#include "mirage/core/Time.h"

namespace mirage::daemon {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Seconds now() const = 0;  // Unix seconds
};

// Wall-clock time.
class SystemClock final : public Clock {
 public:
  Seconds now() const override;
};

// Time set by hand (unit tests, benchmarks).
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Seconds start = 0) : now_(start) {}
  Seconds now() const override { return now_.load(); }
  void set(Seconds t) { now_.store(t); }
  void advance(Seconds dt) { now_.fetch_add(dt); }

 private:
  std::atomic<Seconds> now_;
};

// Simulated time running `speed` times faster than the wall clock from `origin` on: what the
// simulator backend runs on. Thread-safe (a pure function of the steady clock).
class AcceleratedClock final : public Clock {
 public:
  AcceleratedClock(Seconds origin, double speed)
      : origin_(origin), speed_(speed), wall_origin_(std::chrono::steady_clock::now()) {}
  Seconds now() const override;
  double speed() const { return speed_; }

 private:
  Seconds origin_;
  double speed_;
  std::chrono::steady_clock::time_point wall_origin_;
};

}  // namespace mirage::daemon

#include "mirage/daemon/slurm/Clock.h"

#include <cmath>

namespace mirage::daemon {

Seconds SystemClock::now() const {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Seconds AcceleratedClock::now() const {
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_origin_).count();
  return origin_ + static_cast<Seconds>(std::floor(wall * speed_));
}

}  // namespace mirage::daemon

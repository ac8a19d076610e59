#pragma once
// `mirage tick`: one pass over the store's campaigns without a daemon (poll, settle, decide,
// submit, hand-off signals), with the daemon's own CampaignPass and controller, under the
// store's lock. Run from cron or Slurm's scrontab every few minutes.
#include <cstddef>
#include <functional>
#include <string>

#include "mirage/daemon/Clock.h"
#include "mirage/daemon/DaemonConfig.h"
#include "mirage/daemon/SlurmClient.h"

namespace mirage::daemon {

struct TickResult {
  bool ran = false;           // false: another process held the store
  std::string held_by;        // who, when it did not run ("pid 812 (mirage daemon)")
  std::size_t campaigns = 0;  // active or paused after the pass
  std::size_t submitted = 0;
  std::size_t signalled = 0;
  std::size_t cancelled = 0;
  std::size_t released = 0;    // held successors released early
  std::size_t unresolved = 0;  // submissions still unknown after the pass
};

// Waits until the clock reads at least the given time (a tick sleeps; a test moves its clock).
using WaitUntil = std::function<void(Seconds)>;

// One pass. Submissions a killed pass left unknown are settled as after a daemon restart: by
// their tag in a dump taken at least reconcile_delay after the lock was taken (the tick waits
// that long only when there are some).
TickResult run_tick(const DaemonConfig& config, SlurmClient& client, const Clock& clock,
                    const WaitUntil& wait_until);

}  // namespace mirage::daemon

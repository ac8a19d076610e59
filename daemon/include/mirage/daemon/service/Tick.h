#pragma once
// `mirage tick`: one pass over the store's campaigns without a daemon (poll, settle, decide,
// submit, hand-off signals), with the daemon's own CampaignPass and controller, under the
// store's lock. Run from cron or Slurm's scrontab every few minutes.
#include <cstddef>
#include <functional>
#include <string>

#include "mirage/daemon/service/DaemonConfig.h"
#include "mirage/daemon/slurm/Clock.h"
#include "mirage/daemon/slurm/SlurmClient.h"

namespace mirage::daemon {

struct TickResult {
  bool ran = false;            // false: another process held the store
  std::string held_by;         // who, when it did not run ("pid 812 (mirage daemon)")
  bool holder_passes = false;  // when it did not run: the holder makes a pass (a daemon, a tick)
  double waited_s = 0;         // how long it waited for a holder that makes none
  std::size_t campaigns = 0;   // active or paused after the pass
  std::size_t submitted = 0;
  std::size_t signalled = 0;
  std::size_t cancelled = 0;
  std::size_t released = 0;    // held successors released early
  std::size_t unresolved = 0;  // submissions still unknown after the pass
};

// How long a tick waits for a `mirage campaign` command to let go of the store: such a command
// holds it for one request (a cancel's scancel at most), and makes no pass of its own.
inline constexpr double kTickWaitForRequest_s = 30;

// Whether the holder named by StoreLock's `held_by` makes a pass of its own: the daemon, or
// another tick. A `mirage campaign` command, or a process that does not say, does not.
bool holder_makes_pass(const std::string& held_by);

// Waits until the clock reads at least the given time (a tick sleeps; a test moves its clock).
using WaitUntil = std::function<void(Seconds)>;

// One pass. Submissions a killed pass left unknown are settled as after a daemon restart: by
// their tag in a dump taken at least reconcile_delay after the lock was taken (the tick waits
// that long only when there are some). A store held by a process that makes a pass is left to
// it at once; one held by a `campaign` command is waited for up to `request_wait_s`.
TickResult run_tick(const DaemonConfig& config, SlurmClient& client, const Clock& clock,
                    const WaitUntil& wait_until, double request_wait_s = kTickWaitForRequest_s);

}  // namespace mirage::daemon

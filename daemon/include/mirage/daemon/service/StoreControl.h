#pragma once
// The control protocol served on the store itself, for `mirage campaign ... --config FILE` when
// no daemon runs: the daemon's own ControlHandler and controller, under the store's lock, for one
// request. What the request decides happens at once (a cancel's job cancellations); what needs a
// pass (a new campaign's first submission) is left to the next `mirage tick`.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "mirage/daemon/control/ControlServer.h"
#include "mirage/daemon/service/DaemonConfig.h"
#include "mirage/daemon/slurm/Clock.h"
#include "mirage/daemon/slurm/SlurmClient.h"

namespace mirage::daemon {

// The store is held by another process for longer than a request waits: for the user, like a
// daemon that cannot be reached.
class StoreBusyError : public ControlClientError {
 public:
  using ControlClientError::ControlClientError;
};

// Long enough for a tick's pass (one dump, a few submissions); a daemon holds it for good.
inline constexpr double kStoreRequestLockWait_s = 20;

// Serves `request` from `peer_uid` on config.store_path and returns the reply; a cancel whose
// scancel failed lists those jobs under "not_cancelled" ({"job","segment","error"}). Throws
// RequestError when it answers {"ok":false} (as call_daemon does), StoreBusyError when the store
// stays locked for `lock_wait_s`, StoreOwnerError when it is another user's.
nlohmann::json serve_on_store(const DaemonConfig& config, const nlohmann::json& request,
                              std::uint32_t peer_uid, SlurmClient& client, const Clock& clock,
                              double lock_wait_s = kStoreRequestLockWait_s);

}  // namespace mirage::daemon

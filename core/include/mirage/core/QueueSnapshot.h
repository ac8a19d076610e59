#pragma once
// The state of one partition at one instant: what a policy may know about the queue. Produced
// identically by the simulator and by the daemon's Slurm poller.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mirage/core/ClusterSpec.h"
#include "mirage/core/Time.h"

namespace mirage {

// Why a pending job waits, as far as a plan of the queue cares: slurmctld's pending reason,
// classified (classify_pending_reason), or the simulator's word for its own jobs.
enum class PendingState : std::uint8_t {
  kEligible,        // waits its turn (Priority) or for room (Resources): it competes now
  kHeld,            // held by its user or an administrator (priority 0)
  kDependency,      // waits for another job
  kLimit,           // over a per-user, per-account or QOS limit: it starts only once some of its
                    // owner's work ends, whatever room there is
  kNotYetEligible,  // a begin time, or a reservation, partition or nodes not available yet
  kNever,           // cannot start as asked (over a per-job limit, a QOS or account it may not
                    // use, a constraint no node meets) until someone changes it: blocks nobody
};
std::string_view to_string(PendingState state);
// slurmctld's reason (job_state_reason_string: "Priority", "Dependency", "JobHeldUser",
// "QOSMaxNodePerUserLimit", "AssocGrpGRES", "BeginTime", ...) as a PendingState; without one, a
// reported priority of 0 means held. An unknown reason is kEligible: the job is planned as a
// competitor.
PendingState classify_pending_reason(std::string_view reason, std::optional<double> priority);

// The scheduler's priority where the source does not report one (a log, a test).
inline constexpr double kUnknownPriority = -1;

struct PendingJobView {
  Seconds time_limit = 0;
  int nodes = 0;
  int gpus_per_node = 0;
  Seconds waited = 0;  // time in the queue so far
  // What the scheduler says of it: its priority now (kUnknownPriority where not reported), how
  // long it has accrued age (since it became eligible: a job released from a dependency, or one
  // past a limit, starts accruing then), and why it waits.
  double priority = kUnknownPriority;
  Seconds accrued = 0;
  PendingState state = PendingState::kEligible;
  // Its QOS, as reported ("": not reported, or the simulator's single one). Its priority
  // factor is in `priority`, its limits in `state`; a one-partition snapshot has one partition
  // priority tier, so none is kept per job.
  std::string qos{};
};

struct RunningJobView {
  Seconds time_limit = 0;
  int nodes = 0;
  int gpus_per_node = 0;
  Seconds waited = 0;  // how long it waited before it started
  Seconds run = 0;     // time run so far
  // The priority it started with (Slurm stops recomputing a job's priority once it runs):
  // with its wait, what its owner's next job would be given. kUnknownPriority where not reported.
  double priority = kUnknownPriority;
  // Its owner is the snapshot's user (whose campaign it serves): their running work counts
  // against their limits (QueueSnapshot::user_limits).
  bool own = false;
  std::string qos{};  // as reported ("": not reported)
};

// Nodes of the partition that a reservation for others will hold over [start, end) (Unix
// seconds): a maintenance window, a course, a reserved block. The forecast plans no job across it.
struct NodeReservation {
  Seconds start = 0;
  Seconds end = 0;
  int nodes = 0;
};

struct QueueSnapshot {
  Seconds time = 0;  // Unix seconds of the observation
  int total_nodes = 0;
  int gpus_per_node = 0;
  // Nodes no pending job can have now: down, drained, or reserved for others (live: the node
  // states; simulated: the capacity the calibration holds back from the logged jobs).
  int unavailable_nodes = 0;
  // The limits on the running work of the snapshot's user (the QOS's or association's per-user
  // limits where the source knows them; none otherwise): a job of theirs that would exceed one
  // pends, whatever room there is.
  UserLimits user_limits;
  // Live, where accounting tells them: the same limits were a job submitted under each QOS the
  // user may ask for (a campaign's --qos), the association's and the partition QOS's included.
  std::vector<std::pair<std::string, UserLimits>> user_limits_by_qos;
  // Reservations for others that begin after `time` (those under way hold their idle nodes in
  // unavailable_nodes already). Live: slurmctld's; simulated: the weekly boundaries a calibration
  // found, each a second of every node (a log announces no other).
  std::vector<NodeReservation> reservations;
  std::vector<PendingJobView> pending;
  std::vector<RunningJobView> running;
  // Mean queue wait of the most recently started jobs (up to kRecentStarts of them), as the
  // `average` baseline uses; recent_starts says how many were seen.
  static constexpr int kRecentStarts = 100;
  double recent_mean_wait_s = 0;
  int recent_starts = 0;
  // How the most recently ended jobs (up to kRecentEnds) ran: runtime / time limit, capped at 1,
  // in order of their ends. Most jobs end long before their limits (on LS6 half of them within
  // 5% of it), so a forecast that plans with limits overstates waits.
  static constexpr int kRecentEnds = 100;
  std::vector<float> recent_runtime_shares;
  // One entry of recent_runtime_shares, as the simulator and the daemon both note it (a job
  // without a limit counts as having run to it).
  static float runtime_share(Seconds runtime, Seconds limit) {
    const double share =
        limit > 0 ? static_cast<double>(runtime) / static_cast<double>(limit) : 1.0;
    return static_cast<float>(std::clamp(share, 0.0, 1.0));
  }
  // The scheduler's priority weights (slurm.conf's multifactor age and job-size factors), so
  // that a forecast ranks the pending jobs as the scheduler does. All zero: by age alone.
  PriorityParameters priority = PriorityParameters::unweighted();
};

}  // namespace mirage

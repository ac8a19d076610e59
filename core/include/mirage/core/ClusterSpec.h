#pragma once
// The machine and its scheduler configuration. Parameter names follow slurm.conf
// (SchedulerParameters and the multifactor priority plugin) so that users recognise them.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mirage/core/DownWindows.h"
#include "mirage/core/Time.h"
#include "mirage/core/WeeklyBoundaries.h"

namespace mirage {

enum class BackfillMode {
  kNone,   // main scheduler only: strict priority order
  kEasy,   // reserve only for the highest-priority blocked job (EASY backfilling)
  kSlurm,  // reserve for every job tested, as Slurm's backfill plugin does
};
std::string_view to_string(BackfillMode mode);
std::optional<BackfillMode> parse_backfill_mode(std::string_view text);

enum class AllocationMode {
  kWholeNode,    // a job owns its nodes exclusively (OverSubscribe=EXCLUSIVE), as in the traces
  kGpuGranular,  // a job takes gpus_per_node GPUs on each of its nodes; nodes are shared
};
std::string_view to_string(AllocationMode mode);

struct SchedulerParameters {
  Seconds sched_interval = 60;  // main scheduler period (it also runs on every submit and end)
  Seconds bf_interval = 30;     // backfill period
  Seconds bf_window = 1440 * kMinute;  // how far ahead backfill plans (slurm.conf gives minutes)
  Seconds bf_resolution = 60;          // time granularity of backfill's plan
  int bf_max_job_test = 500;           // jobs backfill considers per pass
  int bf_max_job_user = 0;             // of those, per user (0: no limit)
  BackfillMode backfill = BackfillMode::kSlurm;
  // PriorityCalcPeriod: slurmctld's decay thread recomputes every pending job's priority (its age
  // and its user's fairshare factor) once a period, and the queue is ranked by those figures
  // until the next (a job submitted between is given age 0). 0: recomputed at every pass.
  Seconds priority_calc_period = 0;
};

struct PriorityParameters {
  // Multifactor priority: age and job size, normalised to [0, 1] and weighted as in slurm.conf.
  double weight_age = 1000;       // PriorityWeightAge
  double weight_job_size = 1000;  // PriorityWeightJobSize
  Seconds max_age = 7 * kDay;     // PriorityMaxAge
  bool favor_small = false;       // PriorityFavorSmall
  // Fairshare with every user given an equal share (the classic factor 2^(-usage/share)), usage
  // decaying with PriorityDecayHalfLife. The simulator keeps the usage; 0: no fairshare.
  double weight_fairshare = 0;         // PriorityWeightFairshare
  Seconds decay_half_life = 7 * kDay;  // PriorityDecayHalfLife

  // No weights (priority/basic, or weights not known yet): every job scores 0, so jobs go in
  // submission order.
  static constexpr PriorityParameters unweighted() { return {0, 0, 7 * kDay, false, 0, 7 * kDay}; }
  // The priority of a job eligible for `age` that asks for `size_share` (0..1) of the machine,
  // whose user's fairshare factor is `fairshare` (0..1).
  double score(Seconds age, double size_share, double fairshare = 0.0) const {
    return age_part(age) + size_part(size_share) + weight_fairshare * fairshare;
  }
  // The age factor's share of a priority: it grows until PriorityMaxAge, then stays.
  double age_part(Seconds age) const {
    if (max_age <= 0) return 0.0;
    const Seconds capped = std::clamp<Seconds>(age, 0, max_age);
    return weight_age * static_cast<double>(capped) / static_cast<double>(max_age);
  }
  double size_part(double size_share) const {
    return weight_job_size * (favor_small ? 1.0 - size_share : size_share);
  }
  bool operator==(const PriorityParameters&) const = default;
};

// Per-user limits on running work, held as a Slurm QOS holds them (MaxJobsPerUser,
// MaxTRESPerUser=node=N): a job that would exceed one stays pending and blocks nobody. 0: none.
struct UserLimits {
  int max_running_jobs = 0;
  int max_running_nodes = 0;
  bool operator==(const UserLimits&) const = default;
};

// From `from` on (until the next step), this many nodes are held by work the log does not show
// (other partitions on the same nodes, reservations, maintenance, drained nodes). Whole-node
// allocation only.
struct CapacityStep {
  Seconds from = 0;
  int unavailable_nodes = 0;
};

struct ClusterSpec {
  int nodes = 0;
  int gpus_per_node = 0;  // 0 for CPU-only machines
  AllocationMode allocation = AllocationMode::kWholeNode;
  SchedulerParameters scheduler;
  PriorityParameters priority;
  // What the log leaves out of the cluster (simulator/Calibration.h infers both); none by default.
  UserLimits user_limits;
  std::shared_ptr<const std::vector<CapacityStep>> unavailable;     // sorted by `from`; may be null
  std::shared_ptr<const std::vector<WeeklyBoundaries>> boundaries;  // in time order; may be null
  std::shared_ptr<const std::vector<DownWindow>> down;  // sorted, not overlapping; may be null

  // "88 nodes x 4 GPUs", or "32 nodes (GPUs per node not given)" where the trace and the flags
  // say nothing of GPUs: a log of whole-node jobs does not make a CPU machine.
  std::string describe() const {
    return gpus_per_node > 0
               ? std::to_string(nodes) + " nodes x " + std::to_string(gpus_per_node) + " GPUs"
               : std::to_string(nodes) + " nodes (GPUs per node not given)";
  }

  // Total allocation units a job size is measured against (nodes, or GPUs when GPU-granular).
  long long capacity_units() const {
    return allocation == AllocationMode::kGpuGranular ? 1LL * nodes * gpus_per_node : nodes;
  }
};

}  // namespace mirage

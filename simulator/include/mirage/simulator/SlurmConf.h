#pragma once
// A site's own slurm.conf as the simulator's scheduler and priority settings, by Slurm's key
// names: SchedulerType, SchedulerParameters (sched_interval, bf_interval, bf_window,
// bf_resolution, bf_max_job_test, bf_max_job_user), PriorityType, PriorityWeightAge,
// PriorityWeightJobSize, PriorityMaxAge, PriorityFavorSmall, PriorityWeightFairshare,
// PriorityDecayHalfLife. What the file leaves out takes Slurm's own default (the priority
// weights 0), as slurmctld would. `mirage simulate|eval|train|trace fidelity --slurm-conf FILE`,
// and the faithfulness validation against a real Slurm.
#include <string>
#include <vector>

#include "mirage/core/ClusterSpec.h"

namespace mirage {

struct SlurmConf {
  ClusterSpec spec;                // `base` with the file's scheduler and priority settings
  std::vector<std::string> notes;  // keys the simulator cannot honour, and how it reads them
};

// Nodes, GPUs and allocation are kept from `base`. A bad value is an InputError naming the file,
// the line and the key; keys the simulator does not model are ignored, or noted where they
// would change what it computes.
SlurmConf read_slurm_conf(const std::string& path, ClusterSpec base);

}  // namespace mirage

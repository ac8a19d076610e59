#include "mirage/daemon/slurm/JobEnvironment.h"

#include <algorithm>

namespace mirage::daemon {
namespace {

// What Slurm sets in a batch job and in its steps (sbatch.1 and srun.1 of 22.05 and 24.11,
// OUTPUT ENVIRONMENT VARIABLES), as whole names...
constexpr std::string_view kJobScopedNames[] = {
    "SLURMD_NODENAME",      "SLURM_CLUSTER_NAME",
    "SLURM_CONTAINER",      "SLURM_CPUS_ON_NODE",
    "SLURM_CPUS_PER_GPU",   "SLURM_CPUS_PER_TASK",
    "SLURM_CPU_FREQ_REQ",   "SLURM_DISTRIBUTION",
    "SLURM_DIST_PLANESIZE", "SLURM_EXPORT_ENV",
    "SLURM_GPUS",           "SLURM_GPUS_ON_NODE",
    "SLURM_GPUS_PER_NODE",  "SLURM_GPUS_PER_SOCKET",
    "SLURM_GPUS_PER_TASK",  "SLURM_GPU_BIND",
    "SLURM_GPU_FREQ",       "SLURM_GTIDS",
    "SLURM_JOBID",          "SLURM_LAUNCH_NODE_IPADDR",
    "SLURM_LOCALID",        "SLURM_MEM_PER_CPU",
    "SLURM_MEM_PER_GPU",    "SLURM_MEM_PER_NODE",
    "SLURM_NNODES",         "SLURM_NODEID",
    "SLURM_NODELIST",       "SLURM_NODE_ALIASES",
    "SLURM_NPROCS",         "SLURM_NTASKS",
    "SLURM_OVERCOMMIT",     "SLURM_PRIO_PROCESS",
    "SLURM_PROCID",         "SLURM_PROFILE",
    "SLURM_RESTART_COUNT",  "SLURM_SHARDS_ON_NODE",
    "SLURM_STEPID",         "SLURM_SUBMIT_DIR",
    "SLURM_SUBMIT_HOST",    "SLURM_TASKS_PER_NODE",
    "SLURM_TASK_PID",       "SLURM_THREADS_PER_CORE",
};

// ...and as families (a release adds members: 24.11's SLURM_JOB_START_TIME, SLURM_TRES_PER_TASK).
constexpr std::string_view kJobScopedPrefixes[] = {
    "SLURM_JOB_",       "SLURM_STEP_",       "SLURM_ARRAY_",        "SLURM_HET_",
    "SLURM_PACK_",      "SLURM_NTASKS_PER_", "SLURM_CPU_BIND",      "SLURM_MEM_BIND",
    "SLURM_SRUN_COMM_", "SLURM_TRES_",       "SLURM_TOPOLOGY_ADDR",
};

std::string_view name_of(std::string_view entry) {
  return entry.substr(0, entry.find('='));
}

bool contains(const auto& list, std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

}  // namespace

bool is_job_scoped_variable(std::string_view entry) {
  const std::string_view name = name_of(entry);
  if (contains(kJobScopedNames, name)) return true;
  // A heterogeneous job's per-component copies: SLURM_NTASKS_HET_GROUP_1.
  if (name.rfind("SLURM", 0) == 0 && (name.find("_HET_GROUP_") != std::string_view::npos ||
                                      name.find("_PACK_GROUP_") != std::string_view::npos))
    return true;
  return std::any_of(std::begin(kJobScopedPrefixes), std::end(kJobScopedPrefixes),
                     [&](std::string_view p) { return name.rfind(p, 0) == 0; });
}

std::vector<std::string> without_outer_job_variables(std::vector<std::string> environment,
                                                     std::vector<std::string>& dropped) {
  const bool in_a_job = std::any_of(environment.begin(), environment.end(),
                                    [](const auto& e) { return e.rfind("SLURM_JOB_ID=", 0) == 0; });
  if (!in_a_job) return environment;
  std::vector<std::string> kept;
  for (auto& e : environment)
    if (is_job_scoped_variable(e))
      dropped.emplace_back(name_of(e));
    else
      kept.push_back(std::move(e));
  return kept;
}

}  // namespace mirage::daemon

#pragma once
// What of the environment of `campaign add` a segment's job gets. The environment is stored with
// the campaign; sbatch runs with it (less sbatch's input variables) and the daemon's MIRAGE_*
// variables.
#include <string>
#include <string_view>
#include <vector>

namespace mirage::daemon {

// Whether `entry` is one Slurm sets inside a job or a step to describe it (sbatch.1's and
// srun.1's OUTPUT ENVIRONMENT VARIABLES: SLURM_JOB_ID, SLURM_NTASKS, SLURM_MEM_PER_NODE,
// SLURM_CPUS_PER_TASK, SLURM_STEP_*, ...). A segment's job gets its own from its own options;
// where those set none, an outer job's would reach it through --export=ALL and srun in the
// segment would read some as its input. SLURM_CONF and the user's settings (SLURM_TIME_FORMAT,
// SLURM_MPI_TYPE, ...) are not.
bool is_job_scoped_variable(std::string_view entry);

// `environment` without the job-scoped variables when it is a job's (it holds SLURM_JOB_ID: a
// `campaign add` run inside a job); their names go to `dropped`, in order.
std::vector<std::string> without_outer_job_variables(std::vector<std::string> environment,
                                                     std::vector<std::string>& dropped);

}  // namespace mirage::daemon

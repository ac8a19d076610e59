#pragma once
// What of the environment of `campaign add` a segment's job gets. The environment is stored with
// the campaign; sbatch runs with it (less sbatch's input variables) and the daemon's MIRAGE_*
// variables, and its --export says which of them the job sees.
#include <string>
#include <string_view>
#include <vector>

namespace mirage::daemon {

// Whether `entry` ("NAME=value") is one of the variables the daemon gives each segment
// (MIRAGE_CAMPAIGN_ID, MIRAGE_SEGMENT, ...): set for every submission, over a value of the
// user's own.
bool is_daemon_variable(std::string_view entry);

// Whether `entry` is one Slurm sets inside a job or a step to describe it (sbatch.1's and
// srun.1's OUTPUT ENVIRONMENT VARIABLES: SLURM_JOB_ID, SLURM_NTASKS, SLURM_MEM_PER_NODE,
// SLURM_CPUS_PER_TASK, SLURM_STEP_*, ...). A segment's job gets its own from its own options;
// where those set none, an outer job's would reach it through --export=ALL and srun in the
// segment would read some as its input. So are the job's training rendezvous (MASTER_ADDR,
// MASTER_PORT, MIRAGE_RANK, MIRAGE_WORLD_SIZE, MIRAGE_LOCAL_RANK, MIRAGE_RUN_ID). SLURM_CONF
// and the user's settings (SLURM_TIME_FORMAT, SLURM_MPI_TYPE, ...) are not.
bool is_job_scoped_variable(std::string_view entry);

// The job `environment` is a job's (its SLURM_JOB_ID: a `campaign add` run inside a job), or "".
std::string outer_job_of(const std::vector<std::string>& environment);

// `environment` without the job-scoped variables when it is a job's (outer_job_of); their names
// go to `dropped`, in order.
std::vector<std::string> without_outer_job_variables(std::vector<std::string> environment,
                                                     std::vector<std::string>& dropped);

// sbatch's --export value for a segment: `asked` (the command line's or the script's --export
// value; empty: none, sbatch's default ALL) with the MIRAGE_* names of `environment` added, so
// that the job gets them whatever the list. A user's MIRAGE_* name that `asked` already gives
// (NAME or NAME=value) is not added again: sbatch applies the list in order, and the bare name
// would replace the script's value with the shell's. The daemon's own names are always added,
// last. NONE and NIL take no names beside them (sbatch.1 of 22.05 and 24.11): a list of names
// alone is NONE with them (neither passes the rest, both load the user's login environment on
// the node; NIL would not load it).
std::string export_value(std::string_view asked, const std::vector<std::string>& environment);

}  // namespace mirage::daemon

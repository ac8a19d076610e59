#pragma once
// The file a batch job's standard output goes to, as slurmd names it: sbatch's filename pattern
// (--output, default slurm-%j.out) expanded and made absolute against the job's working
// directory. slurmd creates it when the batch script starts, so it tells a job that ran from one
// that never started once Slurm has forgotten the job.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mirage/core/Job.h"

namespace mirage::daemon {

struct OutputNames {
  JobId job = 0;
  std::optional<std::uint64_t> array_job;   // an array's job id, for %A
  std::optional<std::uint64_t> array_task;  // its task id, for %a
  std::string name;                         // %x
  std::string user;                         // %u
  std::string work_dir;                     // where a relative name lives
};

// Empty when the pattern names what is known only as it runs (the node, step or task), or is
// /dev/null, or is relative with no working directory.
std::string expand_output_pattern(std::string_view pattern, const OutputNames& names);

// Whether a file named by `pattern` is one job's alone (it holds %j, or %A outside an array): only
// such a file can say that job started. `train.log`, or %x shared by every segment, is written by
// the predecessor while its successor waits.
bool names_one_job(std::string_view pattern, bool array);

// The output pattern and working directory a submission of `script` with the sbatch `options`
// (which override its #SBATCH lines) gets: --output / -o and --chdir / -D; the defaults are
// "slurm-%j.out" and `submit_dir`.
struct OutputPlace {
  std::string pattern;
  std::string work_dir;
};
OutputPlace output_place(std::string_view script, const std::vector<std::string>& options,
                         const std::string& submit_dir);

// The user name of `uid`, or empty.
std::string user_name_of(unsigned uid);

}  // namespace mirage::daemon

#pragma once
// Submits a segment by running the cluster's own `sbatch --parsable` (fork/exec, no shell), so
// that every #SBATCH line of the script, the site's cli_filter and job_submit rules and its
// defaults apply exactly as when the user submits by hand. The script goes in on standard input;
// sbatch runs in the campaign's working directory with the campaign's environment. mirage adds
// only its own: the job name, the tag (--comment), the MIRAGE_* environment, and the options from
// `campaign add` (SubmitRequest::options), which override the script's as on sbatch's command
// line; and --ignore-pbs (SubmitRequest::ignore_pbs), so that the script's #PBS and #BSUB lines are
// not applied.
#include <string>
#include <string_view>
#include <vector>

#include "mirage/core/Time.h"
#include "mirage/daemon/slurm/SlurmClient.h"

namespace mirage::daemon {

struct SbatchSettings {
  std::string program;     // the sbatch to run, a path (find_sbatch)
  std::string slurm_conf;  // its SLURM_CONF: the cluster the daemon watches; empty: none set
  Seconds timeout = 2 * kMinute;
};

// The sbatch to run: `configured` when not empty (it must be an executable file), else the first
// "sbatch" on `search_path` (a $PATH value). Throws std::runtime_error saying what was tried.
std::string find_sbatch(const std::string& configured, const std::string& search_path);

// Whether `path` is a regular file we may execute.
bool executable_file(const std::string& path);
// The first executable `program` in the directories of `search_path` (a $PATH value); empty when
// there is none.
std::string find_on_path(const std::string& program, const std::string& search_path);

// Whether the environment entry `entry` ("NAME=value") is one of sbatch's input variables
// (SBATCH_*, SLURM_CLUSTERS and SLURM_HINT, sbatch.1's "INPUT ENVIRONMENT VARIABLES"): they
// override the script's #SBATCH lines, so a shell's would make the job differ from the shape the
// daemon recorded. `campaign add` refuses a shell that sets one; sbatch runs without those of
// campaigns stored before (all but SLURM_HINT, which they keep: their layout stays as it began).
bool is_sbatch_input_variable(std::string_view entry);

// SLURM_UMASK=<umask> as sbatch writes it ("0022"): sbatch gives the job its caller's umask so
// where the environment sets none, and the daemon's is 0077; `campaign add` records the user's.
std::string slurm_umask_entry(unsigned umask);

class SbatchSubmitter {
 public:
  explicit SbatchSubmitter(SbatchSettings settings) : settings_(std::move(settings)) {}

  // Returns the new job's id. Throws SlurmError: transient when the job may or may not exist
  // (a timeout, sbatch killed, the controller not answering, no job id in its output), else a
  // refusal carrying sbatch's own message (or why sbatch could not be run), refused for now
  // when it lasts only a while (a submit limit, a drained partition, no process to spare).
  JobId submit(const SubmitRequest& request) const;

  // sbatch's arguments for `request` (after the program name).
  static std::vector<std::string> arguments(const SubmitRequest& request);

  const SbatchSettings& settings() const { return settings_; }

 private:
  SbatchSettings settings_;
};

}  // namespace mirage::daemon

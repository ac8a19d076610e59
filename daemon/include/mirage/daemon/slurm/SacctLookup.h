#pragma once
// What Slurm's accounting (slurmdbd) knows of a job the controller no longer lists, asked through
// the site's own `sacct`, as sbatch is used to submit: the same client the user has, matching the
// site's slurmdbd whatever its release. Used only for a segment that left the queue while mirage
// was not looking (its fate is never concluded from its absence alone), and for a segment about to
// be submitted that may have run while the store did not know (restored from an earlier copy).
#include <map>
#include <string>
#include <string_view>

#include "mirage/core/Time.h"
#include "mirage/daemon/slurm/SlurmClient.h"

namespace mirage::daemon {

struct SacctSettings {
  std::string program;     // the sacct to run (a path); empty: there is none
  std::string slurm_conf;  // its SLURM_CONF; empty: none set
  Seconds timeout = 30;
};

// The sacct beside `sbatch` (the same Slurm client install), else the first on `search_path`;
// empty when there is none.
std::string find_sacct(const std::string& sbatch, const std::string& search_path);

// Runs `sacct -X -n -P -D -j JOB,JOB,...` once and reads every record of each id (without -D
// sacct prints only the newest job of an id, which may be another's). No record (no accounting
// on this cluster, or it does not know the job) is an answer with `why`; sacct timing out or
// slurmdbd not answering throws a transient SlurmError (asked again later).
std::map<JobId, AccountedJob> lookup_accounted_jobs(const SacctSettings& settings,
                                                    const std::vector<JobId>& jobs);

// Runs `sacct -X -n -P -S SINCE -E now --name=NAMES` once for the whole search and reads every
// record with its name and comment. No accounting is an answer with `why`; sacct timing out or
// slurmdbd not answering throws a transient SlurmError.
AccountedJobs search_accounted_jobs(const SacctSettings& settings, const AccountingSearch& search);

// One line of `sacct -X -n -P -o JobIDRaw,UID,State,Submit,Start,End,ExitCode[,JobName,Comment]`
// with times as seconds since the epoch (SLURM_TIME_FORMAT=%s); nullopt, with `why`, when it does
// not parse. The comment, last, is the rest of the line.
std::optional<SlurmJob> parse_sacct_line(std::string_view line, std::string* why);

}  // namespace mirage::daemon

#pragma once
// Whether a segment about to be submitted already ran and ended while the store did not know it
// (the store was restored from a copy older than that submission): the job is gone from the
// queue (slurmctld forgets it MinJobAge after it ends), so only accounting (its tag, or its name
// where the site keeps no comments) or the files its batch script wrote can tell. Pure: the
// search's records and the file system in, the earlier run (or why nothing could tell) out.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mirage/daemon/slurm/SlurmClient.h"

namespace mirage::daemon {

// What tells a segment's earlier runs from the rest, filled in when its submission is decided.
struct EarlierRunQuestion {
  // The campaign's creation, as the earlier of slurmctld's clock and this machine's reads it (an
  // output file's time may follow either): nothing of it ran before.
  Seconds since = 0;
  std::uint32_t user_id = 0;
  // The segment's jobs the store knows of, and those of its other campaigns of the same name:
  // not unseen runs of the segment.
  std::vector<JobId> known_jobs;
  // Where accounting keeps no comment (no tag), a job is the segment's by its name only while no
  // other campaign of the store has that name.
  bool name_is_unique = true;
  // The site's job_submit plugin writes over --comment: a job whose comment is no tag may still
  // be the segment's, by its name.
  bool comments_rewritten = false;
  // The segment's output file, every name but the job id's expanded ("%j" left for it), where
  // the file names this segment alone (%x: the job name carries the segment); empty otherwise.
  std::string output_pattern;
};

// A run of the segment the store did not know of.
struct EarlierRun {
  JobId job = 0;  // 0: not known (an output file whose name holds no job id)
  int attempt = 0;
  std::optional<SlurmJob> accounted;  // accounting's record; nullopt: found by its output file
  std::string output_file;
  Seconds written = kUnknownTime;  // when the output file was last written
  std::string evidence;            // how it was found, in words
};

struct EarlierRunAnswer {
  std::optional<EarlierRun> run;
  std::string unchecked;  // why neither source could tell; empty when they could
};

// The segment of `tag` (to be submitted as `name`): its latest run since `q.since` of attempt
// `tag.attempt` or later in `accounted` (nullopt: accounting could not say, `why`), else, only
// then, in its output files.
EarlierRunAnswer find_earlier_run(const EarlierRunQuestion& q, const JobTag& tag,
                                  const std::string& name,
                                  const std::optional<std::vector<SlurmJob>>& accounted,
                                  const std::string& why);

// The output pattern for EarlierRunQuestion: `expand` writes a path for a job id and a job name
// (OutputFile.h); empty when the file does not name the segment (the same for two names).
std::string segment_output_pattern(
    const std::string& name, const std::function<std::string(JobId, const std::string&)>& expand);

}  // namespace mirage::daemon

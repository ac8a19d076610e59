#pragma once
// What each segment of a campaign asks Slurm for: the `campaign add` flags over the script's
// #SBATCH lines, as sbatch's command line overrides the script. The flags become sbatch options
// (the script's own directives reach Slurm through sbatch untouched); the resolved values are
// what the daemon expects until Slurm's record of the first job says what was granted.
#include <optional>
#include <string>
#include <vector>

#include "mirage/core/Time.h"
#include "mirage/daemon/slurm/BatchScriptDirectives.h"

namespace mirage::daemon {

// The flags `campaign add` was given; unset: the script (or the site) decides.
struct ShapeFlags {
  std::optional<int> nodes;
  std::optional<int> gpus_per_node;
  std::optional<Seconds> time_limit;
  std::optional<std::string> partition;
  std::optional<std::string> account;
  std::optional<std::string> qos;
};

struct SegmentShape {
  int nodes = 1;
  int gpus_per_node = 0;
  Seconds time_limit = 0;  // 0: the partition's default, known once Slurm grants it
  std::string partition;   // empty: the site's default
  std::string account;
  std::string qos;
  std::vector<std::string> sbatch_options;  // the flags, as sbatch options
  // One line per flag that contradicts a directive, saying which wins (the flag).
  std::vector<std::string> notes;
};

// `script_name` names the script in the notes.
SegmentShape resolve_segment_shape(const ShapeFlags& flags, const BatchScriptDirectives& script,
                                   const std::string& script_name);

// The sbatch options that give a campaign stored before submissions went through sbatch the
// shape it was always submitted with (its flags were all required then).
std::vector<std::string> options_of_earlier_campaign(int nodes, int gpus_per_node,
                                                     Seconds time_limit,
                                                     const std::string& partition,
                                                     const std::string& account);

// Whether `options` set the sbatch option `name` ("partition": --partition=...).
bool sets_option(const std::vector<std::string>& options, const std::string& name);

}  // namespace mirage::daemon

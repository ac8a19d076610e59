#pragma once
// The shape of each segment of a chain, in sbatch's words (--nodes, --time), for the commands
// that model one: `eval`, `train` and `trace waits`. There the machine's size is --cluster-nodes.
#include <CLI/CLI.hpp>
#include <string>

#include "mirage/core/Time.h"

namespace mirage::cli {

struct SegmentFlags {
  int nodes = 1;
  int gpus_per_node = 0;
  std::string time = "2d";  // sbatch --time's forms or 4h-style; both run and limit

  void add_to(CLI::App& cmd);
  // Where --nodes was given, over half the machine, and --cluster-nodes was not: a line on stderr
  // that --nodes is the segment's size now (it was the machine's).
  void note_old_meaning(int machine_nodes) const;
  // --time in seconds; InputError naming --time if it is not a duration.
  Seconds time_limit() const;

 private:
  const CLI::Option* nodes_option_ = nullptr;
  const CLI::App* command_ = nullptr;
};

}  // namespace mirage::cli

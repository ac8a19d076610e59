#include "SegmentFlags.h"

#include <fmt/format.h>

#include "RenamedFlags.h"
#include "TimeFlags.h"
#include "Validators.h"

namespace mirage::cli {

void SegmentFlags::add_to(CLI::App& cmd) {
  nodes_option_ = cmd.add_option("--nodes", nodes, "Nodes of each segment, as sbatch --nodes")
                      ->check(whole_number(1))
                      ->capture_default_str();
  command_ = &cmd;
  add_renamed_option(cmd, "--chain-nodes", "--nodes", nodes)->check(whole_number(1));
  cmd.add_option("--chain-gpus-per-node", gpus_per_node,
                 "GPUs per node of each segment (0: whole nodes)")
      ->check(whole_number(0))
      ->capture_default_str();
  cmd.add_option("--time", time,
                 "Each segment's time limit and run time, as sbatch --time (2-00:00:00, "
                 "48:00:00, 2880 minutes) or 4h, 2d")
      ->check(positive_duration())
      ->capture_default_str();
  add_renamed_option(cmd, "--limit", "--time", time)->check(whole_number(1));  // minutes
}

void SegmentFlags::note_old_meaning(int machine_nodes) const {
  // Until 2026-11 --nodes was the machine's size here: an old invocation that gave the machine
  // (a segment of over half of it is rare) is told, not silently read anew; others are not.
  if (!nodes_option_ || nodes_option_->count() == 0 || 2 * nodes <= machine_nodes) return;
  const CLI::Option* machine = command_->get_option_no_throw("--cluster-nodes");
  if (!machine || machine->count() > 0) return;
  fmt::print(stderr,
             "mirage: --nodes {} is the segment's size now, over half the machine's {} nodes; the "
             "machine's size is --cluster-nodes\n",
             nodes, machine_nodes);
}

Seconds SegmentFlags::time_limit() const {
  return parse_duration_flag(time, "--time");
}

}  // namespace mirage::cli

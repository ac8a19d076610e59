#include "SegmentFlags.h"

#include <fmt/format.h>

#include "RenamedFlags.h"
#include "TimeFlags.h"
#include "Validators.h"

namespace mirage::cli {

void SegmentFlags::add_to(CLI::App& cmd) {
  // Until now --nodes was the machine's size here: an old invocation is told, not silently
  // read anew.
  cmd.add_option("--nodes", nodes, "Nodes of each segment, as sbatch --nodes")
      ->check(whole_number(1))
      ->capture_default_str()
      ->each([&cmd](const std::string&) {
        const CLI::Option* machine = cmd.get_option_no_throw("--cluster-nodes");
        if (machine && machine->count() == 0)
          fmt::print(stderr,
                     "mirage: --nodes is the segment's size now; the machine's is "
                     "--cluster-nodes\n");
      });
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

Seconds SegmentFlags::time_limit() const {
  return parse_duration_flag(time, "--time");
}

}  // namespace mirage::cli

#pragma once
// `mirage trace export`: the jobs the daemon saw start and end on the user's cluster, written as
// an SWF trace that `mirage simulate` / `mirage train` read back, for retraining on the user's
// own cluster.
#include <ostream>
#include <string>
#include <vector>

#include "mirage/daemon/slurm/SlurmClient.h"

namespace mirage::daemon {
class CampaignStore;
}

namespace mirage::daemon {

struct TraceExportOptions {
  std::string partition;  // only this partition's jobs (empty: all)
  int machine_nodes = 0;  // written as MaxNodes (0: the largest job)
  int gpus_per_node = 0;  // processors per node in MaxProcs and in each job's size (0: nodes)
  std::string computer = "exported by the mirage daemon";
};

// Writes the finished jobs; returns how many rows were written.
std::size_t export_swf(const std::vector<SlurmJob>& jobs, const TraceExportOptions& options,
                       std::ostream& out);

// What a store observed, as an SWF trace of `partition` (empty: the one the daemon watches)
// written to `path`; returns the rows written and the partition. The daemon does it for
// `mirage trace export` while it holds the store; without a daemon the command does. A `path`
// that is the store or a file SQLite or its lock keep beside it (by device and inode: through
// `..` or a link too) is refused, naming both, before anything is written.
struct StoreExport {
  std::size_t jobs = 0;
  std::string partition;  // empty: all partitions
};
StoreExport export_store(const CampaignStore& store, const std::string& partition,
                         const std::string& path);

}  // namespace mirage::daemon

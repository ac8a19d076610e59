#pragma once
// What one pass over the campaigns works with, and the pass itself: the store and the
// controller, the queue snapshots with their 10-minute history (kept in the store, so a restart
// or the next `mirage tick` does not start blind), and the jobs of the latest dump. The daemon
// makes a pass on every poll; `mirage tick` makes one and exits. Performing the actions is the
// caller's (the daemon on its Slurm thread, a tick at once).
#include <filesystem>
#include <memory>
#include <unordered_map>
#include <vector>

#include "mirage/core/FeatureEncoder.h"
#include "mirage/daemon/campaigns/CampaignController.h"
#include "mirage/daemon/service/DaemonConfig.h"
#include "mirage/daemon/slurm/Clock.h"
#include "mirage/daemon/slurm/SnapshotBuilder.h"
#include "mirage/daemon/store/CampaignStore.h"

namespace mirage::daemon {

class CampaignPass {
 public:
  // Opens (creating) the store, 0600 in a private directory, and loads the campaigns and the
  // kept history.
  CampaignPass(const DaemonConfig& config, const Clock& clock);

  // The watched partition (config's, else the default) from a cluster load; kept in the store.
  void apply_partitions(const std::vector<PartitionInfo>& partitions);
  // The full job list of a new dump.
  void set_jobs(std::vector<SlurmJob> jobs);
  bool have_jobs() const { return have_jobs_; }
  // Snapshots the queue (into the history on the 10-minute grid), records changed jobs when
  // `changed`, and returns what the controller decides on the dump taken at `dump_time`.
  Actions decide(Seconds dump_time, bool changed);

  CampaignStore& store() { return *store_; }
  CampaignController& controller() { return *controller_; }
  const CampaignController& controller() const { return *controller_; }
  const QueueSnapshot& last_queue() const { return last_queue_; }
  const std::vector<SlurmJob>& jobs() const { return jobs_; }
  const std::string& partition() const { return snapshots_.partition(); }
  int machine_nodes() const { return machine_nodes_; }
  int machine_gpus() const { return machine_gpus_; }
  int history_size() const;

 private:
  void restore();
  void record_observed();

  struct Seen {
    SlurmJobState state;
    Seconds start, end;
    bool operator==(const Seen&) const = default;
  };

  const Clock& clock_;
  std::string configured_partition_;
  std::unique_ptr<CampaignStore> store_;
  std::unique_ptr<CampaignController> controller_;
  bool observation_unsaved_ = false;  // said once until the store takes them again
  SnapshotBuilder snapshots_;
  ObservationBuilder history_;
  QueueSnapshot last_queue_;
  std::vector<SlurmJob> jobs_;
  std::unordered_map<JobId, Seen> seen_;
  bool have_jobs_ = false;
  Seconds next_snapshot_ = 0;
  int machine_nodes_ = 0;
  int machine_gpus_ = 0;
};

// Makes `dir` (and its parents) when missing, 0700: the store, its WAL and the logs are the
// user's alone.
void make_private_dir(const std::filesystem::path& dir);

}  // namespace mirage::daemon

#pragma once
// Live job list -> QueueSnapshot, the same type the simulator produces, for one partition.
// It also keeps the waits of the last QueueSnapshot::kRecentStarts jobs seen starting (what the
// `average` baseline and the encoder's recent mean wait use) and how the last
// QueueSnapshot::kRecentEnds jobs seen ending ran against their limits (the forecast's recent
// runtimes), each with a watermark so that a restart neither forgets them nor counts a job twice.
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "mirage/core/QueueSnapshot.h"
#include "mirage/daemon/slurm/SlurmClient.h"

namespace mirage::daemon {

class SnapshotBuilder {
 public:
  explicit SnapshotBuilder(std::string partition = {}) : partition_(std::move(partition)) {}

  const std::string& partition() const { return partition_; }
  void set_partition(std::string partition) { partition_ = std::move(partition); }
  void set_machine(int total_nodes, int gpus_per_node) {
    total_nodes_ = total_nodes;
    gpus_per_node_ = gpus_per_node;
  }
  void set_priority(const PriorityParameters& priority) { priority_ = priority; }
  // Nodes of the partition down, drained or reserved for others, as the latest node states say.
  void set_unavailable_nodes(int nodes) { unavailable_nodes_ = nodes; }
  // The user whose campaigns the snapshots serve (the daemon's): their running jobs are marked
  // as theirs, counted against their limits.
  void set_owner(std::uint32_t uid) { owner_ = uid; }
  void set_user_limits(const UserLimits& limits,
                       std::vector<std::pair<std::string, UserLimits>> by_qos = {}) {
    user_limits_ = limits;
    limits_by_qos_ = std::move(by_qos);
  }
  const UserLimits& user_limits() const { return user_limits_; }
  void set_reservations(std::vector<NodeReservation> r) { reservations_ = std::move(r); }
  // All of the above that a partition's load tells: its name, size, weights, unavailable nodes,
  // the user's limits and the reservations to come.
  void use_partition(const PartitionInfo& p) {
    set_partition(p.name);
    set_machine(p.total_nodes, p.gpus_per_node);
    set_priority(p.priority);
    set_unavailable_nodes(p.unavailable_nodes);
    set_user_limits(p.user_limits, p.limits_by_qos);
    set_reservations(p.reservations);
  }
  const PriorityParameters& priority() const { return priority_; }
  bool in_partition(const SlurmJob& job) const;

  // Notes the jobs seen starting or ending since the last call; returns true if any was.
  bool observe(const std::vector<SlurmJob>& jobs);
  // The queue of the partition at `now`.
  QueueSnapshot build(const std::vector<SlurmJob>& jobs, Seconds now) const;

  double recent_mean_wait() const;
  int recent_count() const { return static_cast<int>(recent_.size()); }
  // Runtime / limit of the recently ended jobs, oldest first.
  std::vector<float> recent_runtime_shares() const;

  // The recent starts and ends as JSON text for the store, and back.
  std::string save_recent() const;
  void restore_recent(const std::string& text);

 private:
  struct RecentStart {
    JobId id;
    Seconds start;
    Seconds wait;
  };
  struct RecentEnd {
    JobId id;
    Seconds end;
    float share;  // runtime / time limit, at most 1
  };
  bool observe_starts(const std::vector<SlurmJob>& jobs);
  bool observe_ends(const std::vector<SlurmJob>& jobs);

  std::string partition_;
  int total_nodes_ = 0;
  int gpus_per_node_ = 0;
  PriorityParameters priority_ = PriorityParameters::unweighted();
  int unavailable_nodes_ = 0;
  std::optional<std::uint32_t> owner_;
  UserLimits user_limits_;
  std::vector<std::pair<std::string, UserLimits>> limits_by_qos_;
  std::vector<NodeReservation> reservations_;
  std::deque<RecentStart> recent_;
  Seconds watermark_ = kUnknownTime;  // latest start time counted
  Seconds wait_sum_ = 0;
  std::deque<RecentEnd> ended_;
  Seconds end_watermark_ = kUnknownTime;  // latest end time counted
};

}  // namespace mirage::daemon

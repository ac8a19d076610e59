#pragma once
// What a policy sees at a decision: the encoded recent history of the queue, the latest raw
// snapshot, and the campaign's own state. Built the same way live and in simulation.
#include <string>
#include <vector>

#include "mirage/core/QueueSnapshot.h"

namespace mirage {

// The campaign as the policy may know it at the decision instant.
struct CampaignView {
  Seconds predecessor_limit = 0;
  int predecessor_nodes = 0;
  int predecessor_gpus_per_node = 0;
  Seconds predecessor_waited = 0;  // how long it waited (or has waited so far, if pending)
  Seconds predecessor_run = 0;     // how long it has run so far (0 while pending)
  bool predecessor_running = false;
  int successor_nodes = 0;
  int successor_gpus_per_node = 0;
  Seconds successor_limit = 0;
  // Slurm's own estimate of the successor's wait were it submitted now (its will-run test, or
  // the simulator's plan of the same); -1 where none was asked or none given. Filled only for
  // policies that read it (Policy::reads_slurm_estimate).
  Seconds slurm_estimated_wait = -1;
  // The priority the running predecessor started with, as the scheduler reports it: with the
  // age it had then taken out, what the successor would get (same user, account, QOS and
  // size). kUnknownPriority where not reported.
  double predecessor_priority = kUnknownPriority;
  // The QOS the successor is submitted under ("": the user's default): whose limits hold it.
  std::string qos;

  Seconds predecessor_remaining() const {
    return predecessor_running ? predecessor_limit - predecessor_run : predecessor_limit;
  }

  // A chain of equal segments (`nodes` x `gpus_per_node`, `limit` each) whose predecessor runs:
  // what the daemon and an evaluation episode alike show a policy at a decision.
  static CampaignView running_chain(int nodes, int gpus_per_node, Seconds limit, Seconds waited,
                                    Seconds run) {
    CampaignView v;
    v.predecessor_limit = v.successor_limit = limit;
    v.predecessor_nodes = v.successor_nodes = nodes;
    v.predecessor_gpus_per_node = v.successor_gpus_per_node = gpus_per_node;
    v.predecessor_waited = waited;
    v.predecessor_run = run;
    v.predecessor_running = true;
    return v;
  }
};

struct Observation {
  Seconds time = 0;
  int encoder_version = 0;
  CampaignView campaign;
  QueueSnapshot latest;       // the queue now
  std::vector<float> window;  // FeatureEncoder::kWindow snapshots x kPerSnapshot, oldest first
  int window_filled = 0;      // how many of the window's snapshots are real (the rest are zero)
};

}  // namespace mirage

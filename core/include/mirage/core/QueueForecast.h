#pragma once
// When would a job submitted now start? A plan of the queue as Slurm's backfill plans it, from
// what a QueueSnapshot says and nothing else, so that live and simulated decisions see the same:
//   - running jobs hold their resources until their time limits (true runtimes are unknown), on
//     the nodes that are up and not reserved for others (reservations to come hold theirs over
//     their windows);
//   - the pending jobs that can run (not held, not waiting on a dependency, a begin time or their
//     owner's limits: those are set aside, as Slurm's scheduler passes them over) are ranked by
//     the priority the scheduler reports for each (fair share, QOS and partition included), plus
//     what the age factor adds from now on; where no priority is reported, by the snapshot's
//     weights (age since eligible, job size). Those that outrank the new job are placed in that
//     order, each at the earliest time it fits for its whole limit (conservative backfilling),
//     the whole queue over at most kHorizon; the jobs it outranks are planned after it, so they
//     cannot delay it;
//   - then the new job, at the priority its owner's running job tells (ForecastJob::priority),
//     and no earlier than its owner's limits let it start.
// Limits overstate runtimes, so the figure is a feature for the policies to weigh, not a
// promise. A RuntimeGuess plans the other jobs as
// running only a share of what their limits leave (1: to their limits, as Slurm plans; 0.5: the
// expectation were runtimes spread evenly up to the limits), or as the recently ended jobs ran
// (a running job as those that outlived its share of its limit; a pending one as all of them),
// a sharper guess where jobs end early, still from nothing but the snapshot.
#include "mirage/core/Observation.h"
#include "mirage/core/QueueSnapshot.h"

namespace mirage {

struct RuntimeGuess {
  double share = 1.0;   // of what each job's limit leaves
  bool recent = false;  // instead: as QueueSnapshot::recent_runtime_shares say (the share of
                        // the limits where fewer than kMinRecentEnds are known)
  static constexpr int kMinRecentEnds = 20;
  static constexpr RuntimeGuess limits() { return {}; }
  static constexpr RuntimeGuess share_of_limits(double share) { return {share, false}; }
  static constexpr RuntimeGuess recent_ends() { return {1.0, true}; }
};

// The job to plan: its shape, its priority on submission (age 0) where its owner's running job
// tells it (kUnknownPriority: from the snapshot's weights, without fair share), and how long its
// owner's limits would hold it once submitted (it pends meanwhile, accruing age).
struct ForecastJob {
  int nodes = 1;
  int gpus_per_node = 0;  // 0: whole nodes
  Seconds time_limit = 0;
  double priority = kUnknownPriority;
  Seconds held_for = 0;
  Seconds accrued = 0;  // a job already pending: the age it has accrued (its priority grows
                        // from there as the others' do)
};

struct PlannedStart {
  Seconds wait = 0;          // planned start - snapshot time (kHorizon when it does not fit)
  Seconds wait_running = 0;  // the same with the pending jobs left out: when the running jobs
                             // alone free enough (a lower bound; the gap to `wait` is the queue)
  Seconds wait_after_delay = 0;  // were it submitted `delay` from now: its start - (now +
                                 // delay). A window that closes before then (a big job's
                                 // reservation drawing near, or small jobs it would outrank
                                 // taking the nodes that free up meanwhile) shows here, not in
                                 // `wait`
  bool held_by_limit = false;    // its owner's limits would hold it (ForecastJob::held_for > 0)
};

class QueueForecast {
 public:
  static constexpr Seconds kHorizon = 14 * kDay;

  static PlannedStart plan(const QueueSnapshot& queue, const ForecastJob& job,
                           RuntimeGuess runtimes = RuntimeGuess::limits(), Seconds delay = 0);

  // A job of `nodes` nodes with `gpus_per_node` GPUs each (0: whole nodes) and `time_limit`.
  // `delay`: when the later submission of wait_after_delay would be made (no job arriving
  // meanwhile; every pending job that fits before then starts before it, and the pending jobs
  // that outrank it then, having aged, go ahead of it).
  static PlannedStart plan(const QueueSnapshot& queue, int nodes, int gpus_per_node,
                           Seconds time_limit, RuntimeGuess runtimes = RuntimeGuess::limits(),
                           Seconds delay = 0) {
    return plan(queue, ForecastJob{nodes, gpus_per_node, time_limit}, runtimes, delay);
  }
  // The campaign's successor, in the queue the observation saw: at the priority its predecessor
  // tells, held while the user's running work (the predecessor among it) leaves no room under
  // the user's limits; the later submission is at the predecessor's end.
  static PlannedStart plan_successor(const Observation& obs,
                                     RuntimeGuess runtimes = RuntimeGuess::limits());
  // The successor as plan_successor plans it: its priority, and how long the user's limits hold it.
  static ForecastJob successor(const Observation& obs);
};

}  // namespace mirage

#pragma once
// A whole campaign rather than one boundary: the work it must do, in segments of the chain, and
// the account of what that cost. Users pay for a campaign in two units: how much later than its
// work alone it finishes, and how many GPU-hours their allocation is charged for it.
//
//   - A segment that reaches its time limit saves its work at the end (a chained job must: Slurm's
//     --signal before the limit). One stopped early by a hand-off keeps what it had saved at its
//     last periodic checkpoint (every `checkpoint_every` of progress; 0: the stop itself saves),
//     and the rest is done again.
//   - Every segment after the first spends `restart_overhead` loading the checkpoint before it
//     makes progress, and makes none before its predecessor has stopped and saved: concurrent
//     overlap is charged twice and buys nothing.
//   - The last segment ends when the work is done.
//   - A successor waits as long as it takes: a campaign is cut off only by the end of the log,
//     and one that is does not finish (it is counted, not compared).
#include <optional>

#include "mirage/core/Time.h"

namespace mirage {

struct ChainSpec;

struct CampaignWork {
  Seconds work = 0;  // the compute the campaign needs; 0: boundaries only, no campaign account
  Seconds checkpoint_every = 30 * kMinute;
  Seconds restart_overhead = 10 * kMinute;
  bool active() const { return work > 0; }
  // Segments a campaign needs when every segment after the first loses only its restart.
  int segments_needed(const ChainSpec& chain) const;
};

// What one campaign cost, from its first submission on (seconds of a segment's whole allocation;
// times its GPUs give GPU-hours).
struct CampaignOutcome {
  bool complete = false;
  Seconds finish = 0;  // when the work was done
  int segments = 0;
  Seconds charged = 0;       // every segment's time holding its nodes
  Seconds interruption = 0;  // between segments, nothing running
  Seconds overlap = 0;       // two segments holding nodes at once
  Seconds restart = 0;       // restart overheads
  Seconds redo = 0;          // work lost at a hand-off since the last checkpoint, done again
};

// The campaign's account as its segments start and stop. run_episode keeps one per episode.
class CampaignLedger {
 public:
  CampaignLedger(const CampaignWork& work, Seconds runtime) : work_(work), runtime_(runtime) {}
  // A segment started at `start`; `predecessor_stop` is when the previous one stopped (none for
  // the first). Returns the instant it will finish the campaign's work, if it will.
  std::optional<Seconds> started(Seconds start, std::optional<Seconds> predecessor_stop);
  // The running segment stopped at `stop`: at its natural end, or `cut` by a hand-off.
  void stopped(Seconds stop, bool cut);
  // The running segment finished the work at `at` (what started() returned).
  void finished(Seconds at);
  void add_boundary(Seconds interruption, Seconds overlap);
  const CampaignOutcome& outcome() const { return out_; }

 private:
  CampaignWork work_;
  Seconds runtime_;
  Seconds done_ = 0;  // work saved
  Seconds start_ = 0, useful_from_ = 0;
  CampaignOutcome out_;
};

}  // namespace mirage

#pragma once
// Where the episodes of a window of a trace start: the simulator state and the observed history
// at each sample time. Shared by evaluation and by training-data probes.
#include <memory>
#include <optional>
#include <vector>

#include "mirage/agents/Episode.h"
#include "mirage/traces/Trace.h"

namespace mirage {

enum class EpisodeStartMode {
  kForkReplay,  // fork a full replay of the trace at the sample time: queues carry over
  kPeerWarmup,  // Mirage's own protocol: empty cluster, jobs of [t, t+5 d], predecessor at t+2 d
};

class EpisodeStarts {
 public:
  // Jobs larger than `cluster` are left out (a real log has a few).
  EpisodeStarts(const Trace& trace, const ClusterSpec& cluster, const EpisodeConfig& episode,
                EpisodeStartMode mode);

  // Sample times from, from + every, ... < to whose episodes stay inside the trace; the others
  // (they would need data past the end of the log) are counted in *dropped.
  std::vector<Seconds> sample_times(Seconds from, Seconds to, Seconds every,
                                    std::size_t* dropped) const;

  // The start state at `t`. In fork mode calls must come in increasing t: the base replay only
  // moves forward.
  EpisodeStart at(Seconds t);
  // For deciders none of which reads Observation::window: the starts carry none, and of the
  // snapshots between samples only the last before each lists the queue's jobs (a decision
  // reads the snapshots its episode takes; of the start's, their count alone).
  void drop_window();

  Seconds trace_end() const { return jobs_->empty() ? 0 : jobs_->back().submit; }
  // The replay's index of the trace's job `trace_index`; none when it was left out.
  std::optional<SimJobIndex> replayed(std::size_t trace_index) const;

  static constexpr Seconds kPeerSlice = 5 * kDay;
  static constexpr Seconds kPeerWarmup = 2 * kDay;

 private:
  ClusterSpec cluster_;
  EpisodeConfig episode_;
  EpisodeStartMode mode_;
  std::shared_ptr<const std::vector<SimJobSpec>> jobs_;
  std::vector<std::size_t> kept_;  // the trace indices of jobs_, in order
  std::optional<Simulator> base_;
  ObservationBuilder history_;
  bool window_read_ = true;
  Seconds next_snapshot_ = 0;
};

}  // namespace mirage

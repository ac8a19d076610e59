#pragma once
// What the wait model tests share: the synthetic fit window their hand-made models claim.
#include "mirage/agents/WaitModel.h"

namespace mirage::test {

inline constexpr Seconds kWaitFitStart = 1'700'006'400;  // a midnight

// A model "fitted" on 500 jobs of a 16-node machine over the 30 days from kWaitFitStart.
inline WaitModelInfo synthetic_wait_model_info() {
  WaitModelInfo i;
  i.trace = "synthetic";
  i.from = kWaitFitStart;
  i.to = kWaitFitStart + 30 * kDay;
  i.jobs = 500;
  i.machine_nodes = 16;
  return i;
}

// The 16-node machine the synthetic logs run on, its queue unweighted.
inline ClusterSpec machine16() {
  ClusterSpec c;
  c.nodes = 16;
  c.priority = PriorityParameters::unweighted();
  return c;
}

}  // namespace mirage::test

#pragma once
// The orders the simulator's heaps keep, and the rounding of instants to the scheduler's
// resolution: shared by the event loop and the scheduling passes.
#include <utility>

#include "mirage/core/Time.h"
#include "mirage/simulator/Simulator.h"

namespace mirage::simulator_order {

inline Seconds round_up(Seconds t, Seconds step) {
  if (step <= 1) return t;
  const Seconds r = t % step;
  return r == 0 ? t : t + (step - r);
}

// Min-heap on actual end time; ties by job index for determinism.
struct LaterEnd {
  template <class R>
  bool operator()(const R& a, const R& b) const {
    return a.end != b.end ? a.end > b.end : a.job > b.job;
  }
};

struct LaterBegin {
  bool operator()(const std::pair<Seconds, SimJobIndex>& a,
                  const std::pair<Seconds, SimJobIndex>& b) const {
    return a > b;
  }
};

}  // namespace mirage::simulator_order

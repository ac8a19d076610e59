#pragma once
// The backfill scheduler's plan: free resources over future time as a step function.
//
// One representation serves both allocation modes. In GPU-granular mode each "slot" is a node
// and its value is the node's free GPUs; a job needs `count` slots with at least `units` free.
// In whole-node mode nodes are interchangeable, so the profile holds a single slot whose value
// is the number of free nodes, and a job needs that one slot with `units` = its node count.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "mirage/core/Time.h"

namespace mirage {

struct ResourceRequest {
  int count = 1;  // slots needed
  int units = 1;  // free units needed in each slot
};

struct Placement {
  Seconds start = 0;
  std::vector<std::uint16_t> slots;  // which slots (GPU mode: node indices)
};

class AvailabilityProfile {
 public:
  // All `slots` have `capacity` units free from `now` on.
  AvailabilityProfile(Seconds now, int slots, int capacity);
  // As if made anew so, keeping the memory it holds (a scheduler plans thousands of passes).
  void reset(Seconds now, int slots, int capacity);

  // Marks `units` of `slot` as in use from now until `end`.
  void occupy_until(int slot, int units, Seconds end);

  struct Holding {
    int slot = 0;
    int units = 0;
    Seconds end = 0;
  };
  // The same as occupy_until for each holding, on a profile nothing has touched yet, in one sort
  // instead of a split and a pass over the earlier segments per holding (a backfill pass plans
  // every running job, the queue forecast every running job of a snapshot).
  // `holdings` is reordered.
  void occupy_all(std::vector<Holding>& holdings);
  // The same for holdings already in order of their ends, every end after now.
  void occupy_sorted(std::span<const Holding> holdings);

  // Earliest start in [max(now, not_before), latest_start] where `request` fits for `duration`,
  // with the slots it would use; nullopt when none.
  std::optional<Placement> earliest_start(
      const ResourceRequest& request, Seconds duration, Seconds latest_start,
      Seconds not_before = std::numeric_limits<Seconds>::min()) const;

  // One slot (whole-node plans): earliest_start's start for `units` of it, with no placement
  // made (a backfill pass asks this of every job it tests).
  std::optional<Seconds> earliest_start_pooled(
      int units, Seconds duration, Seconds latest_start,
      Seconds not_before = std::numeric_limits<Seconds>::min()) const;

  // Takes `units` on each of `placement.slots` over [placement.start, placement.start+duration).
  void reserve(const Placement& placement, int units, Seconds duration);
  // One slot: the same on it. Returns the first segment it changed (the segments before it kept
  // their places and figures).
  std::size_t reserve_pooled(Seconds start, int units, Seconds duration);

  // One slot (whole-node plans): in `out`, the least units free from now to the end of each
  // segment (out[i]: over segments 0..i), for least_free_until. Reuses `out`'s memory; where
  // `out` holds this for the profile as it was before changes from segment `from` on, only
  // those are made again.
  void least_free_so_far(std::vector<int>& out, std::size_t from = 0) const;
  // With `so_far` from least_free_so_far on this profile as it is: the least units free over
  // [now, end) (end after now), in a binary search.
  int least_free_until(const std::vector<int>& so_far, Seconds end) const {
    const auto it = std::lower_bound(times_.begin(), times_.end(), end);
    return so_far[static_cast<std::size_t>(it - times_.begin()) - 1];
  }

  // One slot: the units free at `t` (not before now).
  int free_at(Seconds t) const {
    const auto it = std::upper_bound(times_.begin(), times_.end(), t);
    return at(static_cast<std::size_t>(it - times_.begin()) - 1, 0);
  }
  // Units free on `slot` right now.
  int free_now(int slot) const { return free_[slot]; }
  int slots() const { return slots_; }

 private:
  std::size_t split_at(Seconds t);  // ensures a breakpoint at t; returns its index
  int at(std::size_t segment, int slot) const { return free_[segment * slots_ + slot]; }

  int slots_;
  std::vector<Seconds> times_;  // segment i covers [times_[i], times_[i+1]); the last is open
  std::vector<int> free_;       // segments x slots, row-major
};

}  // namespace mirage

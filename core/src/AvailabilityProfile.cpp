#include "mirage/core/AvailabilityProfile.h"

#include <algorithm>
#include <cassert>

namespace mirage {

AvailabilityProfile::AvailabilityProfile(Seconds now, int slots, int capacity)
    : slots_(slots), times_{now}, free_(static_cast<std::size_t>(slots), capacity) {}

std::size_t AvailabilityProfile::split_at(Seconds t) {
  auto it = std::lower_bound(times_.begin(), times_.end(), t);
  std::size_t i = static_cast<std::size_t>(it - times_.begin());
  if (it != times_.end() && *it == t) return i;
  assert(i > 0);  // t is never before the profile's start
  times_.insert(it, t);
  // The new segment starts as a copy of the one that t splits (copied out first: inserting a
  // range of the same vector is not allowed).
  const auto row = free_.begin() + static_cast<std::ptrdiff_t>((i - 1) * slots_);
  std::vector<int> copy(row, row + slots_);
  free_.insert(free_.begin() + static_cast<std::ptrdiff_t>(i * slots_), copy.begin(), copy.end());
  return i;
}

void AvailabilityProfile::occupy_until(int slot, int units, Seconds end) {
  if (end <= times_.front()) return;
  const std::size_t last = split_at(end);
  for (std::size_t s = 0; s < last; ++s) free_[s * slots_ + slot] -= units;
}

std::optional<Placement> AvailabilityProfile::earliest_start(const ResourceRequest& request,
                                                             Seconds duration,
                                                             Seconds latest_start) const {
  const std::size_t n = times_.size();
  if (slots_ == 1) {
    if (request.count > 1) return std::nullopt;
    // One pool (whole-node mode): the first run of segments with enough free units that lasts
    // `duration`, in one pass and without allocating (the queue forecast calls this per job).
    std::size_t start = 0;
    for (std::size_t j = 0; j < n; ++j) {
      if (times_[start] > latest_start) return std::nullopt;
      if (free_[j] < request.units) {
        start = j + 1;
        if (start == n) return std::nullopt;
        continue;
      }
      if (j + 1 == n || times_[j + 1] >= times_[start] + duration)
        return Placement{times_[start], {0}};
    }
    return std::nullopt;
  }
  std::vector<int> low(static_cast<std::size_t>(slots_));
  std::size_t i = 0;
  while (i < n && times_[i] <= latest_start) {
    const Seconds start = times_[i];
    const Seconds end = start + duration;
    // Per-slot minimum over the segments the job would span.
    std::copy(free_.begin() + static_cast<std::ptrdiff_t>(i * slots_),
              free_.begin() + static_cast<std::ptrdiff_t>((i + 1) * slots_), low.begin());
    std::size_t j = i;
    bool ok = true;
    while (true) {
      if (j > i) {
        for (int s = 0; s < slots_; ++s) low[s] = std::min(low[s], at(j, s));
      }
      int usable = 0;
      for (int s = 0; s < slots_; ++s) usable += low[s] >= request.units;
      if (usable < request.count) {
        ok = false;
        break;
      }
      if (j + 1 >= n || times_[j + 1] >= end) break;
      ++j;
    }
    if (ok) {
      Placement p;
      p.start = start;
      for (int s = 0; s < slots_ && static_cast<int>(p.slots.size()) < request.count; ++s)
        if (low[s] >= request.units) p.slots.push_back(static_cast<std::uint16_t>(s));
      return p;
    }
    ++i;
  }
  return std::nullopt;
}

void AvailabilityProfile::reserve(const Placement& placement, int units, Seconds duration) {
  const std::size_t first = split_at(placement.start);
  const std::size_t last = split_at(placement.start + duration);
  for (std::size_t s = first; s < last; ++s)
    for (auto slot : placement.slots) free_[s * slots_ + slot] -= units;
}

}  // namespace mirage

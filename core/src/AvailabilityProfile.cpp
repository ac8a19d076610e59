#include "mirage/core/AvailabilityProfile.h"

#include <algorithm>
#include <cassert>

namespace mirage {

AvailabilityProfile::AvailabilityProfile(Seconds now, int slots, int capacity)
    : slots_(slots), times_{now}, free_(static_cast<std::size_t>(slots), capacity) {}

void AvailabilityProfile::reset(Seconds now, int slots, int capacity) {
  slots_ = slots;
  times_.assign(1, now);
  free_.assign(static_cast<std::size_t>(slots), capacity);
}

std::size_t AvailabilityProfile::split_at(Seconds t) {
  auto it = std::lower_bound(times_.begin(), times_.end(), t);
  std::size_t i = static_cast<std::size_t>(it - times_.begin());
  if (it != times_.end() && *it == t) return i;
  assert(i > 0);  // t is never before the profile's start
  times_.insert(it, t);
  // The new segment starts as a copy of the one that t splits, which the insertion after it
  // leaves where it was.
  const auto at_row = [&](std::size_t k) {
    return free_.begin() + static_cast<std::ptrdiff_t>(k * slots_);
  };
  free_.insert(at_row(i), static_cast<std::size_t>(slots_), 0);
  std::copy(at_row(i - 1), at_row(i), at_row(i));
  return i;
}

void AvailabilityProfile::occupy_all(std::vector<Holding>& holdings) {
  const Seconds now = times_.front();
  std::erase_if(holdings, [now](const Holding& h) { return h.end <= now; });
  std::sort(holdings.begin(), holdings.end(),
            [](const Holding& a, const Holding& b) { return a.end < b.end; });
  occupy_sorted(holdings);
}

void AvailabilityProfile::occupy_sorted(std::span<const Holding> holdings) {
  assert(times_.size() == 1);
  // Segment 0 lacks every holding; each later one gets back what ended at its start.
  if (slots_ == 1) {  // one pool (whole-node mode): a running count, no row to copy
    int held = 0;     // summed apart from the profile: a loop with no store in it
    for (const Holding& h : holdings) held += h.units;
    free_[0] -= held;
    int free = free_[0];
    for (std::size_t k = 0; k < holdings.size();) {
      const Seconds end = holdings[k].end;
      for (; k < holdings.size() && holdings[k].end == end; ++k) free += holdings[k].units;
      times_.push_back(end);
      free_.push_back(free);
    }
    return;
  }
  for (const Holding& h : holdings) free_[h.slot] -= h.units;
  // A segment per distinct end (GPU-granular plans hold one holding per node of each job).
  std::size_t ends = 0;
  for (std::size_t k = 0; k < holdings.size(); ++k)
    ends += k == 0 || holdings[k].end != holdings[k - 1].end;
  times_.reserve(ends + 1);
  free_.reserve((ends + 1) * static_cast<std::size_t>(slots_));
  const auto width = static_cast<std::size_t>(slots_);
  for (std::size_t k = 0; k < holdings.size();) {
    const Seconds end = holdings[k].end;
    times_.push_back(end);
    const std::size_t prev = free_.size() - width;
    free_.resize(free_.size() + width);
    std::copy_n(free_.begin() + static_cast<std::ptrdiff_t>(prev), width,
                free_.begin() + static_cast<std::ptrdiff_t>(prev + width));
    for (; k < holdings.size() && holdings[k].end == end; ++k)
      free_[prev + width + static_cast<std::size_t>(holdings[k].slot)] += holdings[k].units;
  }
}

void AvailabilityProfile::occupy_until(int slot, int units, Seconds end) {
  if (end <= times_.front()) return;
  const std::size_t last = split_at(end);
  for (std::size_t s = 0; s < last; ++s) free_[s * slots_ + slot] -= units;
}

std::optional<Placement> AvailabilityProfile::earliest_start(const ResourceRequest& request,
                                                             Seconds duration, Seconds latest_start,
                                                             Seconds not_before) const {
  if (slots_ == 1) {
    if (request.count > 1) return std::nullopt;
    const auto start = earliest_start_pooled(request.units, duration, latest_start, not_before);
    if (!start) return std::nullopt;
    return Placement{*start, {0}};
  }
  const std::size_t n = times_.size();
  // The segments that end by not_before cannot hold a start; the one it falls in starts there.
  std::size_t first = 0;
  while (first + 1 < n && times_[first + 1] <= not_before) ++first;
  const auto start_of = [&](std::size_t i) { return std::max(times_[i], not_before); };
  std::vector<int> low(static_cast<std::size_t>(slots_));
  std::size_t i = first;
  while (i < n && start_of(i) <= latest_start) {
    const Seconds start = start_of(i);
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

std::optional<Seconds> AvailabilityProfile::earliest_start_pooled(int units, Seconds duration,
                                                                  Seconds latest_start,
                                                                  Seconds not_before) const {
  assert(slots_ == 1);
  const std::size_t n = times_.size();
  // The segments that end by not_before cannot hold a start; the one it falls in starts there.
  std::size_t first = 0;
  while (first + 1 < n && times_[first + 1] <= not_before) ++first;
  const auto start_of = [&](std::size_t i) { return std::max(times_[i], not_before); };
  // The first run of segments with enough free units that lasts `duration`, in one pass and
  // without allocating (the queue forecast calls this per job).
  // The run's start and the end it needs, remade (and held against latest_start) only where a
  // segment without room restarts it.
  Seconds start = start_of(first);
  if (start > latest_start) return std::nullopt;
  Seconds needed_end = start + duration;
  for (std::size_t j = first; j + 1 < n; ++j) {
    if (free_[j] < units) {
      start = start_of(j + 1);
      if (start > latest_start) return std::nullopt;
      needed_end = start + duration;
    } else if (times_[j + 1] >= needed_end) {
      return start;
    }
  }
  // The last segment never ends: the run lasts where it has room.
  if (free_[n - 1] < units) return std::nullopt;
  return start;
}

void AvailabilityProfile::least_free_so_far(std::vector<int>& out, std::size_t from) const {
  assert(slots_ == 1);
  from = std::min({from, out.size(), free_.size()});
  if (out.size() != free_.size()) out.resize(free_.size());  // a call a reservation: mostly none
  int least = from == 0 ? free_[0] : out[from - 1];
  for (std::size_t i = from; i < free_.size(); ++i) out[i] = least = std::min(least, free_[i]);
}

std::size_t AvailabilityProfile::reserve_pooled(Seconds start, int units, Seconds duration) {
  assert(slots_ == 1);
  const std::size_t first = split_at(start);
  const std::size_t last = split_at(start + duration);
  for (std::size_t s = first; s < last; ++s) free_[s] -= units;
  return first;
}

void AvailabilityProfile::reserve(const Placement& placement, int units, Seconds duration) {
  const std::size_t first = split_at(placement.start);
  const std::size_t last = split_at(placement.start + duration);
  for (std::size_t s = first; s < last; ++s)
    for (auto slot : placement.slots) free_[s * slots_ + slot] -= units;
}

}  // namespace mirage

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "mirage/core/AvailabilityProfile.h"
#include "mirage/core/QueueForecast.h"
#include "mirage/simulator/HiddenWork.h"
#include "mirage/simulator/Simulator.h"

namespace mirage {

std::optional<Seconds> Simulator::next_boundary_after(Seconds t) const {
  if (!spec_.boundaries) return std::nullopt;
  return mirage::next_boundary_after(*spec_.boundaries, t);
}

std::optional<Seconds> Simulator::down_until(Seconds t) const {
  if (!spec_.down) return std::nullopt;
  const std::vector<DownWindow>& windows = *spec_.down;
  if (t < down_asked_) return mirage::down_until(windows, t);
  down_asked_ = t;
  while (down_next_ < windows.size() && windows[down_next_].to <= t) ++down_next_;
  // The windows do not overlap: the first that ends after t is the only one that can hold it.
  if (down_next_ < windows.size() && windows[down_next_].from <= t) return windows[down_next_].to;
  return std::nullopt;
}

bool Simulator::runs_across_boundary(SimJobIndex j, Seconds start) const {
  return spec_.boundaries && !hidden(j) &&
         mirage::runs_across_boundary(*spec_.boundaries, start, job(j).time_limit);
}

bool Simulator::eligible_within_limits(SimJobIndex j) const {
  if (state(j) != SimJobState::kPending || over_user_limit(job(j))) return false;
  return std::any_of(eligible_.begin(), eligible_.end(),
                     [j](const EligibleJob& e) { return e.job == j; });
}

bool Simulator::held_by_down_window(SimJobIndex j) const {
  return down_until(now_) && eligible_within_limits(j);
}

bool Simulator::held_by_boundary(SimJobIndex j) const {
  // As pending_view decides it: a down window comes first.
  return spec_.boundaries && !down_until(now_) && runs_across_boundary(j, now_) &&
         eligible_within_limits(j);
}

std::vector<NodeReservation> Simulator::boundary_reservations() const {
  std::vector<NodeReservation> out;
  if (!spec_.boundaries) return out;
  for (auto b = next_boundary_after(now_); b && *b <= now_ + QueueForecast::kHorizon;
       b = next_boundary_after(*b))
    out.push_back({*b, *b + 1, spec_.nodes});
  return out;
}

}  // namespace mirage

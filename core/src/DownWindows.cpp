#include "mirage/core/DownWindows.h"

#include <algorithm>

namespace mirage {

std::optional<Seconds> down_until(const std::vector<DownWindow>& windows, Seconds t) {
  // The last window that begins at or before t.
  const auto it = std::upper_bound(windows.begin(), windows.end(), t,
                                   [](Seconds at, const DownWindow& w) { return at < w.from; });
  if (it == windows.begin() || std::prev(it)->to <= t) return std::nullopt;
  return std::prev(it)->to;
}

std::string describe_down_windows(const std::vector<DownWindow>& windows) {
  if (windows.empty()) return "none";
  Seconds total = 0;
  for (const DownWindow& w : windows) total += w.to - w.from;
  return std::to_string(windows.size()) + (windows.size() == 1 ? " window, " : " windows, ") +
         std::to_string((total + kHour / 2) / kHour) + " hours in all";
}

}  // namespace mirage

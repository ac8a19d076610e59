#include "mirage/core/WeeklyBoundaries.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <tuple>

namespace mirage {

namespace {
constexpr std::array<const char*, 7> kDays = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
constexpr Seconds kThursday = 3 * kDay;  // the epoch's weekday, counted from Monday
}  // namespace

Seconds week_start(Seconds t) {
  const Seconds since_monday = t + kThursday;
  const Seconds floor =
      since_monday >= 0 ? since_monday / kWeek : (since_monday - kWeek + 1) / kWeek;
  return floor * kWeek - kThursday;
}

std::optional<Seconds> next_boundary_after(const std::vector<WeeklyBoundaries>& periods,
                                           Seconds t) {
  std::optional<Seconds> best;
  for (const WeeklyBoundaries& p : periods) {
    if (p.offsets.empty() || p.to <= t || p.from >= p.to) continue;
    if (best && p.from >= *best) break;             // periods are in time order
    const Seconds after = std::max(t, p.from - 1);  // boundaries from p.from on count
    const Seconds week = week_start(after);
    Seconds b = week + kWeek + p.offsets.front();  // next week's first, unless one comes sooner
    for (Seconds o : p.offsets)
      if (week + o > after) {
        b = week + o;
        break;
      }
    if (b < p.to && (!best || b < *best)) best = b;
  }
  return best;
}

bool runs_across_boundary(const std::vector<WeeklyBoundaries>& periods, Seconds start,
                          Seconds limit) {
  const auto b = next_boundary_after(periods, start);
  if (!b || *b >= start + limit) return false;
  for (const WeeklyBoundaries& p : periods)
    if (p.from <= *b && *b < p.to) return limit <= longest_gap(p);
  return true;
}

Seconds longest_gap(const WeeklyBoundaries& period) {
  const auto& o = period.offsets;
  if (o.empty()) return kWeek;
  Seconds gap = o.front() + kWeek - o.back();
  for (std::size_t i = 1; i < o.size(); ++i) gap = std::max(gap, o[i] - o[i - 1]);
  return gap;
}

double startable_share(const std::vector<WeeklyBoundaries>& periods, Seconds from, Seconds limit) {
  constexpr Seconds kStep = 10 * kMinute;
  int free = 0, all = 0;
  for (Seconds t = from; t < from + kWeek; t += kStep, ++all)
    free += !runs_across_boundary(periods, t, limit);
  return static_cast<double>(free) / all;
}

std::string describe_boundaries(const std::vector<WeeklyBoundaries>& periods) {
  if (periods.empty()) return "none";
  std::string out;
  for (const WeeklyBoundaries& p : periods) {
    // The same instant on every weekday (or weekend day) is said once: "Mon-Fri 16:00".
    std::vector<Seconds> left = p.offsets;
    std::string instants;
    const auto add = [&](const std::string& s) { instants += (instants.empty() ? "" : ", ") + s; };
    for (const auto& [first, last, name] :
         {std::tuple{0, 4, "Mon-Fri"}, std::tuple{5, 6, "Sat-Sun"}})
      for (Seconds h = 0; h < kDay; h += kMinute) {
        bool every = true;
        for (int d = first; d <= last && every; ++d)
          every = std::find(left.begin(), left.end(), d * kDay + h) != left.end();
        if (!every) continue;
        for (int d = first; d <= last; ++d) std::erase(left, d * kDay + h);
        add(std::string(name) + format_week_offset(h).substr(3));
      }
    for (Seconds o : left) add(format_week_offset(o));
    out += (out.empty() ? "" : "; ") + instants + " UTC from " +
           format_iso_time(p.from).substr(0, 10) + " to " + format_iso_time(p.to).substr(0, 10);
  }
  return out;
}

std::string format_week_offset(Seconds offset) {
  const Seconds o = ((offset % kWeek) + kWeek) % kWeek;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%s %02d:%02d", kDays[static_cast<std::size_t>(o / kDay)],
                static_cast<int>(o % kDay / 3600), static_cast<int>(o % 3600 / 60));
  return buf;
}

std::optional<Seconds> parse_week_offset(const std::string& text) {
  if (text.size() != 9 || text[3] != ' ' || text[6] != ':') return std::nullopt;
  for (std::size_t d = 0; d < kDays.size(); ++d) {
    if (text.compare(0, 3, kDays[d]) != 0) continue;
    const auto digit = [&](std::size_t i) { return text[i] >= '0' && text[i] <= '9'; };
    if (!digit(4) || !digit(5) || !digit(7) || !digit(8)) return std::nullopt;
    const int h = (text[4] - '0') * 10 + (text[5] - '0');
    const int m = (text[7] - '0') * 10 + (text[8] - '0');
    if (h > 23 || m > 59) return std::nullopt;
    return static_cast<Seconds>(d) * kDay + h * 3600 + m * 60;
  }
  return std::nullopt;
}

}  // namespace mirage

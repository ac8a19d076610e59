#pragma once
// Instants of the week across which no job may run: a site's switch between prime time and the
// night (KTH-SP2's log: for eight months no job ran across 08:00 or 17:00 on a weekday), held
// as Slurm holds a weekly recurring reservation of every node: a job whose time limit would run
// across one waits for it. Simulator.h applies them to the log's and submitted jobs, not to
// hidden work (docs/simulator.md).
#include <optional>
#include <string>
#include <vector>

#include "mirage/core/Time.h"

namespace mirage {

inline constexpr Seconds kWeek = 7 * kDay;

struct WeeklyBoundaries {
  Seconds from = 0;  // the period they hold in, [from, to)
  Seconds to = 0;
  std::vector<Seconds> offsets;  // after Monday 00:00 UTC, sorted, each within [0, kWeek)
  bool operator==(const WeeklyBoundaries&) const = default;
};

// Monday 00:00 UTC of the week that holds `t` (1970-01-01, second 0, was a Thursday).
Seconds week_start(Seconds t);

// The first boundary of `periods` after `t` (strictly); nullopt when none is left.
std::optional<Seconds> next_boundary_after(const std::vector<WeeklyBoundaries>& periods, Seconds t);

// Whether a job started at `start` with `limit` would run across a boundary (one at its very
// start or end is not across). A limit longer than every stretch between the period's boundaries
// could never start: such a job is not held (the log's own jobs show none).
bool runs_across_boundary(const std::vector<WeeklyBoundaries>& periods, Seconds start,
                          Seconds limit);

// The longest stretch between two of the period's boundaries, across the week's end too.
Seconds longest_gap(const WeeklyBoundaries& period);

// The share of the week from `from` on (in steps of ten minutes) in which a job with `limit`
// may start: 1 where no boundary holds it.
double startable_share(const std::vector<WeeklyBoundaries>& periods, Seconds from, Seconds limit);

// "Mon-Fri 07:00, Sat 12:00 UTC from 1996-09-30 to 1997-06-09; ..." (the same hour on every
// weekday, or weekend day, said once); "none".
std::string describe_boundaries(const std::vector<WeeklyBoundaries>& periods);

// "Mon 07:00" for an offset in the week, and back; nullopt for anything else.
std::string format_week_offset(Seconds offset);
std::optional<Seconds> parse_week_offset(const std::string& text);

}  // namespace mirage

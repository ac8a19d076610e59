// Weekly boundaries (WeeklyBoundaries.h): the instants of the week no job may run across.
#include <gtest/gtest.h>

#include "mirage/core/Time.h"
#include "mirage/core/WeeklyBoundaries.h"

namespace mirage {
namespace {

const Seconds kMonday = *parse_iso_time("1996-10-07T00:00:00");  // a Monday

// Weekdays at 07:00 and 16:00 from that Monday for two weeks.
std::vector<WeeklyBoundaries> prime_time() {
  WeeklyBoundaries p{kMonday, kMonday + 2 * kWeek, {}};
  for (int d = 0; d < 5; ++d)
    for (Seconds h : {7 * kHour, 16 * kHour}) p.offsets.push_back(d * kDay + h);
  return {p};
}

TEST(WeeklyBoundaries, AWeekBeginsOnMondayAtMidnightUtc) {
  EXPECT_EQ(week_start(kMonday), kMonday);
  EXPECT_EQ(week_start(kMonday + 3 * kDay + 5), kMonday);
  EXPECT_EQ(week_start(kMonday - 1), kMonday - kWeek);
  EXPECT_EQ(week_start(0), -3 * kDay);  // 1970-01-01 was a Thursday
}

TEST(WeeklyBoundaries, TheNextBoundaryComesWithinThePeriodOnly) {
  const auto b = prime_time();
  EXPECT_EQ(next_boundary_after(b, kMonday), kMonday + 7 * kHour);
  EXPECT_EQ(next_boundary_after(b, kMonday + 7 * kHour), kMonday + 16 * kHour);  // strictly after
  // Friday 16:00 is followed by Monday 07:00, across the weekend.
  EXPECT_EQ(next_boundary_after(b, kMonday + 4 * kDay + 17 * kHour), kMonday + kWeek + 7 * kHour);
  EXPECT_FALSE(next_boundary_after(b, kMonday + 2 * kWeek - kDay));         // the period is over
  EXPECT_EQ(next_boundary_after(b, kMonday - kWeek), kMonday + 7 * kHour);  // before it begins
  EXPECT_FALSE(next_boundary_after({}, kMonday));
}

// A job may run up to a boundary and start at one, not across it; a limit longer than any stretch
// between boundaries could never start, so it is not held.
TEST(WeeklyBoundaries, AJobIsHeldOnlyWhereItsLimitRunsAcrossOne) {
  const auto b = prime_time();
  const Seconds eight = kMonday + 8 * kHour;
  EXPECT_FALSE(runs_across_boundary(b, eight, 8 * kHour));  // ends at 16:00
  EXPECT_TRUE(runs_across_boundary(b, eight, 8 * kHour + 1));
  EXPECT_FALSE(runs_across_boundary(b, kMonday + 16 * kHour, 15 * kHour));  // night, to 07:00
  EXPECT_TRUE(runs_across_boundary(b, kMonday + 16 * kHour, 20 * kHour));   // longer than a night
  // Friday 16:00 to Monday 07:00 is the longest stretch: 63 hours.
  EXPECT_EQ(longest_gap(b.front()), 63 * kHour);
  EXPECT_FALSE(runs_across_boundary(b, eight, 64 * kHour));  // could never start: not held
}

// A 48-hour job may start only from Friday 16:00 to Saturday 07:00 (15 h of 168, counted in
// ten-minute steps); a 9-hour one at 07:00 on a weekday, for six hours of a weeknight and from
// Friday 16:00 to Sunday 22:00 (78 h of 168).
TEST(WeeklyBoundaries, TheShareOfTheWeekALimitMayStartIn) {
  const auto b = prime_time();
  EXPECT_NEAR(startable_share(b, kMonday, 48 * kHour), 15.0 / 168, 0.002);
  EXPECT_NEAR(startable_share(b, kMonday, 9 * kHour), 78.0 / 168, 0.02);
  EXPECT_EQ(startable_share({}, kMonday, 48 * kHour), 1.0);
  EXPECT_EQ(startable_share(b, kMonday + 3 * kWeek, 48 * kHour), 1.0);  // the period is over
}

TEST(WeeklyBoundaries, TheSameHourOnEveryWeekdayIsSaidOnce) {
  auto b = prime_time();
  EXPECT_EQ(describe_boundaries(b),
            "Mon-Fri 07:00, Mon-Fri 16:00 UTC from 1996-10-07 to 1996-10-21");
  b[0].offsets = {16 * kHour, 5 * kDay + 12 * kHour, 6 * kDay + 12 * kHour};
  EXPECT_EQ(describe_boundaries(b), "Sat-Sun 12:00, Mon 16:00 UTC from 1996-10-07 to 1996-10-21");
  EXPECT_EQ(describe_boundaries({}), "none");
}

TEST(WeeklyBoundaries, AnInstantOfTheWeekReadsAsItIsWritten) {
  EXPECT_EQ(format_week_offset(16 * kHour), "Mon 16:00");
  EXPECT_EQ(format_week_offset(4 * kDay + 7 * kHour + 30 * kMinute), "Fri 07:30");
  for (Seconds o : {Seconds{0}, 6 * kDay + 23 * kHour + 59 * kMinute, 2 * kDay + 9 * kHour})
    EXPECT_EQ(parse_week_offset(format_week_offset(o)), o);
  for (const char* bad : {"Mon 24:00", "Mon 7:00", "Mo 07:00", "Mon 07:60", "monday", ""})
    EXPECT_FALSE(parse_week_offset(bad)) << bad;
}

}  // namespace
}  // namespace mirage

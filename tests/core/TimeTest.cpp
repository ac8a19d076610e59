// Time helpers in core/src/Time.cpp: ISO timestamps, Slurm durations and CLI short durations.
#include <gtest/gtest.h>

#include "mirage/core/Time.h"

namespace mirage {
namespace {

TEST(TimeTest, ParsesIsoTimeAsUtc) {
  EXPECT_EQ(parse_iso_time("1970-01-01T00:00:00"), 0);
  EXPECT_EQ(parse_iso_time("2022-10-05T11:52:48"), 1664970768);  // sacct's form
  EXPECT_EQ(parse_iso_time("2022-10-05 11:52:48"), 1664970768);  // space instead of 'T'
  EXPECT_EQ(parse_iso_time("2022-10-05"), 1664970768 - (11 * kHour + 52 * kMinute + 48));
  EXPECT_EQ(parse_iso_time("2000-02-29T23:59:59"), 951868799);  // leap day
  EXPECT_EQ(parse_iso_time("1969-12-31T23:59:59"), -1);         // before the epoch
}

TEST(TimeTest, RejectsMalformedIsoTimes) {
  for (const char* bad :
       {"", "Unknown", "None", "2022-10-05T11:52", "2022/10/05", "2022-13-01T00:00:00",
        "2022-00-10", "2022-10-32", "2022-10-05T24:00:00", "2022-10-05T11:60:00",
        "2022-10-05X11:52:48", "2022-10-05T11:52:48Z", "22-10-05", "2022-1a-05"})
    EXPECT_FALSE(parse_iso_time(bad).has_value()) << "accepted '" << bad << "'";
}

// A sign inside a timestamp is malformed, not a negative hour or minute.
TEST(TimeTest, RejectsSignedTimestampComponents) {
  for (const char* bad : {"2022-10-05T-1:00:00", "2022-10-05T11:-1:00", "2022-10-05T11:52:-1",
                          "2022--1-05", "2022-10--5"})
    EXPECT_FALSE(parse_iso_time(bad).has_value()) << "accepted '" << bad << "'";
}

TEST(TimeTest, FormatsIsoTimeAndRoundTrips) {
  EXPECT_EQ(format_iso_time(0), "1970-01-01T00:00:00");
  EXPECT_EQ(format_iso_time(1664970768), "2022-10-05T11:52:48");
  for (Seconds t : {Seconds{0}, Seconds{951868799}, Seconds{1664970768}, Seconds{4102444800}})
    EXPECT_EQ(parse_iso_time(format_iso_time(t)), t);
}

TEST(TimeTest, ParsesEverySlurmDurationForm) {
  EXPECT_EQ(parse_slurm_duration("30"), 30 * kMinute);  // bare number: minutes, as sbatch --time
  EXPECT_EQ(parse_slurm_duration("30:15"), 30 * kMinute + 15);
  EXPECT_EQ(parse_slurm_duration("01:02:03"), kHour + 2 * kMinute + 3);
  EXPECT_EQ(parse_slurm_duration("48:00:00"), 2 * kDay);
  EXPECT_EQ(parse_slurm_duration("2-00"), 2 * kDay);
  EXPECT_EQ(parse_slurm_duration("2-05"), 2 * kDay + 5 * kHour);
  EXPECT_EQ(parse_slurm_duration("1-01:30"), kDay + kHour + 30 * kMinute);
  EXPECT_EQ(parse_slurm_duration("2-00:00:00"), 2 * kDay);
  EXPECT_EQ(parse_slurm_duration("0-00:00:01"), 1);
  EXPECT_EQ(parse_slurm_duration("0"), 0);
}

TEST(TimeTest, RejectsNonDurations) {
  for (const char* bad : {"", "UNLIMITED", "Partition_Limit", "INVALID", "1:2:3:4", "-5", "1-",
                          "1-2:3:4:5", "a:b", "10:", ":10", "1.5", "1--2", "00:-1:00"})
    EXPECT_FALSE(parse_slurm_duration(bad).has_value()) << "accepted '" << bad << "'";
}

// Seconds that do not fit in 64 bits are not a duration (the multiplication used to overflow).
TEST(TimeTest, DurationsBeyondSixtyFourBitsAreRejected) {
  for (const char* bad : {"106751991167301d", "9999999999999999h", "153722867280912931m",
                          "99999999999999999999s", "106751991167301-00:00:00",
                          "2562047788015216:00:00", "153722867280912931", "1-9223372036854775807"})
    EXPECT_FALSE(parse_slurm_duration(bad).has_value() || parse_short_duration(bad).has_value())
        << "accepted '" << bad << "'";
}

// A part too large to compute with is malformed, not a wrapped-around (negative) duration.
TEST(TimeTest, RejectsDurationsTooLargeToHold) {
  EXPECT_FALSE(parse_slurm_duration("999999999999999-00:00:00").has_value());
  EXPECT_FALSE(parse_slurm_duration("9223372036854775807").has_value());
  EXPECT_FALSE(parse_short_duration("9223372036854775807s").has_value());
  EXPECT_FALSE(parse_short_duration("106751991167301d").has_value());
  EXPECT_EQ(parse_short_duration("1000000000000s"), 1000000000000);
}

TEST(TimeTest, FormatsSlurmDurationsAsSlurmPrintsThem) {
  EXPECT_EQ(format_slurm_duration(0), "00:00:00");
  EXPECT_EQ(format_slurm_duration(59), "00:00:59");
  EXPECT_EQ(format_slurm_duration(kHour + 2 * kMinute + 3), "01:02:03");
  EXPECT_EQ(format_slurm_duration(kDay - 1), "23:59:59");
  EXPECT_EQ(format_slurm_duration(kDay), "1-00:00:00");
  EXPECT_EQ(format_slurm_duration(2 * kDay + 5 * kHour + 6), "2-05:00:06");
  EXPECT_EQ(format_slurm_duration(-5), "-00:00:05");
  for (Seconds s : {Seconds{0}, Seconds{1}, Seconds{3599}, Seconds{kDay}, Seconds{123456}})
    EXPECT_EQ(parse_slurm_duration(format_slurm_duration(s)), s);
}

TEST(TimeTest, FormatsShortDurationsWithTheTwoLargestUnits) {
  EXPECT_EQ(format_short_duration(0), "0s");
  EXPECT_EQ(format_short_duration(45), "45s");
  EXPECT_EQ(format_short_duration(90), "1m30s");
  EXPECT_EQ(format_short_duration(3 * kHour + 10 * kMinute + 59), "3h10m");
  EXPECT_EQ(format_short_duration(2 * kDay + 4 * kHour + 30), "2d4h");
  EXPECT_EQ(format_short_duration(kDay + 30 * kMinute), "1d");  // rounded down to its units
  EXPECT_EQ(format_short_duration(-90), "-1m30s");
}

TEST(TimeTest, ParsesShortDurations) {
  EXPECT_EQ(parse_short_duration("90s"), 90);
  EXPECT_EQ(parse_short_duration("30m"), 30 * kMinute);
  EXPECT_EQ(parse_short_duration("4h"), 4 * kHour);
  EXPECT_EQ(parse_short_duration("2d"), 2 * kDay);
  EXPECT_EQ(parse_short_duration("0m"), 0);
  for (const char* bad : {"", "h", "10", "1.5h", "-5m", "5x", "5 h", "h5", "5H"})
    EXPECT_FALSE(parse_short_duration(bad).has_value()) << "accepted '" << bad << "'";
}

}  // namespace
}  // namespace mirage

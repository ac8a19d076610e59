#pragma once
// Time in mirage is whole seconds: absolute instants are Unix seconds (UTC), durations are seconds.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mirage {

using Seconds = std::int64_t;

inline constexpr Seconds kMinute = 60;
inline constexpr Seconds kHour = 3600;
inline constexpr Seconds kDay = 86400;

// Parses "YYYY-MM-DDTHH:MM:SS" (sacct), "YYYY-MM-DD HH:MM:SS" or "YYYY-MM-DD" as UTC.
std::optional<Seconds> parse_iso_time(std::string_view text);
// Formats as "YYYY-MM-DDTHH:MM:SS" (UTC).
std::string format_iso_time(Seconds unix_seconds);

// Parses Slurm's duration forms: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS".
// A bare number is minutes, as in sbatch --time.
std::optional<Seconds> parse_slurm_duration(std::string_view text);
// Formats as Slurm does: "D-HH:MM:SS" when a day or more, else "HH:MM:SS".
std::string format_slurm_duration(Seconds seconds);

// Formats for people with the two largest units, rounded down: "3h10m", "2d4h", "45m", "30s".
std::string format_short_duration(Seconds seconds);

// Parses durations such as "4h", "30m", "90s", "2d" (used by CLI flags like --every).
std::optional<Seconds> parse_short_duration(std::string_view text);

// Either of the above: "4h", "2d", or Slurm's "2-00:00:00", "48:00:00", "2880" (minutes). What
// every duration a person types is read with, so sbatch's --time and mirage's own agree.
std::optional<Seconds> parse_duration(std::string_view text);

}  // namespace mirage

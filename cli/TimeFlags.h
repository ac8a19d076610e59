#pragma once
// Dates and durations given on the command line, checked the same way by every command.
#include <CLI/CLI.hpp>
#include <string>

#include "mirage/core/Time.h"

namespace mirage::cli {

// "2023-02-01" or "2023-02-01T12:00:00" (UTC); InputError naming `flag` otherwise.
Seconds parse_time_flag(const std::string& text, const char* flag);
// "4h", "30m", "2d", or sbatch --time's forms ("2-00:00:00", "48:00:00", "2880" minutes);
// positive; InputError naming `flag` otherwise.
Seconds parse_duration_flag(const std::string& text, const char* flag);
// The same, or 0 ("0" alone, or "0m" ...); never negative.
Seconds parse_nonnegative_duration_flag(const std::string& text, const char* flag);
// parse_duration_flag's check at parse time, for a flag whose value is read later.
CLI::Validator positive_duration();
// Hours as a plain number ("336", "12.5"), or a duration ("14d"); positive.
Seconds parse_hours_flag(const std::string& text, const char* flag);

}  // namespace mirage::cli

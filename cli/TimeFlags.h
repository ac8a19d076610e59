#pragma once
// Dates and durations given on the command line, checked the same way by every command.
#include <string>

#include "mirage/core/Time.h"

namespace mirage::cli {

// "2023-02-01" or "2023-02-01T12:00:00" (UTC); InputError naming `flag` otherwise.
Seconds parse_time_flag(const std::string& text, const char* flag);
// "4h", "30m", "2d" (positive); InputError naming `flag` otherwise.
Seconds parse_duration_flag(const std::string& text, const char* flag);

}  // namespace mirage::cli

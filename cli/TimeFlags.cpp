#include "TimeFlags.h"

#include "mirage/core/Error.h"

namespace mirage::cli {

Seconds parse_time_flag(const std::string& text, const char* flag) {
  auto t = parse_iso_time(text);
  if (!t)
    throw InputError({"", 0, flag}, "expected a date YYYY-MM-DD[THH:MM:SS], got '" + text + "'");
  return *t;
}

Seconds parse_duration_flag(const std::string& text, const char* flag) {
  auto d = parse_short_duration(text);
  if (!d || *d <= 0)
    throw InputError({"", 0, flag}, "expected a duration such as 4h, 30m, 2d; got '" + text + "'");
  return *d;
}

}  // namespace mirage::cli

#include "TimeFlags.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "mirage/core/Error.h"

namespace mirage::cli {

Seconds parse_time_flag(const std::string& text, const char* flag) {
  auto t = parse_iso_time(text);
  if (!t)
    throw InputError({"", 0, flag}, "expected a date YYYY-MM-DD[THH:MM:SS], got '" + text + "'");
  return *t;
}

namespace {

std::optional<std::string> not_a_positive_duration(const std::string& text) {
  if (const auto d = parse_duration(text); d && *d > 0) return std::nullopt;
  return "expected a duration such as 4h, 90m, 2d or as sbatch --time takes it (2-00:00:00, "
         "48:00:00, 2880 minutes); got '" +
         text + "'";
}

}  // namespace

Seconds parse_duration_flag(const std::string& text, const char* flag) {
  if (const auto why = not_a_positive_duration(text)) throw InputError({"", 0, flag}, *why);
  return *parse_duration(text);
}

CLI::Validator positive_duration() {
  return CLI::Validator(
      [](std::string& value) { return not_a_positive_duration(value).value_or(std::string()); },
      "DURATION", "duration");
}

Seconds parse_nonnegative_duration_flag(const std::string& text, const char* flag) {
  if (text == "0") return 0;
  const auto d = parse_duration(text);
  if (!d)
    throw InputError({"", 0, flag},
                     "expected a duration such as 10m, 1h, or 0; got '" + text + "'");
  return *d;
}

Seconds parse_hours_flag(const std::string& text, const char* flag) {
  if (!text.empty() && std::isdigit(static_cast<unsigned char>(text.back()))) {
    char* end = nullptr;
    const double hours = std::strtod(text.c_str(), &end);
    if (end == text.c_str() + text.size() && hours > 0 && hours < 1e6)
      return static_cast<Seconds>(std::llround(hours * kHour));
  } else if (const auto d = parse_duration(text); d && *d > 0) {
    return *d;
  }
  throw InputError({"", 0, flag},
                   "expected hours (e.g. 336) or a duration (e.g. 14d); got '" + text + "'");
}

}  // namespace mirage::cli

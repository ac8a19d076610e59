#pragma once
// Checks of flag values that say what was expected in the flag's own words ("expected a whole
// number from 1 to 65535, got '0'") instead of CLI11's floating-point ranges.
#include <CLI/CLI.hpp>
#include <charconv>
#include <limits>
#include <string>

namespace mirage::cli {

// A whole number from `lo` to `hi` (hi = the type's maximum: "or more").
inline CLI::Validator whole_number(long long lo,
                                   long long hi = std::numeric_limits<long long>::max()) {
  const std::string range = hi == std::numeric_limits<long long>::max()
                                ? std::to_string(lo) + " or more"
                                : "from " + std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& value) {
        long long v = 0;
        const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (ec != std::errc() || p != value.data() + value.size() || v < lo || v > hi)
          return "expected a whole number " + range + ", got '" + value + "'";
        return std::string();
      },
      range, "whole number");
}

// A number from `lo` to `hi`.
inline CLI::Validator number_between(double lo, double hi) {
  const std::string range =
      "from " + CLI::detail::to_string(lo) + " to " + CLI::detail::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& value) {
        try {
          std::size_t used = 0;
          const double v = std::stod(value, &used);
          if (used == value.size() && v >= lo && v <= hi) return std::string();
        } catch (const std::exception&) {
        }
        return "expected a number " + range + ", got '" + value + "'";
      },
      range, "number");
}

// A number above 0, up to `hi` (a weight's decay: 0 would weigh nothing).
inline CLI::Validator number_above_zero_to(double hi) {
  const std::string range = "above 0, up to " + CLI::detail::to_string(hi);
  return CLI::Validator(
      [hi, range](std::string& value) {
        try {
          std::size_t used = 0;
          const double v = std::stod(value, &used);
          if (used == value.size() && v > 0 && v <= hi) return std::string();
        } catch (const std::exception&) {
        }
        return "expected a number " + range + ", got '" + value + "'";
      },
      range, "number");
}

}  // namespace mirage::cli

#include "mirage/core/Time.h"

#include <charconv>
#include <cstdio>
#include <ctime>
#include <utility>
#include <vector>

namespace mirage {
namespace {

// Digits only: a sign or space inside a timestamp or duration is malformed, not a value. Values
// above 10^12 are malformed too: no real date or duration part is that large, and the bound keeps
// the sums and products below from overflowing.
bool parse_int(std::string_view text, long long& out) {
  constexpr long long kMax = 1'000'000'000'000;
  if (text.empty()) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && out <= kMax;
}

// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
long long days_from_civil(long long y, unsigned m, unsigned d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long long>(doe) - 719468;
}

// a * unit + b, or false when that does not fit in Seconds.
bool scaled(Seconds a, Seconds unit, Seconds b, Seconds& out) {
  Seconds product;
  return !__builtin_mul_overflow(a, unit, &product) && !__builtin_add_overflow(product, b, &out);
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  while (true) {
    size_t pos = text.find(sep, begin);
    parts.push_back(text.substr(begin, pos - begin));
    if (pos == std::string_view::npos) break;
    begin = pos + 1;
  }
  return parts;
}

}  // namespace

std::optional<Seconds> parse_iso_time(std::string_view text) {
  long long y, mo, d, h = 0, mi = 0, s = 0;
  if (text.size() < 10 || text[4] != '-' || text[7] != '-') return std::nullopt;
  if (!parse_int(text.substr(0, 4), y) || !parse_int(text.substr(5, 2), mo) ||
      !parse_int(text.substr(8, 2), d))
    return std::nullopt;
  if (text.size() > 10) {
    if (text.size() != 19 || (text[10] != 'T' && text[10] != ' ') || text[13] != ':' ||
        text[16] != ':')
      return std::nullopt;
    if (!parse_int(text.substr(11, 2), h) || !parse_int(text.substr(14, 2), mi) ||
        !parse_int(text.substr(17, 2), s))
      return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  return days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * kDay +
         h * kHour + mi * kMinute + s;
}

std::string format_iso_time(Seconds t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

std::optional<Seconds> parse_slurm_duration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  long long days = 0;
  std::string_view rest = text;
  bool has_days = false;
  if (auto dash = text.find('-'); dash != std::string_view::npos) {
    if (!parse_int(text.substr(0, dash), days) || days < 0) return std::nullopt;
    rest = text.substr(dash + 1);
    has_days = true;
  }
  auto parts = split(rest, ':');
  std::vector<long long> v;
  for (auto p : parts) {
    long long x;
    if (!parse_int(p, x) || x < 0) return std::nullopt;
    v.push_back(x);
  }
  // D-HH, D-HH:MM, D-HH:MM:SS and HH:MM:SS count from hours; MM and MM:SS from minutes.
  static constexpr Seconds kFromHours[] = {kHour, kMinute, 1};
  static constexpr Seconds kFromMinutes[] = {kMinute, 1};
  if (v.size() > 3) return std::nullopt;
  const Seconds* units = has_days || v.size() == 3 ? kFromHours : kFromMinutes;
  Seconds secs = 0;
  if (!scaled(days, kDay, 0, secs)) return std::nullopt;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!scaled(v[i], units[i], secs, secs)) return std::nullopt;
  return secs;
}

std::string format_slurm_duration(Seconds s) {
  char buf[48];
  const bool neg = s < 0;
  if (neg) s = -s;
  long long d = s / kDay, h = (s % kDay) / kHour, m = (s % kHour) / kMinute, sec = s % kMinute;
  if (d > 0)
    std::snprintf(buf, sizeof buf, "%s%lld-%02lld:%02lld:%02lld", neg ? "-" : "", d, h, m, sec);
  else
    std::snprintf(buf, sizeof buf, "%s%02lld:%02lld:%02lld", neg ? "-" : "", h, m, sec);
  return buf;
}

std::string format_short_duration(Seconds s) {
  if (s < 0) return "-" + format_short_duration(-s);
  if (s < kMinute) return std::to_string(s) + "s";
  static constexpr std::pair<Seconds, char> kUnits[] = {
      {kDay, 'd'}, {kHour, 'h'}, {kMinute, 'm'}, {1, 's'}};
  std::string out;
  int shown = 0;  // units from the largest one present on, empty ones included
  for (const auto& [size, name] : kUnits) {
    const Seconds n = s / size;
    if (n == 0 && shown == 0) continue;
    if (n > 0) out += std::to_string(n) + name;
    s %= size;
    if (++shown == 2) break;
  }
  return out;
}

std::optional<Seconds> parse_short_duration(std::string_view text) {
  if (text.size() < 2) return std::nullopt;
  long long n;
  if (!parse_int(text.substr(0, text.size() - 1), n) || n < 0) return std::nullopt;
  Seconds unit;
  switch (text.back()) {
    case 's': unit = 1; break;
    case 'm': unit = kMinute; break;
    case 'h': unit = kHour; break;
    case 'd': unit = kDay; break;
    default: return std::nullopt;
  }
  Seconds out;
  if (!scaled(n, unit, 0, out)) return std::nullopt;
  return out;
}

std::optional<Seconds> parse_duration(std::string_view text) {
  if (auto d = parse_short_duration(text)) return d;
  return parse_slurm_duration(text);
}

}  // namespace mirage

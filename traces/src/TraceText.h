#pragma once
// Scanning a trace's text, for the trace readers (private to them): character classes, trimming,
// case-insensitive matching, integers, field splitting, line iteration, quoting a row in a
// message. Everything works on string_views into the one buffer holding the whole file: no regex,
// no per-field allocation. Defined inline here because the readers call these once a field or a
// character: out of line, reading an SWF log takes nearly twice as long.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "mirage/core/Error.h"
#include "mirage/core/Text.h"  // trim

namespace mirage::trace_detail {

inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

inline char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

inline bool icontains(std::string_view haystack, std::string_view needle) {
  if (needle.size() > haystack.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= haystack.size(); ++i)
    if (iequals(haystack.substr(i, needle.size()), needle)) return true;
  return false;
}

// Parses an integer, optionally with a fractional part (rounded half up, away from zero), as
// some SWF converters write fractional seconds. Rejects anything else, including overflow.
inline bool parse_integer(std::string_view s, long long& out) {
  const char* p = s.data();
  const char* const e = p + s.size();
  if (p == e) return false;
  bool negative = false;
  if (*p == '-' || *p == '+') {
    negative = *p == '-';
    ++p;
  }
  long long value = 0;
  int digits = 0;
  while (p != e && is_digit(*p)) {
    if (++digits > 18) return false;
    value = value * 10 + (*p - '0');
    ++p;
  }
  bool round_up = false;
  if (p != e && *p == '.') {
    ++p;
    if (p != e && is_digit(*p)) {
      round_up = *p >= '5';
      ++digits;
    }
    while (p != e && is_digit(*p)) ++p;
  }
  if (p != e || digits == 0) return false;
  if (round_up) ++value;
  out = negative ? -value : value;
  return true;
}

inline bool is_lone_integer(std::string_view line) {
  line = trim(line);
  if (line.empty()) return false;
  return std::all_of(line.begin(), line.end(), is_digit);
}

inline bool is_dashes_line(std::string_view line) {
  line = trim(line);
  if (line.empty() || line.front() != '-') return false;
  return std::all_of(line.begin(), line.end(), [](char c) { return c == '-' || is_space(c); });
}

// Splits on runs of whitespace into `out`; returns the number of fields (may exceed out.size(),
// in which case only the first out.size() are stored).
template <std::size_t N>
std::size_t split_whitespace(std::string_view line, std::array<std::string_view, N>& out) {
  std::size_t n = 0;
  const char* p = line.data();
  const char* const e = p + line.size();
  while (true) {
    while (p != e && is_space(*p)) ++p;
    if (p == e) break;
    const char* b = p;
    while (p != e && !is_space(*p)) ++p;
    if (n < N) out[n] = std::string_view(b, static_cast<std::size_t>(p - b));
    ++n;
  }
  return n;
}

inline void split_char(std::string_view line, char sep, std::vector<std::string_view>& out) {
  out.clear();
  std::size_t begin = 0;
  while (true) {
    const std::size_t pos = line.find(sep, begin);
    if (pos == std::string_view::npos) {
      out.push_back(line.substr(begin));
      return;
    }
    out.push_back(line.substr(begin, pos - begin));
    begin = pos + 1;
  }
}

// Row text in a message: cut short, and escaped so that no control byte reaches a terminal.
inline std::string quote(std::string_view s) {
  constexpr std::size_t kMax = 40;
  return "'" + escape_control(s.substr(0, kMax)) + (s.size() > kMax ? "...'" : "'");
}

// Iterates over the lines of a buffer, with 1-based line numbers; strips a trailing '\r'.
class LineCursor {
 public:
  explicit LineCursor(std::string_view text) : text_(text) {}
  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    const char* b = text_.data() + pos_;
    const void* nl = std::memchr(b, '\n', text_.size() - pos_);
    std::size_t len =
        nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - b) : text_.size() - pos_;
    pos_ += len + 1;
    ++line_no_;
    if (len > 0 && b[len - 1] == '\r') --len;
    line = std::string_view(b, len);
    return true;
  }
  long line_no() const { return line_no_; }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  long line_no_ = 0;
};

}  // namespace mirage::trace_detail

#pragma once
// Small text helpers shared by the readers of traces and configuration files. Inline and
// locale-free: the trace readers call them once a field.
#include <string_view>

namespace mirage {

inline bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

// `s` without leading and trailing white space.
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace mirage

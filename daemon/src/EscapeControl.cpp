#include "mirage/daemon/EscapeControl.h"

namespace mirage::daemon {
namespace {

constexpr char kHex[] = "0123456789abcdef";

bool is_c0(unsigned char c) {
  return c < 0x20 || c == 0x7f;
}

// U+0080..U+009F in UTF-8: 0xC2 then 0x80..0x9F (some terminals act on these too).
bool is_c1_at(std::string_view text, std::size_t i) {
  return static_cast<unsigned char>(text[i]) == 0xc2 && i + 1 < text.size() &&
         (static_cast<unsigned char>(text[i + 1]) & 0xe0) == 0x80;
}

}  // namespace

std::string escape_control(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (is_c0(c)) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else if (is_c1_at(text, i)) {
      const auto c1 = static_cast<unsigned char>(text[++i]);
      out += "\\u00";
      out += kHex[c1 >> 4];
      out += kHex[c1 & 0xf];
    } else {
      out += text[i];
    }
  }
  return out;
}

bool has_control(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i)
    if (is_c0(static_cast<unsigned char>(text[i])) || is_c1_at(text, i)) return true;
  return false;
}

}  // namespace mirage::daemon

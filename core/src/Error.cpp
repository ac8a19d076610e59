#include "mirage/core/Error.h"

#include <algorithm>

namespace mirage {
namespace {

// Length of the well-formed UTF-8 sequence at s[i] that encodes a printable code point (not
// overlong, no surrogates, at most U+10FFFF, not a C1 control); 0 when there is none.
std::size_t printable_utf8_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  std::size_t n;
  char32_t cp;
  if (lead >= 0xc2 && lead <= 0xdf) {
    n = 2;
    cp = lead & 0x1f;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    n = 3;
    cp = lead & 0x0f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    n = 4;
    cp = lead & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  const char32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < smallest[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  if (cp <= 0x9f) return 0;  // C1 controls: some terminals act on them
  return n;
}

// Quoted input can be huge (a megabyte-long TOML key): keep the head and the tail of a message
// so that it cannot flood a terminal or a log. Cut before escaping, so that a sequence cut in
// two is escaped, not printed.
std::string shorten(std::string_view text, std::size_t head, std::size_t tail) {
  if (text.size() <= head + tail + 32) return std::string(text);
  return std::string(text.substr(0, head)) + " [" + std::to_string(text.size() - head - tail) +
         " bytes left out] " + std::string(text.substr(text.size() - tail));
}

// A message as printed: each line escaped and, when very long, shortened. Line breaks are kept,
// as messages that list several things (the paths tried for a plugin) are written over lines.
std::string printable_message(std::string_view message) {
  std::string out;
  for (std::size_t begin = 0;;) {
    const std::size_t end = std::min(message.find('\n', begin), message.size());
    out += escape_control(shorten(message.substr(begin, end - begin), 400, 100));
    if (end == message.size()) return out;
    out += '\n';
    begin = end + 1;
  }
}

}  // namespace

std::string escape_control(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c >= 0x80) {
      if (const std::size_t n = printable_utf8_length(text, i)) {
        out.append(text.substr(i, n));
        i += n;
        continue;
      }
    }
    if (c == '\t')
      out += "\\t";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else
      out += {'\\', 'x', kHex[c >> 4], kHex[c & 0xf]};
    ++i;
  }
  return out;
}

bool has_control(std::string_view text) {
  return escape_control(text) != text;
}

std::string format_location(const SourceLocation& where) {
  // A flag or a request field with no file: its name alone ("--from: must be ...").
  if (where.file.empty() && where.line <= 0 && !where.field.empty())
    return escape_control(shorten(where.field, 48, 16));
  std::string out = where.file.empty() ? std::string("<input>") : escape_control(where.file);
  if (where.line > 0) out += ":" + std::to_string(where.line);
  if (!where.field.empty()) out += ": field '" + escape_control(shorten(where.field, 48, 16)) + "'";
  return out;
}

InputError::InputError(SourceLocation where, const std::string& message)
    : std::runtime_error(format_location(where) + ": " + printable_message(message)),
      where_(std::move(where)),
      message_(printable_message(message)) {}

}  // namespace mirage

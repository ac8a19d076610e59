#include "Mutator.h"

#include <array>
#include <string_view>
#include <utility>
#include <vector>

namespace mirage::fuzz {
namespace {

using namespace std::string_view_literals;

// Numbers at and past the edges of the integer types the readers use.
constexpr std::array kNumbers = {
    "9223372036854775807"sv,
    "-9223372036854775808"sv,
    "9223372036854775808"sv,
    "99999999999999999999999999"sv,
    "18446744073709551615"sv,
    "999999999999999999"sv,
    "-999999999999999999"sv,
    "2147483648"sv,
    "-2147483649"sv,
    "4294967296"sv,
    "1099511627776"sv,
    "-1"sv,
    "-2"sv,
    "0"sv,
    "-0"sv,
    "+5"sv,
    "0.5"sv,
    "1.5"sv,
    "-0.5"sv,
    "1e308"sv,
    "0x10"sv,
};

// Whole-field replacements: odd times, durations, TRES lists, job ids and states.
constexpr std::array kOddFields = {
    "9999-12-31T23:59:59"sv,
    "0000-00-00T00:00:00"sv,
    "1970-01-01T00:00:00"sv,
    "1900-01-01T00:00:00"sv,
    "2023-02-29T00:00:00"sv,
    "2023-01-01T24:00:00"sv,
    "292277026596-12-04T15:30:07"sv,
    "Unknown"sv,
    "None"sv,
    "N/A"sv,
    "UNLIMITED"sv,
    "Partition_Limit"sv,
    "INFINITE"sv,
    "99999999-23:59:59"sv,
    "1:2:3:4:5"sv,
    "00:00:60"sv,
    "-1-00:00:00"sv,
    "153722867280912930"sv,
    "gres/gpu=-1,node=1"sv,
    "gres/gpu=9223372036854775807,node=1"sv,
    "gres/gpu:a100=99999999999999999999"sv,
    "gres/gpu=8,node=0"sv,
    "123_"sv,
    "123+"sv,
    "_4"sv,
    "+0"sv,
    "123.batch"sv,
    "."sv,
    "'"sv,
    "\"\""sv,
    ";"sv,
    "JobID"sv,
};

// Control bytes and terminal escape sequences, including C1 controls raw and as UTF-8.
constexpr std::array kControl = {
    "\0"sv,       "\x07"sv,         "\x1b[2J"sv, "\x1b]0;title\x07"sv,
    "\r"sv,       "\x7f"sv,         "\x9b"sv,    "\xc2\x9b"sv,
    "\xff\xfe"sv, "\t"sv,           "\v"sv,      "\f"sv,
    "\x08"sv,     "\xe2\x80\xae"sv, "\x1a"sv,    "\xef\xbb\xbf"sv,
};

// TOML values of the wrong type, at the edges of a range, or malformed.
constexpr std::array kTomlValues = {
    "true"sv,
    "-1"sv,
    "0"sv,
    "9223372036854775807"sv,
    "-9223372036854775808"sv,
    "99999999999999999999"sv,
    "1e999"sv,
    "-1e999"sv,
    "nan"sv,
    "inf"sv,
    "-inf"sv,
    "0.0"sv,
    "1.5"sv,
    "0x7fffffffffffffff"sv,
    "0o777"sv,
    "0b1"sv,
    "\"\""sv,
    "\"0\""sv,
    "\"-5m\""sv,
    "\"99999999999999999999d\""sv,
    "\"9223372036854775807s\""sv,
    "\"106751991167300d\""sv,
    "\"1:2:3:4\""sv,
    "\"2-25:00:00\""sv,
    "\"99999999:00:00\""sv,
    "\"USR99\""sv,
    "\"SIG\""sv,
    "\"SIGKILL\""sv,
    "65"sv,
    "\"~/${HOME\""sv,
    "\"$\""sv,
    "\"~\""sv,
    "\"\\u0000\""sv,
    "\"\\u001b[2J\""sv,
    "\"\\u009b\""sv,
    "'''a\nb'''"sv,
    "\"\"\"\n\"\"\""sv,
    "[]"sv,
    "{}"sv,
    "[[1]]"sv,
    "[1, \"a\"]"sv,
    "{ a = 1 }"sv,
    "1979-05-27T07:32:00Z"sv,
    "07:32:00"sv,
    "1979-05-27"sv,
    "\"unterminated"sv,
    "="sv,
    ""sv,
};

std::string_view any(Rng& rng, const auto& list) {
  return list[pick(rng, list.size())];
}

struct Span {
  std::size_t begin, end;  // [begin, end) in the text; a line's span excludes its '\n'
};

Span random_line(const std::string& s, Rng& rng) {
  const std::size_t at = pick(rng, s.size() + 1);
  const std::size_t nl_before = at == 0 ? std::string::npos : s.rfind('\n', at - 1);
  const std::size_t begin = nl_before == std::string::npos ? 0 : nl_before + 1;
  const std::size_t nl_after = s.find('\n', at);
  return {begin, nl_after == std::string::npos ? s.size() : nl_after};
}

// Field spans of a line: '|'-separated when it has any, else tab-separated, else runs of spaces.
std::vector<Span> fields_of(std::string_view line, std::size_t offset) {
  std::vector<Span> out;
  char sep = line.find('|') != std::string_view::npos    ? '|'
             : line.find('\t') != std::string_view::npos ? '\t'
                                                         : ' ';
  std::size_t i = 0;
  while (i <= line.size()) {
    if (sep == ' ')
      while (i < line.size() && line[i] == ' ') ++i;
    if (sep == ' ' && i == line.size()) break;
    std::size_t e = line.find(sep, i);
    if (e == std::string_view::npos) e = line.size();
    out.push_back({offset + i, offset + e});
    i = e + 1;
  }
  return out;
}

std::string at(std::size_t pos) {
  return " at byte " + std::to_string(pos);
}

std::string huge_number(std::string& s, Rng& rng) {
  const Span line = random_line(s, rng);
  std::vector<Span> digits;
  for (std::size_t i = line.begin; i < line.end;) {
    if (s[i] < '0' || s[i] > '9') {
      ++i;
      continue;
    }
    const std::size_t b = i;
    while (i < line.end && s[i] >= '0' && s[i] <= '9') ++i;
    digits.push_back({b, i});
  }
  const std::string_view number = any(rng, kNumbers);
  if (digits.empty()) {
    s.insert(line.begin, number);
    return "number " + std::string(number) + at(line.begin);
  }
  const Span d = digits[pick(rng, digits.size())];
  s.replace(d.begin, d.end - d.begin, number);
  return "number " + std::string(number) + at(d.begin);
}

std::string field_edit(std::string& s, Rng& rng, int how) {
  const Span line = random_line(s, rng);
  const std::vector<Span> f =
      fields_of(std::string_view(s).substr(line.begin, line.end - line.begin), line.begin);
  if (f.empty()) return "field edit on an empty line";
  const Span a = f[pick(rng, f.size())];
  if (how == 0) {
    s.erase(a.begin, a.end - a.begin);
    return "emptied a field" + at(a.begin);
  }
  if (how == 1) {
    const std::string_view value = any(rng, kOddFields);
    s.replace(a.begin, a.end - a.begin, value);
    return "field '" + std::string(value) + "'" + at(a.begin);
  }
  const Span b = f[pick(rng, f.size())];
  if (a.begin == b.begin) return "swapped a field with itself";
  const Span lo = a.begin < b.begin ? a : b, hi = a.begin < b.begin ? b : a;
  const std::string first = s.substr(lo.begin, lo.end - lo.begin);
  const std::string second = s.substr(hi.begin, hi.end - hi.begin);
  s.replace(hi.begin, hi.end - hi.begin, first);
  s.replace(lo.begin, lo.end - lo.begin, second);
  return "swapped fields" + at(lo.begin) + " and" + at(hi.begin);
}

std::string long_line(std::string& s, Rng& rng) {
  const std::size_t length = std::size_t{4096} << pick(rng, 9);  // 4 KiB to 1 MiB
  const Span line = random_line(s, rng);
  std::string unit;
  switch (pick(rng, 6)) {
    case 0: unit = "9"; break;
    case 1: unit = "|"; break;
    case 2: unit = "1 "; break;
    case 3: unit = " "; break;
    case 4: unit = s.substr(line.begin, std::min<std::size_t>(line.end - line.begin, 200)); break;
    default: unit = "a"; break;
  }
  if (unit.empty()) unit = "x";
  std::string filler;
  filler.reserve(length + unit.size());
  while (filler.size() < length) filler += unit;
  s.insert(line.begin, filler + "\n");
  return "line of " + std::to_string(filler.size()) + " bytes" + at(line.begin);
}

std::string line_ending(std::string& s, Rng& rng) {
  const std::size_t nl = s.find('\n', pick(rng, s.size() + 1));
  if (nl == std::string::npos) {
    s += '\n';
    return "added a final newline";
  }
  constexpr std::array kEndings = {""sv, "\r\n"sv, "\r"sv, "\n\n\n"sv, "\n\r\n"sv};
  const std::string_view ending = any(rng, kEndings);
  s.replace(nl, 1, ending);
  return "line ending " + std::to_string(ending.size()) + " bytes" + at(nl);
}

std::string toml_value(std::string& s, Rng& rng) {
  const Span line = random_line(s, rng);
  const std::size_t eq = s.find('=', line.begin);
  const std::string_view value = any(rng, kTomlValues);
  if (eq == std::string::npos || eq >= line.end) {
    const std::string entry = "key = " + std::string(value) + "\n";
    s.insert(line.begin, entry);
    return "entry '" + entry.substr(0, entry.size() - 1) + "'" + at(line.begin);
  }
  std::size_t end = s.find('#', eq);
  if (end == std::string::npos || end > line.end) end = line.end;
  s.replace(eq + 1, end - eq - 1, " " + std::string(value) + " ");
  return "value '" + std::string(value) + "'" + at(eq + 1);
}

std::string toml_structure(std::string& s, Rng& rng) {
  const Span line = random_line(s, rng);
  std::string text;
  switch (pick(rng, 5)) {
    case 0: text = "x = " + std::string(std::size_t{8} << pick(rng, 14), '['); break;
    case 1: {
      const std::size_t depth = std::size_t{8} << pick(rng, 12);
      text = "x = ";
      for (std::size_t i = 0; i < depth; ++i) text += "{a=";
      break;
    }
    case 2:
      text = std::string(any(rng, std::array{"[cluster]"sv, "[[cluster]]"sv, "[cluster"sv,
                                             "[a.b.c]"sv, "[]"sv, "[poll.interval]"sv}));
      break;
    case 3: text = "poll.interval = 5"; break;
    default: text = std::string(std::size_t{64} << pick(rng, 12), 'k') + " = 1"; break;
  }
  s.insert(line.begin, text + "\n");
  return "TOML '" + text.substr(0, 40) + "' (" + std::to_string(text.size()) + " bytes)" +
         at(line.begin);
}

}  // namespace

std::size_t pick(Rng& rng, std::size_t n) {
  return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
}

std::string mutate_bytes(std::string& s, Rng& rng) {
  switch (pick(rng, 6)) {
    case 0:
    case 1: {
      if (s.empty()) break;
      const std::size_t pos = pick(rng, s.size());
      s[pos] = static_cast<char>(s[pos] ^ (1 << pick(rng, 8)));
      return "bit flip" + at(pos);
    }
    case 2: {
      const std::size_t pos = pick(rng, s.size() + 1);
      s.insert(pos, 1, static_cast<char>(pick(rng, 256)));
      return "inserted a byte" + at(pos);
    }
    case 3: {
      if (s.empty()) break;
      const std::size_t pos = pick(rng, s.size());
      const std::size_t n = 1 + pick(rng, 16);
      s.erase(pos, n);
      return "deleted " + std::to_string(n) + " bytes" + at(pos);
    }
    case 4: {
      const std::size_t pos = pick(rng, s.size() + 1);
      const std::size_t n = 1 + pick(rng, 64);
      s.insert(pos, s.substr(pick(rng, s.size() + 1), n));
      return "copied up to " + std::to_string(n) + " bytes to" + at(pos);
    }
    default: break;
  }
  const std::size_t pos = s.size();
  s.append(any(rng, kControl));
  return "appended bytes" + at(pos);
}

std::string mutate_text(std::string& s, Rng& rng, Syntax syntax) {
  // A config's checks are reached only past the TOML parser: favour well-formed changes.
  if (syntax == Syntax::kToml) {
    const std::size_t r = pick(rng, 9);
    if (r < 3) return toml_value(s, rng);
    if (r == 3) return toml_structure(s, rng);
  }
  switch (pick(rng, 16)) {
    case 0:
    case 1: return mutate_bytes(s, rng);
    case 2: {
      const std::size_t keep = pick(rng, s.size() + 1);
      s.resize(keep);
      return "truncated to " + std::to_string(keep) + " bytes";
    }
    case 3: {
      const Span line = random_line(s, rng);
      const std::string copy = s.substr(line.begin, line.end - line.begin) + "\n";
      const std::size_t to = random_line(s, rng).begin;
      s.insert(to, copy);
      return "copied the line" + at(line.begin) + " to" + at(to);
    }
    case 4: {
      const Span line = random_line(s, rng);
      s.erase(line.begin, std::min(line.end + 1, s.size()) - line.begin);
      return "removed the line" + at(line.begin);
    }
    case 5: return field_edit(s, rng, 2);
    case 6:
    case 7: return huge_number(s, rng);
    case 8:
    case 9: {
      const std::size_t pos = pick(rng, s.size() + 1);
      const std::string_view bytes = any(rng, kControl);
      s.insert(pos, bytes);
      return "control bytes (" + std::to_string(bytes.size()) + ")" + at(pos);
    }
    case 10: return field_edit(s, rng, 0);
    case 11: return field_edit(s, rng, 1);
    case 12: return long_line(s, rng);
    case 13: return line_ending(s, rng);
    case 14: {
      const std::size_t from = pick(rng, s.size() + 1);
      const std::size_t n = 1 + pick(rng, 4096);
      const std::string chunk = s.substr(from, n);
      const std::size_t to = pick(rng, s.size() + 1);
      s.insert(to, chunk);
      return "copied " + std::to_string(chunk.size()) + " bytes from" + at(from) + " to" + at(to);
    }
    default: {
      if (syntax == Syntax::kTrace && pick(rng, 4) == 0) {
        s.insert(0, "\x1f\x8b");  // plain text that claims to be gzip
        return "gzip magic before plain text";
      }
      return field_edit(s, rng, 1);
    }
  }
}

}  // namespace mirage::fuzz

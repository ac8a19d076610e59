// The reader for sacct's plain-text output: an optional lone integer (a stale row count), a
// header of column names, a line of dashes under it, then one row a job. A row holding a tab is
// split on tabs; any other is cut at the positions of the dash columns (the last running to the
// line's end), so that a blank value does not shift the fields after it. sacct cuts header names
// to the column width, so here names may match by prefix (SacctReader::map_columns).
#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "SacctReader.h"
#include "TraceText.h"
#include "mirage/core/Error.h"

namespace mirage::trace_detail {

void SacctFixedReader::read() {
  LineCursor lines(text_);
  std::string_view line;
  std::vector<std::string_view> fields;
  // Preamble: an optional lone integer (a stale row count), the header, the dashes line.
  enum { kStart, kHeader, kDashes } stage = kStart;
  long header_line_no = 0;
  std::array<std::string_view, 64> names_buf;
  std::vector<std::string_view> names;
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // [begin, end) of each column
  while (stage != kDashes && lines.next(line)) {
    if (trim(line).empty()) continue;
    if (stage == kStart && is_lone_integer(line)) {
      stage = kHeader;
      continue;
    }
    if (names.empty()) {
      const std::size_t n = split_whitespace(line, names_buf);
      if (n > names_buf.size())
        throw InputError(SourceLocation{name_, lines.line_no(), ""},
                         "sacct header has too many columns");
      names.assign(names_buf.begin(), names_buf.begin() + static_cast<std::ptrdiff_t>(n));
      header_line_no = lines.line_no();
      stage = kHeader;
      continue;
    }
    if (!is_dashes_line(line))
      throw InputError(
          SourceLocation{name_, lines.line_no(), ""},
          "expected the line of dashes under the sacct header, got " + quote(trim(line)));
    for (std::size_t i = 0; i < line.size();) {
      if (line[i] != '-') {
        ++i;
        continue;
      }
      const std::size_t b = i;
      while (i < line.size() && line[i] == '-') ++i;
      spans.emplace_back(b, i);
    }
    if (spans.size() != names.size())
      throw InputError(SourceLocation{name_, lines.line_no(), ""},
                       "the dashes line has " + std::to_string(spans.size()) +
                           " columns but the header names " + std::to_string(names.size()));
    stage = kDashes;
  }
  if (names.empty()) {  // nothing but blank lines (or a lone count)
    finish();
    return;
  }
  map_columns(names, header_line_no, true);
  if (stage != kDashes)
    throw InputError(SourceLocation{name_, header_line_no, ""},
                     "the sacct header is not followed by a line of dashes");

  while (lines.next(line)) {
    if (trim(line).empty()) continue;
    ++trace_.report.rows;
    try {
      if (line.find('\t') != std::string_view::npos) {
        split_char(line, '\t', fields);
        if (fields.size() != names.size())
          throw RowError{"",
                         "expected " + std::to_string(names.size()) +
                             " tab-separated fields as in the header, got " +
                             std::to_string(fields.size()),
                         "malformed row (wrong field count)"};
      } else {
        // Fixed columns: cut at the dash-column positions (the last runs to the line's end).
        fields.clear();
        for (std::size_t i = 0; i < spans.size(); ++i) {
          const std::size_t b = spans[i].first;
          const std::size_t e = i + 1 == spans.size() ? line.size() : spans[i].second;
          fields.push_back(b < line.size() ? line.substr(b, std::min(e, line.size()) - b)
                                           : std::string_view());
        }
      }
      row(fields, lines.line_no());
    } catch (const RowError& e) {
      row_failed(lines.line_no(), e);
    }
  }
  finish();
}

}  // namespace mirage::trace_detail

// The sacct --parsable2 reader: a header line of column names, then one '|'-separated row a job,
// as `sacct --parsable2 --format=...` writes it. Rows are split on '|' and must have as many
// fields as the header; sacct --parsable (not 2), which ends every line with '|', reads too.
#include <string>
#include <string_view>
#include <vector>

#include "SacctReader.h"
#include "TraceText.h"

namespace mirage::trace_detail {

void SacctParsableReader::read() {
  LineCursor lines(text_);
  std::string_view line;
  std::vector<std::string_view> fields;
  bool have_header = false;
  bool trailing_separator = false;  // sacct --parsable (not 2) ends every line with '|'
  while (lines.next(line)) {
    if (trim(line).empty()) continue;
    split_char(line, '|', fields);
    if (!have_header) {
      if (fields.size() > 1 && trim(fields.back()).empty()) {
        trailing_separator = true;
        fields.pop_back();
      }
      map_columns(fields, lines.line_no(), false);
      have_header = true;
      continue;
    }
    ++trace_.report.rows;
    if (trailing_separator && fields.size() == header_names_.size() + 1 &&
        trim(fields.back()).empty())
      fields.pop_back();
    try {
      if (fields.size() != header_names_.size())
        throw RowError{"",
                       "expected " + std::to_string(header_names_.size()) +
                           " '|'-separated fields as in the header, got " +
                           std::to_string(fields.size()),
                       "malformed row (wrong field count)"};
      row(fields, lines.line_no());
    } catch (const RowError& e) {
      row_failed(lines.line_no(), e);
    }
  }
  finish();
}

}  // namespace mirage::trace_detail

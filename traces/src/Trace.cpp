// The public entry points of the trace readers (Trace.h): format detection from the first lines,
// reading a whole file (gzip-compressed or not) into memory, and handing the text to the reader
// of its format. Each format's reader is a class in files of its own: SwfReader,
// SacctParsableReader and SacctFixedReader (the two sacct layouts share SacctReader); what all
// three share is in Reader.h and TraceText.h. Every row that is dropped or repaired is counted by
// reason in the report.
#include "mirage/traces/Trace.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "Gzip.h"
#include "SacctReader.h"
#include "SwfReader.h"
#include "TraceText.h"
#include "mirage/core/Error.h"

namespace mirage {
namespace {

using trace_detail::icontains;
using trace_detail::is_dashes_line;
using trace_detail::is_lone_integer;
using trace_detail::kSwfFields;
using trace_detail::LineCursor;
using trace_detail::parse_integer;
using trace_detail::quote;
using trace_detail::SacctFixedReader;
using trace_detail::SacctParsableReader;
using trace_detail::split_whitespace;
using trace_detail::SwfReader;

// ---------------------------------------------------------------------------------------------
// Format detection

bool looks_like_swf_row(std::string_view line) {
  std::array<std::string_view, kSwfFields> f;
  if (split_whitespace(line, f) != kSwfFields) return false;
  long long v;
  return std::all_of(f.begin(), f.end(), [&](std::string_view s) { return parse_integer(s, v); });
}

TraceFormat detect_format(std::string_view text, const std::string& name) {
  LineCursor lines(text);
  std::string_view line;
  auto next_nonblank = [&](std::string_view& out) {
    while (lines.next(out))
      if (!trim(out).empty()) return true;
    return false;
  };
  if (!next_nonblank(line))
    throw InputError(SourceLocation{name, 0, ""},
                     "cannot detect trace format: the file is empty; use --format");
  long first_line = lines.line_no();
  line = trim(line);
  if (line.front() == ';') return TraceFormat::kSwf;
  if (looks_like_swf_row(line)) return TraceFormat::kSwf;
  if (is_lone_integer(line)) {  // sacct fixed: a stale row count before the header
    if (!next_nonblank(line)) line = {};
    line = trim(line);
  }
  if (icontains(line, "jobid")) {
    if (line.find('|') != std::string_view::npos) return TraceFormat::kSacctParsable;
    std::string_view dashes;
    if (next_nonblank(dashes) && is_dashes_line(dashes)) return TraceFormat::kSacctFixed;
  }
  throw InputError(SourceLocation{name, first_line, ""},
                   "cannot detect trace format from " + quote(line) +
                       " (expected SWF, sacct --parsable2 or sacct fixed-column); use --format");
}

// ---------------------------------------------------------------------------------------------
// File input

// Reads the whole file in chunks until its end, so that pipes and files still being written read
// fully too (their size is not known in advance).
std::string read_file(const std::string& path) {
  std::FILE* raw = std::fopen(path.c_str(), "rb");
  if (!raw)
    throw InputError(SourceLocation{path, 0, ""},
                     std::string("cannot open: ") + std::strerror(errno));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(raw, &std::fclose);
  std::string data(1 << 20, '\0');
  std::size_t used = 0;
  while (true) {
    if (used == data.size()) data.resize(data.size() * 2);
    used += std::fread(data.data() + used, 1, data.size() - used, file.get());
    if (used == data.size()) continue;
    if (std::ferror(file.get()))
      throw InputError(SourceLocation{path, 0, ""}, "read error after " + std::to_string(used) +
                                                        " bytes: " + std::strerror(errno));
    break;  // end of file
  }
  data.resize(used);
  return data;
}

}  // namespace

// -------------------------------------------------------------------------------------------------

std::string_view to_string(TraceFormat format) {
  switch (format) {
    case TraceFormat::kAuto: return "auto";
    case TraceFormat::kSwf: return "swf";
    case TraceFormat::kSacctParsable: return "sacct";
    case TraceFormat::kSacctFixed: return "sacct-fixed";
  }
  return "unknown";
}

TraceFormat parse_trace_format(std::string_view text) {
  for (TraceFormat f : {TraceFormat::kAuto, TraceFormat::kSwf, TraceFormat::kSacctParsable,
                        TraceFormat::kSacctFixed})
    if (text == to_string(f)) return f;
  throw InputError(SourceLocation{"", 0, "format"},
                   "expected auto, swf, sacct or sacct-fixed, got " + quote(text));
}

std::size_t TraceReadReport::skipped_total() const {
  std::size_t total = 0;
  for (const auto& [reason, count] : skipped) total += count;
  return total;
}

Trace read_trace_text(std::string_view text, const std::string& name,
                      const TraceReadOptions& options) {
  Trace trace;
  trace.source = name;
  trace.format = options.format == TraceFormat::kAuto ? detect_format(text, name) : options.format;
  switch (trace.format) {
    case TraceFormat::kSwf: SwfReader(text, name, options, trace).read(); break;
    case TraceFormat::kSacctParsable: SacctParsableReader(text, name, options, trace).read(); break;
    case TraceFormat::kSacctFixed: SacctFixedReader(text, name, options, trace).read(); break;
    case TraceFormat::kAuto: break;  // unreachable: detect_format never returns kAuto
  }
  return trace;
}

Trace read_trace(const std::string& path, const TraceReadOptions& options) {
  std::string data = read_file(path);
  if (is_gzip(data)) data = gunzip(data, path);  // by magic bytes, whatever the name says
  return read_trace_text(data, path, options);
}

}  // namespace mirage

// The Standard Workload Format reader (SwfReader.h). Of the ';' header comments, MaxNodes,
// MaxProcs and UnixStartTime are used: they give the machine, the processors per node (SWF counts
// processors, mirage nodes) and the epoch that submit times count from. Every field of a row is
// checked as an integer so that a shifted or garbled row is caught rather than misread.
#include "SwfReader.h"

#include <algorithm>
#include <string>
#include <utility>

#include "TraceText.h"
#include "mirage/core/Error.h"

namespace mirage::trace_detail {
namespace {

constexpr std::array<const char*, kSwfFields> kSwfFieldNames = {
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable",
    "queue",
    "partition",
    "preceding job",
    "think time",
};

}  // namespace

void SwfReader::read() {
  LineCursor lines(text_);
  std::string_view line;
  std::array<std::string_view, kSwfFields> fields;
  bool header_done = false;
  while (lines.next(line)) {
    const std::string_view t = trim(line);
    if (t.empty()) continue;
    if (t.front() == ';') {
      if (!header_done) header_line(t.substr(1), lines.line_no());
      continue;
    }
    if (!header_done) {
      header_done = true;
      apply_header();
    }
    ++trace_.report.rows;
    const std::size_t n = split_whitespace(t, fields);
    try {
      if (n != kSwfFields)
        throw RowError{"", "expected 18 whitespace-separated SWF fields, got " + std::to_string(n),
                       "malformed row (wrong field count)"};
      row(fields, lines.line_no());
    } catch (const RowError& e) {
      row_failed(lines.line_no(), e);
    }
  }
  if (!header_done) apply_header();
  finish();
}

void SwfReader::header_line(std::string_view body, long line_no) {
  const std::size_t colon = body.find(':');
  if (colon == std::string_view::npos) return;
  const std::string_view key = trim(body.substr(0, colon));
  const std::string_view value = trim(body.substr(colon + 1));
  long long* target = nullptr;
  if (key == "MaxNodes")
    target = &max_nodes_;
  else if (key == "MaxProcs")
    target = &max_procs_;
  else if (key == "UnixStartTime")
    target = &unix_start_;
  if (!target) return;
  // The value may carry a note: "MaxNodes: 338 (batch partition; 512 total)".
  std::size_t len = 0;
  if (len < value.size() && value[len] == '-') ++len;
  while (len < value.size() && is_digit(value[len])) ++len;
  long long v = 0;
  const bool count = target != &unix_start_;
  if (!parse_integer(value.substr(0, len), v) || (count && (v <= 0 || v > kMaxCount))) {
    RowError e{std::string(key),
               count ? "expected a positive integer up to " + std::to_string(kMaxCount) + ", got " +
                           quote(value)
                     : "expected an integer, got " + quote(value),
               "malformed header " + std::string(key)};
    if (!options_.lenient) throw InputError(SourceLocation{name_, line_no, e.field}, e.message);
    add_example(1, format_location(SourceLocation{name_, line_no, e.field}) + ": " + e.message +
                       " (header value ignored)");
    return;
  }
  *target = v;
}

void SwfReader::apply_header() {
  trace_.unix_start_time = unix_start_ > 0 ? unix_start_ : 0;
  if (max_nodes_ > 0 && max_procs_ > max_nodes_) {
    procs_per_node_ = max_procs_ / max_nodes_;
    trace_.machine_nodes = static_cast<int>(max_nodes_);
    trace_.machine_source = "SWF header MaxNodes " + std::to_string(max_nodes_) + ", MaxProcs " +
                            std::to_string(max_procs_) + ": " + std::to_string(procs_per_node_) +
                            " processors per node";
  } else if (max_procs_ > 0) {
    trace_.machine_nodes = static_cast<int>(max_procs_);
    trace_.machine_source = "SWF header MaxProcs " + std::to_string(max_procs_) +
                            (max_nodes_ > 0 ? ", MaxNodes " + std::to_string(max_nodes_) : "") +
                            ": one processor per allocation unit";
  } else if (max_nodes_ > 0) {
    trace_.machine_nodes = static_cast<int>(max_nodes_);
    trace_.machine_source = "SWF header MaxNodes " + std::to_string(max_nodes_);
  }
}

long long SwfReader::number(const std::array<std::string_view, kSwfFields>& f, std::size_t i) {
  long long v;
  if (!parse_integer(f[i], v)) bad_field(kSwfFieldNames[i], "an integer", f[i]);
  return v;
}

void SwfReader::row(const std::array<std::string_view, kSwfFields>& f, long line_no) {
  // Every SWF field is numeric; check them all so that a shifted or garbled row is caught.
  long long v[kSwfFields];
  for (std::size_t i = 0; i < kSwfFields; ++i) v[i] = number(f, i);
  const long long id = v[0], submit = v[1], wait = v[2], runtime = v[3], alloc = v[4],
                  requested = v[7], limit = v[8];
  if (id < 0) return skip(line_no, Skip::kMissingJobId);
  if (submit < 0) return skip(line_no, Skip::kMissingSubmit);
  if (runtime == -1) return skip(line_no, Skip::kMissingRuntime);
  if (runtime < 0) return skip(line_no, Skip::kNegativeRuntime, "run time " + std::string(f[3]));
  if (wait < -1) return skip(line_no, Skip::kStartedBeforeSubmit, "wait " + std::string(f[2]));
  // -1 is SWF's "missing"; any other negative size is a broken row, not a quirk.
  if (alloc < -1) bad_field(kSwfFieldNames[4], "a processor count (-1 when missing)", f[4]);
  if (requested < -1) bad_field(kSwfFieldNames[7], "a processor count (-1 when missing)", f[7]);
  long long procs = alloc;
  if (procs <= 0) {
    if (requested <= 0) return skip(line_no, Skip::kMissingSize);
    procs = requested;
    adjust(Adjust::kSizeFromRequested);
  }
  Job job;
  job.id = id;
  if (v[11] >= 0) job.user = std::string(f[11]);
  if (v[14] >= 0) job.queue = std::string(f[14]);
  if (v[15] >= 0) job.partition = std::string(f[15]);
  job.submit = unix_start_ + submit;
  if (wait == -1) {
    // A log that does not say when jobs started still replays; only fidelity needs starts.
    job.run_time = runtime;
    adjust(Adjust::kNoStart);
  } else {
    job.start = job.submit + wait;
    job.end = job.start + runtime;
  }
  if (limit > 0) {
    job.time_limit = limit;
  } else {
    job.time_limit = limit_from_runtime(runtime);
    adjust(Adjust::kMissingLimit);
  }
  const long long nodes = (procs + procs_per_node_ - 1) / procs_per_node_;
  job.nodes = static_cast<int>(std::min(nodes, kMaxCount));
  keep(std::move(job));
}

}  // namespace mirage::trace_detail

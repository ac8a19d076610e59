#pragma once
// Reading real job logs into normalised Job records.
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mirage/core/Job.h"

namespace mirage {

enum class TraceFormat {
  kAuto,           // detect from content
  kSwf,            // Standard Workload Format (Parallel Workloads Archive), 18 fields
  kSacctParsable,  // sacct --parsable2: '|'-separated with a header line
  kSacctFixed,     // sacct's fixed-column / tab-separated text (header, dashes line)
};
std::string_view to_string(TraceFormat format);
// Accepts "auto", "swf", "sacct" (parsable2), "sacct-fixed"; throws InputError otherwise.
TraceFormat parse_trace_format(std::string_view text);

struct TraceReadOptions {
  TraceFormat format = TraceFormat::kAuto;
  // Strict (default): the first malformed row throws InputError naming file, line and field.
  // Lenient: malformed rows are skipped and counted by reason.
  bool lenient = false;
};

// What the reader did to the rows, so nothing is dropped or changed silently.
struct TraceReadReport {
  std::size_t rows = 0;                        // data rows seen (header and comment lines excluded)
  std::size_t jobs = 0;                        // jobs kept
  std::map<std::string, std::size_t> skipped;  // reason -> rows dropped
  std::map<std::string, std::size_t> adjusted;  // reason -> jobs kept but repaired / noted
  std::vector<std::string> examples;            // first few messages, "file:line: ..."
  std::size_t skipped_total() const;
};

struct Trace {
  std::string source;  // file name, for messages
  TraceFormat format = TraceFormat::kAuto;
  std::vector<Job> jobs;          // sorted by submit time (stable)
  int machine_nodes = 0;          // from the header (SWF MaxNodes/MaxProcs); 0 when unknown
  int machine_gpus_per_node = 0;  // 0 when unknown
  std::string machine_source;     // where machine_nodes came from; empty when unknown
  Seconds unix_start_time = 0;    // SWF UnixStartTime; 0 when absent
  TraceReadReport report;
};

// Reads a trace file; gzip-compressed files (by magic bytes) are read directly. A gzip file that
// is cut short or corrupt is an InputError in lenient mode too: lenient skips bad rows, it does
// not accept missing data.
Trace read_trace(const std::string& path, const TraceReadOptions& options = {});
// Same, from text in memory; `name` is used in messages.
Trace read_trace_text(std::string_view text, const std::string& name,
                      const TraceReadOptions& options = {});

}  // namespace mirage

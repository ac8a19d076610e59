// Trace readers: SWF, sacct --parsable2 and sacct fixed-column / tab-separated text, read plain
// or gzip-compressed. Every row that is dropped or repaired is counted by reason in the report.
//
// The parsers work on string_views into one buffer holding the whole (decompressed) file: no
// regex, no per-field allocation. Quirk counters are plain arrays, turned into the report's maps
// once at the end.
#include "mirage/traces/Trace.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "Gzip.h"
#include "mirage/core/Error.h"
#include "mirage/core/Time.h"

namespace mirage {
namespace {

// ---------------------------------------------------------------------------------------------
// Small text helpers

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

bool icontains(std::string_view haystack, std::string_view needle) {
  if (needle.size() > haystack.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= haystack.size(); ++i)
    if (iequals(haystack.substr(i, needle.size()), needle)) return true;
  return false;
}

// Parses an integer, optionally with a fractional part (rounded half up, away from zero), as
// some SWF converters write fractional seconds. Rejects anything else, including overflow.
bool parse_integer(std::string_view s, long long& out) {
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

bool is_lone_integer(std::string_view line) {
  line = trim(line);
  if (line.empty()) return false;
  return std::all_of(line.begin(), line.end(), is_digit);
}

bool is_dashes_line(std::string_view line) {
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

void split_char(std::string_view line, char sep, std::vector<std::string_view>& out) {
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
std::string quote(std::string_view s) {
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

// ---------------------------------------------------------------------------------------------
// Counted quirks: real-log features handled deliberately, in strict and lenient mode alike.

enum class Skip {
  kMissingJobId,
  kMissingSubmit,
  kMissingRuntime,
  kMissingSize,
  kNegativeRuntime,
  kStartedBeforeSubmit,
  kNeverStarted,
  kNotFinished,
  kJobStep,
  kCount
};
constexpr std::array<const char*, static_cast<std::size_t>(Skip::kCount)> kSkipNames = {
    "missing job id", "missing submit time", "missing runtime",
    "missing size",   "negative runtime",    "started before submit",
    "never started",  "not finished",        "job step",
};

enum class Adjust {
  kOutOfOrder,
  kZeroRuntime,
  kPastLimit,
  kMissingLimit,
  kUnlimited,
  kLargerThanMachine,
  kSizeFromRequested,
  kGpusRoundedUp,
  kHetJobComponent,
  kNoStart,
  kCount
};
constexpr std::array<const char*, static_cast<std::size_t>(Adjust::kCount)> kAdjustNames = {
    "out of submit order",
    "zero runtime",
    "ran past its time limit",
    "missing time limit: used runtime",
    "no numeric time limit (UNLIMITED/Partition_Limit): used runtime",
    "larger than the machine",
    "size from requested processors",
    "GPUs not divisible by nodes: rounded up per node",
    "heterogeneous job component",
    "missing wait time: replayed, not compared with a real wait",
};

// Node and GPU counts beyond this are kept at it, so that they fit the Job's int fields.
constexpr long long kMaxCount = 1LL << 30;

constexpr std::size_t kMaxExamples = 5;
constexpr std::size_t kMaxExamplesPerReason = 2;

// A malformed row, thrown inside a row parser and handled by Reader::row_failed.
struct RowError {
  std::string field;
  std::string message;
  std::string reason;  // key in report.skipped (lenient mode)
};

[[noreturn]] void bad_field(std::string_view field, std::string expected, std::string_view got) {
  throw RowError{std::string(field), "expected " + expected + ", got " + quote(got),
                 "malformed " + std::string(field)};
}

// ---------------------------------------------------------------------------------------------
// State shared by the three readers.

class Reader {
 public:
  Reader(std::string_view text, const std::string& name, const TraceReadOptions& options,
         Trace& trace)
      : text_(text), name_(name), options_(options), trace_(trace) {}

 protected:
  // Handles a malformed row: strict mode throws InputError, lenient mode skips and counts it.
  void row_failed(long line, const RowError& e) {
    if (!options_.lenient) throw InputError(SourceLocation{name_, line, e.field}, e.message);
    auto& count = trace_.report.skipped[e.reason];
    ++count;
    add_example(count, format_location(SourceLocation{name_, line, e.field}) + ": " + e.message);
  }

  void skip(long line, Skip reason, std::string_view detail = {}) {
    auto& count = skips_[static_cast<std::size_t>(reason)];
    ++count;
    if (trace_.report.examples.size() < kMaxExamples && count <= kMaxExamplesPerReason) {
      std::string msg = format_location(SourceLocation{name_, line, ""}) + ": skipped (" +
                        kSkipNames[static_cast<std::size_t>(reason)] + ")";
      if (!detail.empty()) msg += ": " + std::string(detail);
      trace_.report.examples.push_back(std::move(msg));
    }
  }

  void adjust(Adjust reason) { ++adjusts_[static_cast<std::size_t>(reason)]; }

  // Checks the common invariants of a normalised job and keeps it.
  void keep(Job&& job) {
    const Seconds runtime = job.runtime();
    if (runtime == 0) adjust(Adjust::kZeroRuntime);
    if (runtime > job.time_limit) adjust(Adjust::kPastLimit);
    if (trace_.machine_nodes > 0 && job.nodes > trace_.machine_nodes)
      adjust(Adjust::kLargerThanMachine);
    if (!trace_.jobs.empty() && job.submit < max_submit_) {
      adjust(Adjust::kOutOfOrder);
      out_of_order_ = true;
    }
    max_submit_ = std::max(max_submit_, job.submit);
    trace_.jobs.push_back(std::move(job));
  }

  // A time limit is needed by every scheduler model; when the log has none, the runtime is the
  // best stand-in (at least one minute, Slurm's smallest limit, so that no job has limit zero).
  static Seconds limit_from_runtime(Seconds runtime) { return std::max<Seconds>(runtime, kMinute); }

  void finish() {
    auto& report = trace_.report;
    for (std::size_t i = 0; i < skips_.size(); ++i)
      if (skips_[i] > 0) report.skipped[kSkipNames[i]] += skips_[i];
    for (std::size_t i = 0; i < adjusts_.size(); ++i)
      if (adjusts_[i] > 0) report.adjusted[kAdjustNames[i]] += adjusts_[i];
    if (out_of_order_)
      std::stable_sort(trace_.jobs.begin(), trace_.jobs.end(),
                       [](const Job& a, const Job& b) { return a.submit < b.submit; });
    report.jobs = trace_.jobs.size();
  }

  void add_example(std::size_t count_for_reason, std::string message) {
    if (trace_.report.examples.size() < kMaxExamples && count_for_reason <= kMaxExamplesPerReason)
      trace_.report.examples.push_back(std::move(message));
  }

  std::string_view text_;
  const std::string& name_;
  const TraceReadOptions& options_;
  Trace& trace_;

 private:
  std::array<std::size_t, static_cast<std::size_t>(Skip::kCount)> skips_{};
  std::array<std::size_t, static_cast<std::size_t>(Adjust::kCount)> adjusts_{};
  Seconds max_submit_ = 0;
  bool out_of_order_ = false;
};

// ---------------------------------------------------------------------------------------------
// SWF

constexpr std::size_t kSwfFields = 18;
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

class SwfReader : public Reader {
 public:
  using Reader::Reader;

  void read() {
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
          throw RowError{"",
                         "expected 18 whitespace-separated SWF fields, got " + std::to_string(n),
                         "malformed row (wrong field count)"};
        row(fields, lines.line_no());
      } catch (const RowError& e) {
        row_failed(lines.line_no(), e);
      }
    }
    if (!header_done) apply_header();
    finish();
  }

 private:
  void header_line(std::string_view body, long line_no) {
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
                 count ? "expected a positive integer up to " + std::to_string(kMaxCount) +
                             ", got " + quote(value)
                       : "expected an integer, got " + quote(value),
                 "malformed header " + std::string(key)};
      if (!options_.lenient) throw InputError(SourceLocation{name_, line_no, e.field}, e.message);
      add_example(1, format_location(SourceLocation{name_, line_no, e.field}) + ": " + e.message +
                         " (header value ignored)");
      return;
    }
    *target = v;
  }

  void apply_header() {
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

  static long long number(const std::array<std::string_view, kSwfFields>& f, std::size_t i) {
    long long v;
    if (!parse_integer(f[i], v)) bad_field(kSwfFieldNames[i], "an integer", f[i]);
    return v;
  }

  void row(const std::array<std::string_view, kSwfFields>& f, long line_no) {
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

  long long max_nodes_ = 0, max_procs_ = 0, unix_start_ = 0, procs_per_node_ = 1;
};

// ---------------------------------------------------------------------------------------------
// sacct: both layouts share the header handling and the row normalisation.

enum class Column {
  kJobId,
  kJobIdRaw,
  kUser,
  kUid,
  kPartition,
  kSubmit,
  kStart,
  kEnd,
  kTimelimit,
  kTimelimitRaw,
  kNNodes,
  kAllocTres,
  kReqTres,
  kState,
  kPriority,
  kCount
};
constexpr std::array<const char*, static_cast<std::size_t>(Column::kCount)> kColumnNames = {
    "JobID",     "JobIDRaw",     "User",   "UID",       "Partition", "Submit", "Start",    "End",
    "Timelimit", "TimelimitRaw", "NNodes", "AllocTRES", "ReqTRES",   "State",  "Priority",
};

class SacctReader : public Reader {
 public:
  using Reader::Reader;

 protected:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  // Maps header names to columns. Names match case-insensitively; in the fixed layout sacct cuts
  // names to the column width ("TimelimitR"), so a unique known name starting with it also
  // matches there (a trailing '+' truncation mark is ignored).
  void map_columns(const std::vector<std::string_view>& names, long line_no, bool allow_prefix) {
    header_names_.assign(names.begin(), names.end());
    col_.fill(kNone);
    for (std::size_t i = 0; i < names.size(); ++i) {
      std::string_view name = trim(names[i]);
      if (!name.empty() && name.back() == '+') name.remove_suffix(1);
      if (name.empty()) continue;
      std::size_t match = kNone;
      for (std::size_t c = 0; c < kColumnNames.size(); ++c)
        if (iequals(name, kColumnNames[c])) match = c;
      if (match == kNone && allow_prefix && name.size() >= 4) {
        int found = 0;
        for (std::size_t c = 0; c < kColumnNames.size(); ++c) {
          const std::string_view known = kColumnNames[c];
          if (known.size() > name.size() && iequals(known.substr(0, name.size()), name)) {
            match = c;
            ++found;
          }
        }
        if (found != 1) match = kNone;
      }
      if (match != kNone && col_[match] == kNone) col_[match] = i;
    }
    std::string missing;
    auto require = [&](bool ok, const char* what) {
      if (ok) return;
      if (!missing.empty()) missing += ", ";
      missing += what;
    };
    require(has(Column::kJobId) || has(Column::kJobIdRaw), "JobID");
    require(has(Column::kSubmit), "Submit");
    require(has(Column::kStart), "Start");
    require(has(Column::kEnd), "End");
    require(has(Column::kTimelimit) || has(Column::kTimelimitRaw), "Timelimit or TimelimitRaw");
    require(has(Column::kNNodes), "NNodes");
    if (!missing.empty())
      throw InputError(SourceLocation{name_, line_no, ""},
                       "sacct header lacks required column(s): " + missing);
  }

  bool has(Column c) const { return col_[static_cast<std::size_t>(c)] != kNone; }
  std::size_t col(Column c) const { return col_[static_cast<std::size_t>(c)]; }
  std::string header_name(Column c) const {
    return has(c) ? std::string(trim(header_names_[col(c)]))
                  : std::string(kColumnNames[static_cast<std::size_t>(c)]);
  }

  static bool is_unknown(std::string_view s) {
    return s.empty() || s == "Unknown" || s == "None" || s == "N/A";
  }

  Seconds time_field(const std::vector<std::string_view>& f, Column c) const {
    const std::string_view s = trim(f[col(c)]);
    auto t = parse_iso_time(s);
    if (!t) bad_field(header_name(c), "a time YYYY-MM-DDTHH:MM:SS", s);
    return *t;
  }

  // One data row, already split into fields matching the header.
  void row(const std::vector<std::string_view>& f, long line_no) {
    // Job id: "123", array task "123_4" (kept; id = 123), steps "123.batch" / "123.0" (skipped),
    // heterogeneous components "123+0" (kept; id = 123).
    const Column id_col = has(Column::kJobId) ? Column::kJobId : Column::kJobIdRaw;
    const std::string_view id_text = trim(f[col(id_col)]);
    if (id_text.empty()) return skip(line_no, Skip::kMissingJobId);
    if (id_text.find('.') != std::string_view::npos)
      return skip(line_no, Skip::kJobStep, quote(id_text));
    std::size_t digits = 0;
    while (digits < id_text.size() && is_digit(id_text[digits])) ++digits;
    long long id = 0;
    if (digits == 0 || !parse_integer(id_text.substr(0, digits), id) ||
        (digits < id_text.size() && id_text[digits] != '_' && id_text[digits] != '+'))
      bad_field(header_name(id_col), "a job id such as 123, 123_4 or 123.batch", id_text);
    const bool het = digits < id_text.size() && id_text[digits] == '+';

    const std::string_view submit_text = trim(f[col(Column::kSubmit)]);
    const std::string_view start_text = trim(f[col(Column::kStart)]);
    const std::string_view end_text = trim(f[col(Column::kEnd)]);
    if (is_unknown(submit_text)) return skip(line_no, Skip::kMissingSubmit);
    const Seconds submit = time_field(f, Column::kSubmit);
    if (is_unknown(start_text)) return skip(line_no, Skip::kNeverStarted);
    const Seconds start = time_field(f, Column::kStart);
    if (is_unknown(end_text)) return skip(line_no, Skip::kNotFinished);
    const Seconds end = time_field(f, Column::kEnd);

    const std::string_view nodes_text = trim(f[col(Column::kNNodes)]);
    long long nodes = 0;
    if (!nodes_text.empty() && !parse_integer(nodes_text, nodes))
      bad_field(header_name(Column::kNNodes), "a node count", nodes_text);

    // Time limit: Timelimit in Slurm's duration forms, or TimelimitRaw in minutes.
    const bool raw = !has(Column::kTimelimit);
    const Column limit_col = raw ? Column::kTimelimitRaw : Column::kTimelimit;
    const std::string_view limit_text = trim(f[col(limit_col)]);
    std::optional<Seconds> limit;
    bool unlimited = false;
    if (limit_text.empty() || limit_text == "Unknown" || limit_text == "None") {
      // missing
    } else if (iequals(limit_text, "UNLIMITED") || iequals(limit_text, "Partition_Limit") ||
               iequals(limit_text, "INFINITE")) {
      unlimited = true;
    } else if (raw) {
      long long minutes;
      // Slurm keeps limits in 32 bits of minutes; more is a broken row (and would overflow).
      if (!parse_integer(limit_text, minutes) || minutes < 0 || minutes > 0xffffffffLL)
        bad_field(header_name(limit_col), "a time limit in minutes", limit_text);
      limit = minutes * kMinute;
    } else {
      limit = parse_slurm_duration(limit_text);
      if (!limit)
        bad_field(header_name(limit_col), "a Slurm duration such as 2-00:00:00 or UNLIMITED",
                  limit_text);
    }

    if (start < submit) return skip(line_no, Skip::kStartedBeforeSubmit);
    if (end < start) return skip(line_no, Skip::kNegativeRuntime);
    if (nodes <= 0) return skip(line_no, Skip::kMissingSize);

    Job job;
    job.id = id;
    if (has(Column::kUser)) job.user = std::string(trim(f[col(Column::kUser)]));
    if (job.user.empty() && has(Column::kUid)) job.user = std::string(trim(f[col(Column::kUid)]));
    if (has(Column::kPartition)) job.partition = std::string(trim(f[col(Column::kPartition)]));
    job.submit = submit;
    job.start = start;
    job.end = end;
    job.nodes = static_cast<int>(std::min(nodes, kMaxCount));
    if (limit && *limit > 0) {
      job.time_limit = *limit;
    } else {
      job.time_limit = limit_from_runtime(end - start);
      adjust(unlimited ? Adjust::kUnlimited : Adjust::kMissingLimit);
    }
    job.gpus_per_node = gpus_per_node(f, job.nodes);
    if (has(Column::kPriority)) {
      const std::string_view text = trim(f[col(Column::kPriority)]);
      long long priority = -1;
      if (!text.empty() && (!parse_integer(text, priority) || priority < 0))
        bad_field(header_name(Column::kPriority), "a non-negative priority", text);
      job.priority = priority;
    }
    if (het) adjust(Adjust::kHetJobComponent);
    keep(std::move(job));
  }

  // GPUs from AllocTRES (else ReqTRES): "billing=4,cpu=4,gres/gpu=8,node=2" -> 8 / 2 nodes.
  // Typed counts ("gres/gpu:a100=8") are used only when the untyped total is absent.
  int gpus_per_node(const std::vector<std::string_view>& f, int nodes) {
    std::string_view tres;
    if (has(Column::kAllocTres)) tres = trim(f[col(Column::kAllocTres)]);
    if (tres.empty() && has(Column::kReqTres)) tres = trim(f[col(Column::kReqTres)]);
    if (tres.empty()) return 0;
    long long total = -1, typed = 0;
    std::size_t begin = 0;
    while (begin <= tres.size()) {
      std::size_t comma = tres.find(',', begin);
      if (comma == std::string_view::npos) comma = tres.size();
      const std::string_view item = tres.substr(begin, comma - begin);
      begin = comma + 1;
      const std::size_t eq = item.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string_view key = item.substr(0, eq);
      long long count;
      if (!parse_integer(item.substr(eq + 1), count)) continue;
      if (key == "gres/gpu")
        total = count;
      else if (key.substr(0, 9) == "gres/gpu:")
        typed = std::min(typed + count, kMaxCount);  // counts are below 10^18: no overflow
    }
    const long long gpus = total >= 0 ? total : typed;
    if (gpus <= 0 || nodes <= 0) return 0;
    if (gpus % nodes != 0) adjust(Adjust::kGpusRoundedUp);
    return static_cast<int>(std::min((gpus + nodes - 1) / nodes, kMaxCount));
  }

  std::vector<std::string_view> header_names_;
  std::array<std::size_t, static_cast<std::size_t>(Column::kCount)> col_{};
};

class SacctParsableReader : public SacctReader {
 public:
  using SacctReader::SacctReader;

  void read() {
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
};

class SacctFixedReader : public SacctReader {
 public:
  using SacctReader::SacctReader;

  void read() {
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
};

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

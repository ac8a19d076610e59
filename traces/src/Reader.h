#pragma once
// What the three trace readers share: the counted quirks (rows skipped and jobs adjusted, by
// reason), the malformed-row error and its strict / lenient handling, and Reader, the base class
// that keeps jobs and fills the read report. Private to the trace readers; each format's reader
// derives from Reader in its own file (SwfReader.h, SacctReader.h). Definitions are in Reader.cpp.
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "mirage/core/Time.h"
#include "mirage/traces/Trace.h"

namespace mirage::trace_detail {

// ---------------------------------------------------------------------------------------------
// Counted quirks: real-log features handled deliberately, in strict and lenient mode alike. Their
// names in the report are kSkipNames and kAdjustNames in Reader.cpp, in the same order.

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

// Node and GPU counts beyond this are kept at it, so that they fit the Job's int fields.
inline constexpr long long kMaxCount = 1LL << 30;

// A malformed row, thrown inside a row parser and handled by Reader::row_failed.
struct RowError {
  std::string field;
  std::string message;
  std::string reason;  // key in report.skipped (lenient mode)
};

// Throws the RowError for a field that holds `got` where `expected` was due.
[[noreturn]] void bad_field(std::string_view field, std::string expected, std::string_view got);

// ---------------------------------------------------------------------------------------------
// State shared by the three readers.

class Reader {
 public:
  Reader(std::string_view text, const std::string& name, const TraceReadOptions& options,
         Trace& trace)
      : text_(text), name_(name), options_(options), trace_(trace) {}

 protected:
  // Handles a malformed row: strict mode throws InputError, lenient mode skips and counts it.
  void row_failed(long line, const RowError& e);

  void skip(long line, Skip reason, std::string_view detail = {});

  void adjust(Adjust reason);

  // Checks the common invariants of a normalised job and keeps it.
  void keep(Job&& job);

  // A time limit is needed by every scheduler model; when the log has none, the runtime is the
  // best stand-in (at least one minute, Slurm's smallest limit, so that no job has limit zero).
  static Seconds limit_from_runtime(Seconds runtime);

  void finish();

  void add_example(std::size_t count_for_reason, std::string message);

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

}  // namespace mirage::trace_detail

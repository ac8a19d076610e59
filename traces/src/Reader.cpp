// Reader (Reader.h): the counting of skipped and adjusted rows, strict / lenient handling of a
// malformed row, keeping a job and finishing the read report. The quirk counters are plain
// arrays, turned into the report's maps once at the end.
#include "Reader.h"

#include <algorithm>
#include <utility>

#include "TraceText.h"
#include "mirage/core/Error.h"

namespace mirage::trace_detail {
namespace {

constexpr std::array<const char*, static_cast<std::size_t>(Skip::kCount)> kSkipNames = {
    "missing job id", "missing submit time", "missing runtime",
    "missing size",   "negative runtime",    "started before submit",
    "never started",  "not finished",        "job step",
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

constexpr std::size_t kMaxExamples = 5;
constexpr std::size_t kMaxExamplesPerReason = 2;

}  // namespace

[[noreturn]] void bad_field(std::string_view field, std::string expected, std::string_view got) {
  throw RowError{std::string(field), "expected " + expected + ", got " + quote(got),
                 "malformed " + std::string(field)};
}

void Reader::row_failed(long line, const RowError& e) {
  if (!options_.lenient) throw InputError(SourceLocation{name_, line, e.field}, e.message);
  auto& count = trace_.report.skipped[e.reason];
  ++count;
  add_example(count, format_location(SourceLocation{name_, line, e.field}) + ": " + e.message);
}

void Reader::skip(long line, Skip reason, std::string_view detail) {
  auto& count = skips_[static_cast<std::size_t>(reason)];
  ++count;
  if (trace_.report.examples.size() < kMaxExamples && count <= kMaxExamplesPerReason) {
    std::string msg = format_location(SourceLocation{name_, line, ""}) + ": skipped (" +
                      kSkipNames[static_cast<std::size_t>(reason)] + ")";
    if (!detail.empty()) msg += ": " + std::string(detail);
    trace_.report.examples.push_back(std::move(msg));
  }
}

void Reader::adjust(Adjust reason) {
  ++adjusts_[static_cast<std::size_t>(reason)];
}

void Reader::keep(Job&& job) {
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

Seconds Reader::limit_from_runtime(Seconds runtime) {
  return std::max<Seconds>(runtime, kMinute);
}

void Reader::finish() {
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

void Reader::add_example(std::size_t count_for_reason, std::string message) {
  if (trace_.report.examples.size() < kMaxExamples && count_for_reason <= kMaxExamplesPerReason)
    trace_.report.examples.push_back(std::move(message));
}

}  // namespace mirage::trace_detail

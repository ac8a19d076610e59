#pragma once
// The Standard Workload Format reader (Parallel Workloads Archive): ';' header comments, then one
// row a job of 18 whitespace-separated integers, -1 where a value is missing. Private to the trace
// readers; Trace.cpp's format detection uses kSwfFields. Definitions are in SwfReader.cpp.
#include <array>
#include <cstddef>
#include <string_view>

#include "Reader.h"

namespace mirage::trace_detail {

inline constexpr std::size_t kSwfFields = 18;

class SwfReader : public Reader {
 public:
  using Reader::Reader;

  void read();

 private:
  void header_line(std::string_view body, long line_no);
  void apply_header();
  static long long number(const std::array<std::string_view, kSwfFields>& f, std::size_t i);
  void row(const std::array<std::string_view, kSwfFields>& f, long line_no);

  long long max_nodes_ = 0, max_procs_ = 0, unix_start_ = 0, procs_per_node_ = 1;
};

}  // namespace mirage::trace_detail

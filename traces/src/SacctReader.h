#pragma once
// What the two sacct layouts share (SacctParsableReader.cpp, SacctFixedReader.cpp): mapping the
// header's names to the columns mirage reads, and normalising one row, already split into
// fields, into a Job. The layouts differ only in how lines become the header and fields.
// Private to the trace readers; definitions are in SacctReader.cpp.
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "Reader.h"

namespace mirage::trace_detail {

// The columns mirage reads; their header names are kColumnNames in SacctReader.cpp, in this order.
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

class SacctReader : public Reader {
 public:
  using Reader::Reader;

 protected:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  // Maps header names to columns. Names match case-insensitively; in the fixed layout sacct cuts
  // names to the column width ("TimelimitR"), so a unique known name starting with it also
  // matches there (a trailing '+' truncation mark is ignored).
  void map_columns(const std::vector<std::string_view>& names, long line_no, bool allow_prefix);

  bool has(Column c) const;
  std::size_t col(Column c) const;
  std::string header_name(Column c) const;

  static bool is_unknown(std::string_view s);

  Seconds time_field(const std::vector<std::string_view>& f, Column c) const;

  // One data row, already split into fields matching the header.
  void row(const std::vector<std::string_view>& f, long line_no);

  // GPUs from AllocTRES (else ReqTRES): "billing=4,cpu=4,gres/gpu=8,node=2" -> 8 / 2 nodes.
  // Typed counts ("gres/gpu:a100=8") are used only when the untyped total is absent.
  int gpus_per_node(const std::vector<std::string_view>& f, int nodes);

  std::vector<std::string_view> header_names_;
  std::array<std::size_t, static_cast<std::size_t>(Column::kCount)> col_{};
};

// sacct --parsable2 (SacctParsableReader.cpp).
class SacctParsableReader : public SacctReader {
 public:
  using SacctReader::SacctReader;

  void read();
};

// sacct's fixed-column / tab-separated text (SacctFixedReader.cpp).
class SacctFixedReader : public SacctReader {
 public:
  using SacctReader::SacctReader;

  void read();
};

}  // namespace mirage::trace_detail

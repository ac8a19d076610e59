// The sacct header mapping and row normalisation (SacctReader.h) that both sacct layouts use.
// A row's job id, times, node count, time limit, GPUs (from the TRES strings) and priority are
// read by column name, so the columns may come in any order and unknown ones are ignored.
#include "SacctReader.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "TraceText.h"
#include "mirage/core/Error.h"
#include "mirage/core/Time.h"

namespace mirage::trace_detail {
namespace {

constexpr std::array<const char*, static_cast<std::size_t>(Column::kCount)> kColumnNames = {
    "JobID",     "JobIDRaw",     "User",   "UID",       "Partition", "Submit", "Start",    "End",
    "Timelimit", "TimelimitRaw", "NNodes", "AllocTRES", "ReqTRES",   "State",  "Priority",
};

}  // namespace

void SacctReader::map_columns(const std::vector<std::string_view>& names, long line_no,
                              bool allow_prefix) {
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

bool SacctReader::has(Column c) const {
  return col_[static_cast<std::size_t>(c)] != kNone;
}

std::size_t SacctReader::col(Column c) const {
  return col_[static_cast<std::size_t>(c)];
}

std::string SacctReader::header_name(Column c) const {
  return has(c) ? std::string(trim(header_names_[col(c)]))
                : std::string(kColumnNames[static_cast<std::size_t>(c)]);
}

bool SacctReader::is_unknown(std::string_view s) {
  return s.empty() || s == "Unknown" || s == "None" || s == "N/A";
}

Seconds SacctReader::time_field(const std::vector<std::string_view>& f, Column c) const {
  const std::string_view s = trim(f[col(c)]);
  auto t = parse_iso_time(s);
  if (!t) bad_field(header_name(c), "a time YYYY-MM-DDTHH:MM:SS", s);
  return *t;
}

void SacctReader::row(const std::vector<std::string_view>& f, long line_no) {
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

int SacctReader::gpus_per_node(const std::vector<std::string_view>& f, int nodes) {
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

}  // namespace mirage::trace_detail

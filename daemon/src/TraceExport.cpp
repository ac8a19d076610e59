#include "mirage/daemon/TraceExport.h"

#include <algorithm>

#include "mirage/core/Time.h"

namespace mirage::daemon {

std::size_t export_swf(const std::vector<SlurmJob>& all, const TraceExportOptions& o,
                       std::ostream& out) {
  std::vector<const SlurmJob*> jobs;
  for (const auto& j : all) {
    if (j.start == kUnknownTime || j.end == kUnknownTime || j.submit == kUnknownTime) continue;
    if (j.end < j.start || j.start < j.submit) continue;
    if (!o.partition.empty() && j.partition != o.partition) continue;
    jobs.push_back(&j);
  }
  std::sort(jobs.begin(), jobs.end(), [](const SlurmJob* a, const SlurmJob* b) {
    return a->submit != b->submit ? a->submit < b->submit : a->id < b->id;
  });
  int nodes = o.machine_nodes;
  for (const auto* j : jobs) nodes = std::max(nodes, j->nodes);
  const int per_node = std::max(1, o.gpus_per_node);
  const Seconds t0 = jobs.empty() ? 0 : jobs.front()->submit;
  out << "; Version: 2.2\n";
  out << "; Computer: " << o.computer << "\n";
  out << "; Note: jobs observed live by the mirage daemon; processors are "
      << (o.gpus_per_node > 0 ? "GPUs (" + std::to_string(per_node) + " per node)" : "nodes")
      << "\n";
  if (!o.partition.empty()) out << "; Partition: 1 " << o.partition << "\n";
  out << "; UnixStartTime: " << t0 << "\n";
  out << "; StartTime: " << format_iso_time(t0) << "\n";
  out << "; MaxJobs: " << jobs.size() << "\n";
  out << "; MaxRecords: " << jobs.size() << "\n";
  out << "; MaxNodes: " << nodes << "\n";
  out << "; MaxProcs: " << static_cast<long long>(nodes) * per_node << "\n";
  std::size_t n = 0;
  for (const auto* j : jobs) {
    const long long procs = static_cast<long long>(j->nodes) * per_node;
    int status = 1;
    if (j->state == SlurmJobState::kCancelled)
      status = 5;
    else if (j->state != SlurmJobState::kCompleted && j->state != SlurmJobState::kTimeout)
      status = 0;
    out << ++n << ' ' << (j->submit - t0) << ' ' << (j->start - j->submit) << ' '
        << (j->end - j->start) << ' ' << procs << " -1 -1 " << procs << ' '
        << (j->time_limit > 0 ? j->time_limit : -1) << " -1 " << status << ' ' << j->user_id
        << " -1 -1 1 1 -1 -1\n";
  }
  return n;
}

}  // namespace mirage::daemon

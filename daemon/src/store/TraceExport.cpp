#include "mirage/daemon/store/TraceExport.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "mirage/core/Time.h"
#include "mirage/daemon/store/CampaignStore.h"

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

StoreExport export_store(const CampaignStore& store, const std::string& partition,
                         const std::string& path) {
  TraceExportOptions options;
  const auto machine = nlohmann::json::parse(store.value(kMachineKey), nullptr, false);
  const bool known = machine.is_object();
  options.partition = !partition.empty() ? partition
                      : known            ? machine.value("partition", std::string())
                                         : std::string();
  if (known) {
    options.machine_nodes = machine.value("nodes", 0);
    options.gpus_per_node = machine.value("gpus_per_node", 0);
  }
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  StoreExport out;
  out.jobs = export_swf(store.finished_observed_jobs(), options, f);
  f.close();
  if (!f) throw std::runtime_error("cannot write " + path);
  out.partition = options.partition;
  return out;
}

}  // namespace mirage::daemon

#include "mirage/daemon/store/TraceExport.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "mirage/core/Time.h"
#include "mirage/daemon/store/CampaignStore.h"
#include "mirage/daemon/store/StoreLock.h"
#include "store/PathChecks.h"

namespace mirage::daemon {

namespace {

// Why the trace cannot be written at `out`: it is the store or one of the files beside it that
// SQLite and the store's lock keep (writing it would truncate the campaigns). nullopt when not.
std::optional<std::string> out_is_the_stores(const std::string& store, const std::string& out) {
  // SQLite keeps its files beside the store's real file (it follows a symlink to the store);
  // mirage its lock and the store being made beside the path as given.
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::weakly_canonical(store, ec);
  const std::string sqlite_base = ec ? store : real.string();
  std::vector<std::pair<std::string, std::string>> own = {
      {store, "the store"},
      {StoreLock::lock_path(store), "the store's lock file"},
      {CampaignStore::staging_path(store), "the store being made"}};
  for (const char* suffix : kSqliteCompanionSuffixes)
    own.emplace_back(sqlite_base + suffix, std::string("the store's ") + suffix + " file");
  for (const auto& [path, what] : own)
    if (same_file(out, path))
      return "cannot write the trace to " + out + ": it is " + path + ", " + what + " (store " +
             store + "); name another file for --out";
  return std::nullopt;
}

}  // namespace

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
  if (const auto why = out_is_the_stores(store.path(), path)) throw std::runtime_error(*why);
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

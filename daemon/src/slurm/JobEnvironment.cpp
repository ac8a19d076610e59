#include "mirage/daemon/slurm/JobEnvironment.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

namespace mirage::daemon {
namespace {

// The variables the daemon gives each segment (MIRAGE_HANDOFF and MIRAGE_HANDOFF_WAIT only in
// hand-off mode, MIRAGE_ADOPTED_CAMPAIGN_ID only to a campaign that adopted a mirage job).
constexpr std::string_view kDaemonVariables[] = {
    "MIRAGE_CAMPAIGN_ID", "MIRAGE_CAMPAIGN_NAME", "MIRAGE_SEGMENT",
    "MIRAGE_SEGMENTS",    "MIRAGE_ATTEMPT",       "MIRAGE_DONE_FILE",
    "MIRAGE_HANDOFF",     "MIRAGE_HANDOFF_WAIT",  "MIRAGE_ADOPTED_CAMPAIGN_ID"};

// What Slurm sets in a batch job and in its steps (sbatch.1 and srun.1 of 22.05 and 24.11,
// OUTPUT ENVIRONMENT VARIABLES), as whole names...
constexpr std::string_view kJobScopedNames[] = {
    "SLURMD_NODENAME",      "SLURM_CLUSTER_NAME",
    "SLURM_CONTAINER",      "SLURM_CPUS_ON_NODE",
    "SLURM_CPUS_PER_GPU",   "SLURM_CPUS_PER_TASK",
    "SLURM_CPU_FREQ_REQ",   "SLURM_DISTRIBUTION",
    "SLURM_DIST_PLANESIZE", "SLURM_EXPORT_ENV",
    "SLURM_GPUS",           "SLURM_GPUS_ON_NODE",
    "SLURM_GPUS_PER_NODE",  "SLURM_GPUS_PER_SOCKET",
    "SLURM_GPUS_PER_TASK",  "SLURM_GPU_BIND",
    "SLURM_GPU_FREQ",       "SLURM_GTIDS",
    "SLURM_JOBID",          "SLURM_LAUNCH_NODE_IPADDR",
    "SLURM_LOCALID",        "SLURM_MEM_PER_CPU",
    "SLURM_MEM_PER_GPU",    "SLURM_MEM_PER_NODE",
    "SLURM_NNODES",         "SLURM_NODEID",
    "SLURM_NODELIST",       "SLURM_NODE_ALIASES",
    "SLURM_NPROCS",         "SLURM_NTASKS",
    "SLURM_OVERCOMMIT",     "SLURM_PRIO_PROCESS",
    "SLURM_PROCID",         "SLURM_PROFILE",
    "SLURM_RESTART_COUNT",  "SLURM_SHARDS_ON_NODE",
    "SLURM_STEPID",         "SLURM_SUBMIT_DIR",
    "SLURM_SUBMIT_HOST",    "SLURM_TASKS_PER_NODE",
    "SLURM_TASK_PID",       "SLURM_THREADS_PER_CORE",
};

// ...the rendezvous of the job's training ranks (the segment template exports MASTER_ADDR/PORT;
// the trainer reads the MIRAGE_ ones over Slurm's): in a segment they would send its ranks to
// that job's rendezvous, or make every task the same rank...
constexpr std::string_view kJobRendezvousNames[] = {
    "MASTER_ADDR",       "MASTER_PORT",       "MIRAGE_RANK",
    "MIRAGE_WORLD_SIZE", "MIRAGE_LOCAL_RANK", "MIRAGE_RUN_ID",
};

// ...and as families (a release adds members: 24.11's SLURM_JOB_START_TIME, SLURM_TRES_PER_TASK).
// SLURM_SPANK_*: the outer job's plugin options (a container image), which sbatch applies again.
constexpr std::string_view kJobScopedPrefixes[] = {
    "SLURM_JOB_",       "SLURM_STEP_",       "SLURM_ARRAY_",        "SLURM_HET_",
    "SLURM_PACK_",      "SLURM_NTASKS_PER_", "SLURM_CPU_BIND",      "SLURM_MEM_BIND",
    "SLURM_SRUN_COMM_", "SLURM_TRES_",       "SLURM_TOPOLOGY_ADDR", "SLURM_SPANK_",
};

std::string_view name_of(std::string_view entry) {
  return entry.substr(0, entry.find('='));
}

bool contains(const auto& list, std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

// The entries of an --export list, split at the commas outside quotes (sbatch's
// find_quote_token); a whole entry in quotes loses them.
std::vector<std::string> export_entries(std::string_view list) {
  std::vector<std::string> out;
  std::string cur;
  char quote = 0;
  for (const char c : list) {
    if (quote) {
      quote = c == quote ? 0 : quote;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  out.push_back(cur);
  for (auto& e : out)
    if (e.size() >= 2 && (e.front() == '\'' || e.front() == '"') && e.back() == e.front())
      e = e.substr(1, e.size() - 2);
  return out;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

bool is_daemon_variable(std::string_view entry) {
  return contains(kDaemonVariables, name_of(entry));
}

bool is_job_scoped_variable(std::string_view entry) {
  const std::string_view name = name_of(entry);
  // SLURM_STEPMGR (24.05's step manager node) is no SLURM_STEP_ name.
  if (contains(kJobScopedNames, name) || contains(kJobRendezvousNames, name) ||
      name == "SLURM_STEPMGR")
    return true;
  // A heterogeneous job's per-component copies: SLURM_NTASKS_HET_GROUP_1.
  if (name.rfind("SLURM", 0) == 0 && (name.find("_HET_GROUP_") != std::string_view::npos ||
                                      name.find("_PACK_GROUP_") != std::string_view::npos))
    return true;
  return std::any_of(std::begin(kJobScopedPrefixes), std::end(kJobScopedPrefixes),
                     [&](std::string_view p) { return name.rfind(p, 0) == 0; });
}

std::string outer_job_of(const std::vector<std::string>& environment) {
  for (const auto& e : environment)
    if (e.rfind("SLURM_JOB_ID=", 0) == 0) return e.substr(e.find('=') + 1);
  return "";
}

std::vector<std::string> without_outer_job_variables(std::vector<std::string> environment,
                                                     std::vector<std::string>& dropped) {
  if (outer_job_of(environment).empty()) return environment;
  std::vector<std::string> kept;
  for (auto& e : environment)
    if (is_job_scoped_variable(e))
      dropped.emplace_back(name_of(e));
    else
      kept.push_back(std::move(e));
  return kept;
}

std::string export_value(std::string_view asked, const std::vector<std::string>& environment) {
  if (asked.empty()) return "ALL";
  std::vector<std::string> given;  // the names the list gives a value or the shell's value
  for (const auto& e : export_entries(asked)) given.emplace_back(name_of(e));
  std::vector<std::string> names;
  for (const auto& e : environment) {
    if (e.rfind("MIRAGE_", 0) != 0) continue;
    const std::string name(name_of(e));
    if (contains(names, name) || (!is_daemon_variable(e) && contains(given, name))) continue;
    names.push_back(name);
  }
  const std::string list = fmt::format("{}", fmt::join(names, ","));
  const std::string mode = upper(asked);
  if (mode == "NONE" || mode == "NIL") return list.empty() ? std::string(asked) : list;
  return list.empty() ? std::string(asked) : std::string(asked) + "," + list;
}

}  // namespace mirage::daemon

// libslurm behind the SlurmClient seam. Compiled only when libslurm is found.
#include "mirage/daemon/slurm/LibSlurmClient.h"

#include <pwd.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurmdb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "LibSlurmCompat.h"
#include "mirage/daemon/slurm/OutputFile.h"
#include "mirage/daemon/slurm/SacctLookup.h"
#include "mirage/daemon/slurm/SbatchSubmitter.h"

// The will-run reply's destructor, which slurm.h names but does not declare; weak, so that a
// libslurm without it still links.
extern "C" void slurm_free_will_run_response_msg(will_run_response_msg_t* msg)
    __attribute__((weak));

namespace mirage::daemon {
namespace {

std::string reason_name(uint16_t reason) {
  if (const char* name = slurm_reason_name(reason)) return name;
  return "reason " + std::to_string(reason);
}

constexpr Seconds kInfiniteLimit = 365 * kDay;

std::string str(const char* s) {
  return s ? std::string(s) : std::string();
}

[[noreturn]] void fail(const std::string& what) {
  const int code = last_slurm_error();
  throw SlurmError(what + ": " + slurm_strerror(code) + " (errno " + std::to_string(code) + ")",
                   code, slurm_error_is_transient(code));
}

// A node no pending job can have now: down or not yet configured, or idle but drained, failing,
// in maintenance or reserved (a node that runs a job is counted by that job until it ends).
bool node_unavailable(uint32_t state) {
  const uint32_t base = state & NODE_STATE_BASE;
  if (base == NODE_STATE_DOWN || base == NODE_STATE_FUTURE || base == NODE_STATE_UNKNOWN)
    return true;
  if (base == NODE_STATE_ALLOCATED || base == NODE_STATE_MIXED) return false;
  return (state & (NODE_STATE_DRAIN | NODE_STATE_FAIL | NODE_STATE_MAINT | NODE_STATE_RES)) != 0;
}

// The per-user limits on running work that apply to the daemon's user, as slurmctld's
// association manager holds them (the records slurmdbd keeps, read without a connection to it):
// the user's default association (MaxJobs, GrpTRES=node), its default QOS and a partition's QOS
// (MaxJobsPerUser, MaxTRESPerUser=node), the tightest of each. None where the cluster runs no
// accounting or the call fails: the forecast then knows no limits.
class AssociationLimits {
 public:
  explicit AssociationLimits(const std::string& user) {
    if (user.empty()) {
      note_ = "none: the cluster runs no accounting (slurmdbd)";
      return;
    }
    assoc_mgr_info_request_msg_t req{};
    req.flags = ASSOC_MGR_INFO_FLAG_ASSOC | ASSOC_MGR_INFO_FLAG_QOS;
    req.user_list = slurm_list_create(nullptr);
    slurm_list_append(req.user_list, const_cast<char*>(user.c_str()));
    assoc_mgr_info_msg_t* msg = nullptr;
    const int rc = slurm_load_assoc_mgr_info(&req, &msg);
    slurm_list_destroy(req.user_list);
    if (rc != SLURM_SUCCESS || msg == nullptr) {
      note_ = std::string("none: slurmctld's association manager did not answer (") +
              slurm_strerror(last_slurm_error()) + ")";
      return;
    }
    note_ = "slurmctld's association manager";
    std::unique_ptr<assoc_mgr_info_msg_t, void (*)(assoc_mgr_info_msg_t*)> guard(
        msg, slurm_free_assoc_mgr_info_msg);
    std::uint32_t default_qos = 0;
    for_each<slurmdb_assoc_rec_t>(msg->assoc_list, [&](const slurmdb_assoc_rec_t& a) {
      if (!a.user || user != a.user || !a.is_def) return;
      default_qos = a.def_qos_id;
      if (a.max_jobs != INFINITE && a.max_jobs != NO_VAL)
        association_.max_running_jobs =
            tighter_limit(association_.max_running_jobs, static_cast<int>(a.max_jobs));
      association_.max_running_nodes =
          tighter_limit(association_.max_running_nodes, parse_node_limit(str(a.grp_tres)));
    });
    own_ = association_;
    for_each<slurmdb_qos_rec_t>(msg->qos_list, [&](const slurmdb_qos_rec_t& q) {
      UserLimits l;
      if (q.max_jobs_pu != INFINITE && q.max_jobs_pu != NO_VAL)
        l.max_running_jobs = static_cast<int>(q.max_jobs_pu);
      l.max_running_nodes = parse_node_limit(str(q.max_tres_pu));
      qos_.push_back({str(q.name), l});
      // Without a default QOS of its own, an association runs under "normal".
      if ((default_qos != 0 && q.id == default_qos) ||
          (default_qos == 0 && str(q.name) == "normal"))
        own_ = tighten(own_, l);
    });
  }

  const std::string& note() const { return note_; }

  UserLimits in_partition(const char* partition_qos) const {
    return tighten(own_, partition_qos_limits(partition_qos));
  }
  // Were the job submitted under each QOS instead of the default one.
  std::vector<std::pair<std::string, UserLimits>> by_qos(const char* partition_qos) const {
    std::vector<std::pair<std::string, UserLimits>> out;
    const UserLimits part = partition_qos_limits(partition_qos);
    for (const auto& [name, l] : qos_)
      out.push_back({name, tighten(tighten(association_, l), part)});
    return out;
  }

 private:
  template <class T, class F>
  static void for_each(SlurmList list, F&& f) {
    if (!list) return;
    SlurmListIterator it = slurm_list_iterator_create(list);
    while (auto* item = static_cast<T*>(slurm_list_next(it))) f(*item);
    slurm_list_iterator_destroy(it);
  }
  static UserLimits tighten(UserLimits a, const UserLimits& b) {
    a.max_running_jobs = tighter_limit(a.max_running_jobs, b.max_running_jobs);
    a.max_running_nodes = tighter_limit(a.max_running_nodes, b.max_running_nodes);
    return a;
  }

  UserLimits partition_qos_limits(const char* partition_qos) const {
    for (const auto& [name, l] : qos_)
      if (partition_qos && name == partition_qos) return l;
    return {};
  }

  UserLimits association_;  // the default association's own limits
  UserLimits own_;          // with its default QOS's
  std::vector<std::pair<std::string, UserLimits>> qos_;
  std::string note_;
};

// Calls f(k) for each node index k below `count` in libslurm's node_inx: pairs of first and
// last index, ended by -1.
template <class F>
void for_each_node(const int32_t* inx, std::size_t count, F&& f) {
  for (const int32_t* r = inx; r && r[0] >= 0 && r[1] >= 0; r += 2)
    for (int32_t n = r[0]; n <= r[1] && n < static_cast<int32_t>(count); ++n)
      f(static_cast<std::size_t>(n));
}

// Whether `user` is among a reservation's users ("alice,bob"; "-carol" excludes): one the
// user may run in is no capacity lost to them.
bool among_users(const std::string& users, const std::string& user) {
  if (user.empty()) return false;
  std::size_t from = 0;
  while (from <= users.size()) {
    const std::size_t cut = users.find(',', from);
    const std::string name = users.substr(from, cut == std::string::npos ? cut : cut - from);
    if (name == user) return true;
    if (cut == std::string::npos) break;
    from = cut + 1;
  }
  return false;
}

SlurmJobState map_state(uint32_t raw) {
  switch (raw & JOB_STATE_BASE) {
    case JOB_PENDING: return SlurmJobState::kPending;
    case JOB_RUNNING: return SlurmJobState::kRunning;
    case JOB_SUSPENDED: return SlurmJobState::kSuspended;
    case JOB_COMPLETE: return SlurmJobState::kCompleted;
    case JOB_CANCELLED: return SlurmJobState::kCancelled;
    case JOB_FAILED: return SlurmJobState::kFailed;
    case JOB_TIMEOUT: return SlurmJobState::kTimeout;
    case JOB_NODE_FAIL: return SlurmJobState::kNodeFail;
    case JOB_PREEMPTED: return SlurmJobState::kPreempted;
    case JOB_BOOT_FAIL: return SlurmJobState::kBootFail;
    case JOB_DEADLINE: return SlurmJobState::kDeadline;
    case JOB_OOM: return SlurmJobState::kOutOfMemory;
    default: return SlurmJobState::kFailed;
  }
}

Seconds minutes_to_seconds(uint32_t minutes) {
  if (minutes == INFINITE) return kInfiniteLimit;
  if (minutes == NO_VAL) return 0;
  return static_cast<Seconds>(minutes) * 60;
}

// The batch script's standard output as slurmd names it: the file exists once the job started.
std::string output_file(const slurm_job_info_t& j) {
  if (j.batch_flag == 0) return {};
  const bool array = j.array_task_id != NO_VAL;
  OutputNames n;
  n.job = j.job_id;
  if (array) {
    n.array_job = j.array_job_id;
    n.array_task = j.array_task_id;
  }
  n.name = str(j.name);
  n.user = user_name_of(j.user_id);
  n.work_dir = str(j.work_dir);
  const std::string given = str(j.std_out);
  const std::string pattern = given.empty() ? (array ? "slurm-%A_%a.out" : "slurm-%j.out") : given;
  // Only a file that is this job's alone says that it started.
  if (!names_one_job(pattern, array) && !(array && pattern.find("%a") != std::string::npos))
    return {};
  return expand_output_pattern(pattern, n);
}

SlurmJob convert(const slurm_job_info_t& j) {
  SlurmJob out;
  out.id = j.job_id;
  out.name = str(j.name);
  out.comment = str(j.comment);
  out.partition = str(j.partition);
  out.user_id = j.user_id;
  out.state = map_state(j.job_state);
  out.submit = j.submit_time > 0 ? static_cast<Seconds>(j.submit_time) : kUnknownTime;
  // For a pending job start_time is the expected start: not a start.
  const bool pending = out.state == SlurmJobState::kPending;
  out.start = !pending && j.start_time > 0 ? static_cast<Seconds>(j.start_time) : kUnknownTime;
  out.end =
      is_finished(out.state) && j.end_time > 0 ? static_cast<Seconds>(j.end_time) : kUnknownTime;
  // A job cancelled while pending gets start = end = the cancel time: it never started.
  if (out.state == SlurmJobState::kCancelled && out.start != kUnknownTime && out.start == out.end &&
      (j.job_state & JOB_STATE_BASE) == JOB_CANCELLED && j.nodes == nullptr)
    out.start = kUnknownTime;
  out.time_limit = minutes_to_seconds(j.time_limit);
  if (out.end != kUnknownTime && j.exit_code != NO_VAL) {  // a wait(2) status
    const int status = static_cast<int>(j.exit_code);
    if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) out.exit_signal = WTERMSIG(status);
  }
  out.nodes = j.num_nodes > 0 && j.num_nodes != NO_VAL ? static_cast<int>(j.num_nodes) : 1;
  if (j.priority != NO_VAL) out.priority = static_cast<double>(j.priority);
  out.qos = str(j.qos);
  if (pending) out.reason = reason_name(j.state_reason);
  // Slurm leaves these 0 until the job is eligible, or accrues age.
  if (j.eligible_time > 0) out.eligible = static_cast<Seconds>(j.eligible_time);
  if (j.accrue_time > 0) out.accrue = static_cast<Seconds>(j.accrue_time);
  // Only the daemon's own jobs: a name lookup per job of the cluster would cost every poll.
  if (out.comment.rfind("mirage:", 0) == 0 && out.user_id == ::getuid())
    out.std_out = output_file(j);
  out.gpus_per_node = parse_gpus_per_node(str(j.tres_per_node));
  if (out.gpus_per_node == 0) {
    const int per_job = parse_gpus_per_node(str(j.tres_per_job));
    if (per_job > 0) out.gpus_per_node = (per_job + out.nodes - 1) / out.nodes;
  }
  return out;
}

class LibSlurmClient final : public SlurmClient {
 public:
  LibSlurmClient(std::string conf, SbatchSettings sbatch, SacctSettings sacct)
      : conf_(std::move(conf)), sbatch_(std::move(sbatch)), sacct_(std::move(sacct)) {
    // Plugins and child code paths read $SLURM_CONF: point it at the same file. Done here, on the
    // daemon's main thread before the Slurm thread starts.
    setenv("SLURM_CONF", conf_.c_str(), 1);
  }
  ~LibSlurmClient() override {
    if (initialised_) slurm_fini();
  }

  std::string name() const override { return "slurm (" + conf_ + ")"; }

  JobDump load_jobs(Seconds last_update) override {
    init();
    JobDump dump;
    dump.taken = static_cast<Seconds>(time(nullptr));
    job_info_msg_t* msg = nullptr;
    ++counters_.job_dumps;
    if (slurm_load_jobs(static_cast<time_t>(last_update), &msg, SHOW_ALL) != SLURM_SUCCESS) {
      if (last_slurm_error() == SLURM_NO_CHANGE_IN_DATA) {
        dump.changed = false;
        dump.last_update = last_update;
        return dump;
      }
      fail("slurm_load_jobs");
    }
    std::unique_ptr<job_info_msg_t, void (*)(job_info_msg_t*)> guard(msg, slurm_free_job_info_msg);
    dump.last_update = static_cast<Seconds>(msg->last_update);
    // slurmctld stamps a full dump with its time(NULL) as it packs it (22.05, measured: the stamp
    // moves on with the seconds while no job changes).
    dump.controller_ahead = dump.last_update - static_cast<Seconds>(time(nullptr));
    dump.jobs.reserve(msg->record_count);
    for (uint32_t i = 0; i < msg->record_count; ++i)
      dump.jobs.push_back(convert(msg->job_array[i]));
    return dump;
  }

  std::vector<PartitionInfo> load_partitions() override {
    init();
    node_info_msg_t* nodes = nullptr;
    ++counters_.node_loads;
    if (slurm_load_node(0, &nodes, SHOW_ALL) != SLURM_SUCCESS) fail("slurm_load_node");
    std::unique_ptr<node_info_msg_t, void (*)(node_info_msg_t*)> ng(nodes,
                                                                    slurm_free_node_info_msg);
    std::vector<int> gpus(nodes->record_count, 0);
    std::vector<bool> unavailable(nodes->record_count, false);
    for (uint32_t i = 0; i < nodes->record_count; ++i) {
      gpus[i] = parse_gpus_per_node(str(nodes->node_array[i].gres));
      unavailable[i] = node_unavailable(nodes->node_array[i].node_state);
    }

    partition_info_msg_t* parts = nullptr;
    ++counters_.partition_loads;
    if (slurm_load_partitions(0, &parts, SHOW_ALL) != SLURM_SUCCESS) fail("slurm_load_partitions");
    std::unique_ptr<partition_info_msg_t, void (*)(partition_info_msg_t*)> pg(
        parts, slurm_free_partition_info_msg);
    // Only the multifactor plugin weighs age and size; priority/basic is first in, first out.
    slurm_conf_t* conf = nullptr;
    ++counters_.config_loads;
    if (slurm_load_ctl_conf(0, &conf) != SLURM_SUCCESS) fail("slurm_load_ctl_conf");
    std::unique_ptr<slurm_conf_t, void (*)(slurm_conf_t*)> cg(conf, slurm_free_ctl_conf);
    PriorityParameters priority = PriorityParameters::unweighted();
    if (str(conf->priority_type).find("multifactor") != std::string::npos) {
      priority.weight_age = conf->priority_weight_age;
      priority.weight_job_size = conf->priority_weight_js;
      if (conf->priority_max_age > 0 && conf->priority_max_age != NO_VAL)
        priority.max_age = static_cast<Seconds>(conf->priority_max_age);
      priority.favor_small = conf->priority_favor_small != 0;
    }
    // Limits exist only where slurmdbd does: the association manager is empty without it.
    const bool accounting =
        str(conf->accounting_storage_type).find("slurmdbd") != std::string::npos;
    const std::string user = user_name_of(::getuid());
    if (accounting) ++counters_.limit_loads;
    const AssociationLimits limits(accounting ? user : std::string());
    // Reservations to come, for others: each partition's share of their nodes below.
    reserve_info_msg_t* resv = nullptr;
    ++counters_.reservation_loads;
    if (slurm_load_reservations(0, &resv) != SLURM_SUCCESS) resv = nullptr;  // plan without
    std::unique_ptr<reserve_info_msg_t, void (*)(reserve_info_msg_t*)> rg(
        resv, slurm_free_reservation_info_msg);
    const Seconds now = static_cast<Seconds>(::time(nullptr));
    std::vector<PartitionInfo> out;
    for (uint32_t i = 0; i < parts->record_count; ++i) {
      const partition_info_t& p = parts->partition_array[i];
      PartitionInfo info;
      info.name = str(p.name);
      info.total_nodes = static_cast<int>(p.total_nodes);
      info.max_time = p.max_time == INFINITE || p.max_time == NO_VAL
                          ? 0
                          : static_cast<Seconds>(p.max_time) * 60;
      info.is_default = (p.flags & PART_FLAG_DEFAULT) != 0;
      info.priority = priority;
      info.user_limits = limits.in_partition(p.qos_char);
      info.limits_note = limits.note();
      info.limits_by_qos = limits.by_qos(p.qos_char);
      std::vector<bool> member(nodes->record_count, false);
      for_each_node(p.node_inx, member.size(), [&](std::size_t k) {
        member[k] = true;
        info.gpus_per_node = std::max(info.gpus_per_node, gpus[k]);
        info.unavailable_nodes += unavailable[k] ? 1 : 0;
      });
      for (uint32_t k = 0; resv && k < resv->record_count; ++k) {
        const reserve_info_t& v = resv->reservation_array[k];
        if (v.start_time <= now || v.end_time <= v.start_time || among_users(str(v.users), user))
          continue;
        int held = 0;
        for_each_node(v.node_inx, member.size(), [&](std::size_t k) { held += member[k] ? 1 : 0; });
        if (held > 0)
          info.reservations.push_back(
              {static_cast<Seconds>(v.start_time), static_cast<Seconds>(v.end_time), held});
      }
      out.push_back(std::move(info));
    }
    return out;
  }

  // Through the site's sbatch, not slurm_submit_batch_job: only sbatch reads the #SBATCH lines
  // and runs the site's cli_filter.
  JobId submit(const SubmitRequest& r) override {
    ++counters_.submits;
    return sbatch_.submit(r);
  }

  void signal_job(JobId job, int signo) override {
    init();
    ++counters_.signals;
    if (slurm_kill_job(static_cast<uint32_t>(job), static_cast<uint16_t>(signo), KILL_FULL_JOB) !=
        SLURM_SUCCESS)
      fail_unless_gone("slurm_kill_job (signal " + std::to_string(signo) + ") for job " +
                       std::to_string(job));
  }

  void cancel_job(JobId job) override {
    init();
    ++counters_.cancels;
    if (slurm_kill_job(static_cast<uint32_t>(job), SIGKILL, 0) != SLURM_SUCCESS)
      fail_unless_gone("slurm_kill_job for job " + std::to_string(job));
  }

  void release_job(JobId job) override {
    init();
    ++counters_.releases;
    job_desc_msg_t update;
    slurm_init_job_desc_msg(&update);
    update.job_id = static_cast<uint32_t>(job);
    char none[] = "";
    update.dependency = none;  // an empty dependency clears it, as scontrol does
    if (slurm_update_job(&update) != SLURM_SUCCESS) {
      const int code = last_slurm_error();
      if (code == ESLURM_JOB_NOT_PENDING || code == ESLURM_DISABLED) return;
      fail_unless_gone("slurm_update_job (dependency) for job " + std::to_string(job));
    }
  }

  StartEstimate will_run(const SubmitRequest& r) override {
    init();
    ++counters_.will_runs;
    job_desc_msg_t desc;
    slurm_init_job_desc_msg(&desc);
    desc.user_id = getuid();
    desc.group_id = getgid();
    desc.min_nodes = desc.max_nodes = static_cast<uint32_t>(std::max(1, r.nodes));
    if (r.time_limit > 0) desc.time_limit = static_cast<uint32_t>((r.time_limit + 59) / 60);
    std::string partition = r.partition, account = r.account, qos = r.qos, gpus, name = r.name;
    if (!partition.empty()) desc.partition = partition.data();
    if (!account.empty()) desc.account = account.data();
    if (!qos.empty()) desc.qos = qos.data();
    // What else of the campaign's sbatch options decides where and when the job may run.
    std::string constraint, reservation;
    for (const std::string& o : r.options) {
      if (o.rfind("--constraint=", 0) == 0) constraint = o.substr(13);
      if (o.rfind("--reservation=", 0) == 0) reservation = o.substr(14);
      if (o == "--exclusive") desc.shared = JOB_SHARED_NONE;
    }
    if (!constraint.empty()) desc.features = constraint.data();
    if (!reservation.empty()) desc.reservation = reservation.data();
    if (r.gpus_per_node > 0) {
      gpus = "gres:gpu:" + std::to_string(r.gpus_per_node);
      desc.tres_per_node = gpus.data();
    }
    if (!name.empty()) desc.name = name.data();
    // A batch job's will-run test wants a working directory and an environment, as sbatch's.
    std::string cwd = r.work_dir.empty() ? "/" : r.work_dir;
    desc.work_dir = cwd.data();
    char env0[] = "MIRAGE_WILL_RUN=1";
    char* env[] = {env0, nullptr};
    desc.environment = env;
    desc.env_size = 1;
    will_run_response_msg_t* resp = nullptr;
    if (slurm_job_will_run2(&desc, &resp) != SLURM_SUCCESS) fail("slurm_job_will_run2");
    std::unique_ptr<will_run_response_msg_t, void (*)(will_run_response_msg_t*)> guard(
        resp, [](will_run_response_msg_t* m) {
          if (m && slurm_free_will_run_response_msg) slurm_free_will_run_response_msg(m);
        });
    StartEstimate out;
    if (resp && resp->start_time > 0) out.start = static_cast<Seconds>(resp->start_time);
    if (resp) out.partition = str(resp->part_name);
    return out;
  }

  std::map<JobId, AccountedJob> accounted_jobs(const std::vector<JobId>& jobs) override {
    ++counters_.accounting_lookups;
    return lookup_accounted_jobs(sacct_, jobs);
  }

  AccountedJobs search_accounting(const AccountingSearch& search) override {
    ++counters_.accounting_searches;
    return search_accounted_jobs(sacct_, search);
  }

  RpcCounters counters() const override { return counters_; }

 private:
  void init() {
    if (initialised_) return;
    slurm_init(conf_.c_str());
    initialised_ = true;
  }

  void fail_unless_gone(const std::string& what) {
    const int code = last_slurm_error();
    if (code == ESLURM_ALREADY_DONE || code == ESLURM_INVALID_JOB_ID) return;
    fail(what);
  }

  std::string conf_;
  SbatchSubmitter sbatch_;
  SacctSettings sacct_;
  bool initialised_ = false;
  RpcCounters counters_;
};

}  // namespace

bool slurm_error_is_transient(int code) {
  if (code == 0) return true;
  if (code < 1000) return true;
  if (code >= 1000 && code < 1900) return true;
  // A busy slurmctld's socket timing out ("Socket timed out on send/recv operation") or closed
  // mid-reply: the request may have been carried out. The socket errors start at 5000 in every
  // release (24.11 dropped 5000 to 5002 and renamed 5003).
  constexpr int kSocketErrorsFirst = 5000;
  if (code >= kSocketErrorsFirst && code <= SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT) return true;
  return code == ESLURM_IN_STANDBY_MODE;
}

bool have_libslurm() {
  return true;
}

std::unique_ptr<SlurmClient> make_libslurm_client(const std::string& slurm_conf,
                                                  SbatchSettings sbatch) {
  std::string conf = resolve_slurm_conf(slurm_conf);
  sbatch.slurm_conf = conf;
  SacctSettings sacct;
  const char* path = std::getenv("PATH");
  sacct.program = find_sacct(sbatch.program, path ? path : "");
  sacct.slurm_conf = conf;
  return std::make_unique<LibSlurmClient>(std::move(conf), std::move(sbatch), std::move(sacct));
}

}  // namespace mirage::daemon

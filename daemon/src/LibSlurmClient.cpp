// libslurm behind the SlurmClient seam. Compiled only when libslurm is found.
#include "mirage/daemon/LibSlurmClient.h"

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace mirage::daemon {
namespace {

constexpr Seconds kInfiniteLimit = 365 * kDay;

std::string str(const char* s) {
  return s ? std::string(s) : std::string();
}

// Whether an error leaves the outcome unknown (no answer from the controller) rather than a
// refusal: communication errors and plain system errors (timeouts, refused connections).
bool is_transient(int code) {
  if (code == 0) return true;
  if (code < 1000) return true;
  if (code >= 1000 && code < 1900) return true;
  return code == ESLURM_IN_STANDBY_MODE;
}

[[noreturn]] void fail(const std::string& what) {
  const int code = slurm_get_errno();
  throw SlurmError(what + ": " + slurm_strerror(code) + " (errno " + std::to_string(code) + ")",
                   code, is_transient(code));
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
  out.nodes = j.num_nodes > 0 && j.num_nodes != NO_VAL ? static_cast<int>(j.num_nodes) : 1;
  out.gpus_per_node = parse_gpus_per_node(str(j.tres_per_node));
  if (out.gpus_per_node == 0) {
    const int per_job = parse_gpus_per_node(str(j.tres_per_job));
    if (per_job > 0) out.gpus_per_node = (per_job + out.nodes - 1) / out.nodes;
  }
  return out;
}

class LibSlurmClient final : public SlurmClient {
 public:
  explicit LibSlurmClient(std::string conf) : conf_(std::move(conf)) {
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
      if (slurm_get_errno() == SLURM_NO_CHANGE_IN_DATA) {
        dump.changed = false;
        dump.last_update = last_update;
        return dump;
      }
      fail("slurm_load_jobs");
    }
    std::unique_ptr<job_info_msg_t, void (*)(job_info_msg_t*)> guard(msg, slurm_free_job_info_msg);
    dump.last_update = static_cast<Seconds>(msg->last_update);
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
    for (uint32_t i = 0; i < nodes->record_count; ++i)
      gpus[i] = parse_gpus_per_node(str(nodes->node_array[i].gres));

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
      for (const int32_t* r = p.node_inx; r && r[0] >= 0 && r[1] >= 0; r += 2)
        for (int32_t n = r[0]; n <= r[1] && n < static_cast<int32_t>(gpus.size()); ++n)
          info.gpus_per_node = std::max(info.gpus_per_node, gpus[static_cast<std::size_t>(n)]);
      out.push_back(std::move(info));
    }
    return out;
  }

  JobId submit(const SubmitRequest& r) override {
    init();
    job_desc_msg_t desc;
    slurm_init_job_desc_msg(&desc);
    std::vector<std::string> strings;  // owners of the C strings below
    strings.reserve(8);
    auto c = [&](const std::string& s) -> char* {
      if (s.empty()) return nullptr;
      strings.push_back(s);
      return strings.back().data();
    };
    std::string script = r.script;
    desc.script = script.data();
    std::vector<std::string> env = r.environment;
    std::vector<char*> envp;
    envp.reserve(env.size() + 1);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    desc.environment = envp.data();
    desc.env_size = static_cast<uint32_t>(env.size());
    desc.time_limit = static_cast<uint32_t>((r.time_limit + 59) / 60);
    desc.min_nodes = desc.max_nodes = static_cast<uint32_t>(r.nodes);
    std::string tres = r.gpus_per_node > 0 ? "gres:gpu:" + std::to_string(r.gpus_per_node) : "";
    desc.tres_per_node = c(tres);
    desc.partition = c(r.partition);
    desc.account = c(r.account);
    desc.name = c(r.name);
    desc.comment = c(r.comment);
    desc.work_dir = c(r.work_dir.empty() ? std::string("/tmp") : r.work_dir);
    desc.std_out = c(r.std_out);
    desc.user_id = getuid();
    desc.group_id = getgid();
    submit_response_msg_t* resp = nullptr;
    ++counters_.submits;
    if (slurm_submit_batch_job(&desc, &resp) != SLURM_SUCCESS)
      fail("slurm_submit_batch_job for job '" + r.name + "' (" + r.comment + ")");
    const JobId id = resp->job_id;
    slurm_free_submit_response_response_msg(resp);
    return id;
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

  RpcCounters counters() const override { return counters_; }

 private:
  void init() {
    if (initialised_) return;
    slurm_init(conf_.c_str());
    initialised_ = true;
  }

  void fail_unless_gone(const std::string& what) {
    const int code = slurm_get_errno();
    if (code == ESLURM_ALREADY_DONE || code == ESLURM_INVALID_JOB_ID) return;
    fail(what);
  }

  std::string conf_;
  bool initialised_ = false;
  RpcCounters counters_;
};

}  // namespace

bool have_libslurm() {
  return true;
}

std::unique_ptr<SlurmClient> make_libslurm_client(const std::string& slurm_conf) {
  return std::make_unique<LibSlurmClient>(resolve_slurm_conf(slurm_conf));
}

}  // namespace mirage::daemon

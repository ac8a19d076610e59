#pragma once
// The seam between the daemon and a Slurm controller. Three implementations: libslurm (the real
// controller), the simulator (accelerated replay of a trace) and a fake (unit tests). Each is
// used from one thread only (the daemon's Slurm thread), and counts the controller RPCs it makes,
// so "one bulk job RPC per tick" is measured rather than assumed.
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "mirage/core/ClusterSpec.h"
#include "mirage/core/Job.h"
#include "mirage/core/QueueSnapshot.h"

namespace mirage::daemon {

enum class SlurmJobState {
  kPending,
  kRunning,
  kSuspended,
  kCompleted,  // exit code 0
  kCancelled,
  kFailed,  // non-zero exit code
  kTimeout,
  kNodeFail,
  kPreempted,
  kBootFail,
  kDeadline,
  kOutOfMemory,
};
std::string_view to_string(SlurmJobState state);
bool is_finished(SlurmJobState state);

// One job as the bulk job dump reports it.
struct SlurmJob {
  JobId id = 0;
  std::string name;
  std::string comment;  // carries the campaign tag of the daemon's jobs
  std::string partition;
  std::uint32_t user_id = 0;
  SlurmJobState state = SlurmJobState::kPending;
  Seconds submit = kUnknownTime;
  Seconds start = kUnknownTime;  // kUnknownTime until it starts
  Seconds end = kUnknownTime;    // kUnknownTime until it ends
  Seconds time_limit = 0;        // seconds
  int nodes = 1;
  int gpus_per_node = 0;
  int exit_code = 0;    // the batch script's exit status, once it ended
  int exit_signal = 0;  // the signal that ended it, if one did
  // What the scheduler says of it: its priority (pending: now; running: as it started; 0: held;
  // kUnknownPriority where the source does not say), QOS, why it is pending (Slurm's reason
  // string: "Priority", "Resources", "Dependency", "QOSMaxNodePerUserLimit", ...), and when it
  // became eligible and began accruing age (kUnknownTime: not yet, or not reported).
  double priority = kUnknownPriority;
  std::string qos;
  std::string reason;
  Seconds eligible = kUnknownTime;
  Seconds accrue = kUnknownTime;
  // The file its batch script's standard output goes to (absolute, patterns expanded), which
  // slurmd creates when the job starts; empty where the source does not say.
  std::string std_out;
};

// What accounting knows of a job the controller no longer lists: every record it keeps under the
// id, in sacct's order (a requeued job's runs; another job given the same id, before or after:
// ids repeat), or none and why (no accounting on this cluster, the job unknown to it).
struct AccountedJob {
  std::vector<SlurmJob> records;
  std::string why;
  bool transient = false;  // accounting did not answer: ask again, conclude nothing yet
};

// The user's jobs accounting recorded under one of `names` (job names) that were in the queue
// since `since`: what ran and ended while a store restored from an earlier copy did not know.
// One search covers every segment about to be submitted.
struct AccountingSearch {
  Seconds since = 0;
  std::vector<std::string> names;
};
// The jobs found (with their names and, where the site's accounting keeps them, comments), or
// none and why (no accounting on this cluster).
struct AccountedJobs {
  std::optional<std::vector<SlurmJob>> jobs;
  std::string why;
};

// The result of one bulk job RPC. `changed` is false when the controller reported no change
// since the previous dump (slurm_load_jobs' update_time): `jobs` is then empty and the previous
// list still holds.
struct JobDump {
  bool changed = true;
  Seconds taken = 0;        // client time just before the RPC was sent
  Seconds last_update = 0;  // the controller's stamp, to pass back next time
  // How far slurmctld's clock, which the jobs' submit, start and end times are read on, runs
  // ahead of this machine's (negative: behind): the dump's stamp less this machine's time once
  // the reply is in, so never more than the truth (less by the reply's travel). nullopt: the
  // dump carries no stamp (no change since the last one).
  std::optional<Seconds> controller_ahead;
  std::vector<SlurmJob> jobs;
};

struct PartitionInfo {
  std::string name;
  int total_nodes = 0;
  int gpus_per_node = 0;  // the most GPUs on any of its nodes
  Seconds max_time = 0;   // 0: unlimited
  bool is_default = false;
  // The controller's multifactor weights (cluster-wide; all zero unless PriorityType is
  // priority/multifactor), so that snapshots rank pending jobs as the scheduler does.
  PriorityParameters priority = PriorityParameters::unweighted();
  // Its nodes that no pending job can have now: down, drained, failing, in maintenance or in a
  // reservation, and not running a job (a running job's nodes are counted by the job).
  int unavailable_nodes = 0;
  // The per-user limits on running work of the QOS the daemon's user runs under here (the
  // partition's QOS, or the user's default), where the site's accounting tells them.
  UserLimits user_limits{};
  // Where user_limits come from, or why there are none (no accounting; the association manager
  // did not answer): campaign show says what the forecast knew.
  std::string limits_note{};
  // The same under each QOS the user may ask for (a campaign's --qos).
  std::vector<std::pair<std::string, UserLimits>> limits_by_qos{};
  // Reservations for others (the daemon's user not among their users) that begin later, with
  // the partition's nodes each will hold.
  std::vector<NodeReservation> reservations{};
};

// One segment to submit. The real cluster gets the script and `options` through sbatch, which
// applies the script's own #SBATCH lines; the shape fields say what the segment is expected to
// get (the simulator and the fake, which run no sbatch, submit with them).
struct SubmitRequest {
  std::string script;                    // the batch script's text
  std::vector<std::string> environment;  // NAME=value
  std::string work_dir;
  // sbatch options from `campaign add` and the daemon's defaults ("--nodes=2"), which override
  // the script's directives.
  std::vector<std::string> options;
  Seconds time_limit = 0;  // 0: not known before Slurm grants it (the partition's default)
  int nodes = 1;
  int gpus_per_node = 0;
  std::string partition;  // empty: the cluster's default
  std::string account;    // empty: the user's default
  std::string qos;        // empty: the association's default (the will-run test reads it; a
                          // submission takes it from `options` or the script)
  std::string name;
  std::string comment;  // the campaign tag
  // Queued behind this job (--dependency=afterany): it waits, accruing no age, until that job
  // ends or release_job lets it go. 0: none.
  JobId after_any = 0;
  // --ignore-pbs: the script's #PBS and #BSUB lines are not applied (false: a campaign added
  // before mirage passed it keeps what sbatch made of them).
  bool ignore_pbs = true;
};

// A failed call. `transient` says the controller could not be reached or did not answer, so the
// outcome is unknown and the call may be retried; otherwise Slurm refused it.
class SlurmError : public std::runtime_error {
 public:
  SlurmError(const std::string& message, int code, bool transient, bool refused_for_now = false)
      : std::runtime_error(message),
        code_(code),
        transient_(transient),
        refused_for_now_(refused_for_now) {}
  int code() const { return code_; }
  bool transient() const { return transient_; }
  // A submission refused only while a limit or the controller's load lasts (a submit limit, a
  // full queue): no job was made, and the same request is taken later.
  bool refused_for_now() const { return refused_for_now_; }

 private:
  int code_;
  bool transient_;
  bool refused_for_now_;
};

// Controller RPCs made so far, by kind.
struct RpcCounters {
  std::uint64_t job_dumps = 0;
  std::uint64_t partition_loads = 0;
  std::uint64_t node_loads = 0;
  std::uint64_t config_loads = 0;  // the controller's configuration (priority weights)
  std::uint64_t reservation_loads = 0;
  std::uint64_t limit_loads = 0;  // the association manager's limits (with accounting)
  std::uint64_t submits = 0;
  std::uint64_t signals = 0;
  std::uint64_t cancels = 0;
  std::uint64_t releases = 0;             // dependencies cleared
  std::uint64_t will_runs = 0;            // start estimates for jobs not submitted
  std::uint64_t accounting_lookups = 0;   // accounting asked of jobs gone unseen (sacct)
  std::uint64_t accounting_searches = 0;  // searches for segments run unseen (sacct)
  std::uint64_t total() const {
    return job_dumps + partition_loads + node_loads + config_loads + reservation_loads +
           limit_loads + submits + signals + cancels + releases + will_runs + accounting_lookups +
           accounting_searches;
  }
};

// Slurm's own estimate for a job not yet submitted: when its will-run test (what `sbatch
// --test-only` prints) says the job would start, and where.
struct StartEstimate {
  Seconds start = kUnknownTime;
  std::string partition;
};

class SlurmClient {
 public:
  virtual ~SlurmClient() = default;
  virtual std::string name() const = 0;
  // All jobs the controller knows (one bulk RPC), or changed=false when nothing changed since
  // `last_update` (0: always the full list). Throws SlurmError.
  virtual JobDump load_jobs(Seconds last_update) = 0;
  // Partitions with their node counts, GPUs per node and the priority weights (a partition, a
  // node and a configuration RPC).
  virtual std::vector<PartitionInfo> load_partitions() = 0;
  // Submits a batch job; returns its id. Throws SlurmError.
  virtual JobId submit(const SubmitRequest& request) = 0;
  // Sends `signo` to the job's batch script and steps. A job already gone is not an error.
  virtual void signal_job(JobId job, int signo) = 0;
  // Cancels the job. A job already gone is not an error.
  virtual void cancel_job(JobId job) = 0;
  // Clears a pending job's dependency (`scontrol update jobid=J dependency=`): it becomes
  // eligible now and accrues age from now, as a job submitted now would. A job that no longer
  // waits (started, ended, gone) is not an error.
  virtual void release_job(JobId job) = 0;
  // When a job of `request`'s shape (nodes, GPUs, time limit, partition, account), submitted
  // now, would start, as slurmctld's will-run test plans it: its backfill plan of the queue with
  // every job at its limit, limits and reservations included. One RPC. Throws SlurmError.
  virtual StartEstimate will_run(const SubmitRequest& request) = 0;
  // What accounting knows of each of `jobs`, which are no longer in the dump (slurmctld purged
  // their records MinJobAge after they ended, or lost them): one question for them all. Throws a
  // transient SlurmError when accounting did not answer. A backend without accounting says so.
  virtual std::map<JobId, AccountedJob> accounted_jobs(const std::vector<JobId>& jobs) {
    std::map<JobId, AccountedJob> out;
    for (JobId job : jobs) out[job] = {{}, "the " + name() + " backend keeps no accounting"};
    return out;
  }
  // The jobs accounting recorded that `search` asks for. Throws a transient SlurmError when
  // accounting did not answer. A backend without accounting says so.
  virtual AccountedJobs search_accounting(const AccountingSearch& search) {
    (void)search;
    return {std::nullopt, "the " + name() + " backend keeps no accounting"};
  }
  virtual RpcCounters counters() const = 0;
};

// The tag each job of a campaign carries in its comment:
// mirage:<store>:<campaign>:<segment>:<attempt>, where <store> identifies the daemon's store (two
// daemons of one user, or two users, never mistake each other's jobs). It makes a submission
// recognisable in the bulk dump, so a crash between submitting and recording the job id never
// leads to a second submission.
struct JobTag {
  std::string store;  // [0-9a-f]{8}
  std::int64_t campaign = 0;
  int segment = 0;
  int attempt = 0;
  std::string str() const;
  static std::optional<JobTag> parse(std::string_view text);
  bool operator==(const JobTag&) const = default;
};

// "gres:gpu:4", "gres/gpu:4", "gpu:4", "gres:gpu:a100:4", "gres/gpu=4" (any of them in a
// comma- or semicolon-separated TRES list) -> 4; 0 when no GPU is asked for.
int parse_gpus_per_node(std::string_view tres);

// The partition a daemon works in: the one `configured`, or the cluster's default where none
// is; nullptr when it is not among `partitions`.
const PartitionInfo* choose_partition(const std::vector<PartitionInfo>& partitions,
                                      const std::string& configured);

// The node count in a TRES limit as slurmctld keeps it ("4=2,1=64": TRES ids, node is 4) or as
// sacctmgr writes it ("node=2,cpu=64"); 0 when it sets none.
int parse_node_limit(std::string_view tres);

// The tighter of two limits where 0 means none.
int tighter_limit(int a, int b);

}  // namespace mirage::daemon

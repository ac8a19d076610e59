#pragma once
// An in-memory Slurm for unit tests and benchmarks: jobs are added, started and ended by hand,
// submissions and signals are recorded, and the controller can be made unreachable or made to
// refuse or lose a submission. Small on purpose: it behaves like the real thing at the seam and
// pretends nothing else.
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "mirage/daemon/slurm/Clock.h"
#include "mirage/daemon/slurm/SlurmClient.h"

namespace mirage::daemon {

class FakeSlurmClient final : public SlurmClient {
 public:
  explicit FakeSlurmClient(const Clock& clock) : clock_(clock) {}

  std::string name() const override { return "fake"; }
  JobDump load_jobs(Seconds last_update) override;
  std::vector<PartitionInfo> load_partitions() override;
  JobId submit(const SubmitRequest& request) override;
  void signal_job(JobId job, int signo) override;
  void cancel_job(JobId job) override;
  void release_job(JobId job) override;
  // Answers what set_will_run said (by default: no start time), counting the calls and keeping
  // the requests.
  StartEstimate will_run(const SubmitRequest& request) override;
  RpcCounters counters() const override { return counters_; }

  // --- the test's hands on the cluster
  JobId add_job(SlurmJob job);  // id assigned when 0; submit time defaults to now
  // slurmctld makes the job `request` asks for (held behind its after_any), submitted at
  // `submitted` (kUnknownTime: now): what submit() does, and what a request sbatch gave up on
  // (its reply lost) becomes when slurmctld reads it late.
  JobId create_job(const SubmitRequest& request, Seconds submitted = kUnknownTime);
  // A job waiting on a dependency that has not been met (or released) cannot start.
  void start(JobId job);
  bool held(JobId job) const;
  void finish(JobId job, SlurmJobState state = SlurmJobState::kCompleted, int exit_code = 0);
  // Back in the queue under the same id and comment (preempted, a node failed, `scontrol
  // requeue`): pending, with no start until it starts again.
  void requeue(JobId job);
  // The site decided the shape (its defaults, job_submit rules): the job differs from the request.
  void grant(JobId job, int nodes, int gpus_per_node, Seconds time_limit);
  void forget(JobId job);  // the controller purged its record (MinJobAge)
  // Where the job's batch output goes, as the dump reports it (SlurmJob::std_out).
  void set_std_out(JobId job, std::string path) {
    jobs_.at(job).std_out = std::move(path);
    touch();
  }
  // Accounting (slurmdbd) keeps the records the controller forgets; off (the default), it
  // answers that there is none. While unreachable, it throws a transient error.
  void set_accounting(bool on) { accounting_ = on; }
  void set_accounting_reachable(bool reachable) { accounting_reachable_ = reachable; }
  // Every record of each id, oldest submission first, as `sacct -D` gives them: the job's own
  // and those add_accounting_record made.
  std::map<JobId, AccountedJob> accounted_jobs(const std::vector<JobId>& jobs) override;
  // A record accounting keeps under a job's id beside the job's own: another job that was given
  // the same id (ids repeat), or an earlier run of a requeued one.
  void add_accounting_record(SlurmJob record) { extra_records_.push_back(std::move(record)); }
  // The jobs submitted since the search's start under one of its names, kept or forgotten by
  // the controller; with their comments unless the site's accounting keeps none (22.05 without
  // AccountingStoreFlags=job_comment).
  AccountedJobs search_accounting(const AccountingSearch& search) override;
  void set_accounting_keeps_comments(bool keeps) { accounting_comments_ = keeps; }
  const std::vector<AccountingSearch>& accounting_searches() const { return searches_; }
  void set_reachable(bool reachable) { reachable_ = reachable; }
  // The next submit fails: refused (transient=false) or lost (transient=true: the job is created
  // but the reply never arrives, as when the daemon dies or times out mid-RPC). Refused
  // `for_now`: only while a limit or the controller's load lasts (a submit limit reached).
  void refuse_next_submit(const std::string& why, bool for_now = false) {
    refuse_ = why;
    refuse_for_now_ = for_now;
  }
  // Submitted jobs belong to this user (default 0), as the daemon's own user's do on a cluster.
  void set_submitter(std::uint32_t uid) { submitter_ = uid; }
  void lose_next_submit_reply() { lose_reply_ = true; }
  // A site's job_submit plugin that writes its own text over every job's --comment.
  void rewrite_comments_to(std::string comment) { rewritten_comment_ = std::move(comment); }
  // slurmctld's clock runs `offset` seconds ahead of the daemon's (negative: behind, as when the
  // login node's clock runs fast): the jobs' times and the dump's stamp are read on it.
  void set_controller_clock_offset(Seconds offset) { controller_offset_ = offset; }
  Seconds controller_now() const { return clock_.now() + controller_offset_; }
  void set_partitions(std::vector<PartitionInfo> partitions) {
    partitions_ = std::move(partitions);
  }
  // Called at the start of every load_jobs, on the caller's thread: lets a benchmark or a test
  // move the cluster along from the thread that owns the fake.
  void set_on_dump(std::function<void(FakeSlurmClient&)> hook) { on_dump_ = std::move(hook); }
  // Called at the start of every submit: what happens on the machine while a pass submits.
  void set_on_submit(std::function<void(FakeSlurmClient&)> hook) { on_submit_ = std::move(hook); }
  // What the will-run test answers from now on: a start this long after the call (nullopt: no
  // start time).
  void set_will_run(std::optional<Seconds> wait) { will_run_wait_ = wait; }
  // The will-run test fails (the controller times out on it) until cleared.
  void set_will_run_error(std::optional<std::string> why) { will_run_error_ = std::move(why); }
  const std::vector<SubmitRequest>& will_run_requests() const { return will_run_requests_; }

  const SlurmJob* find(JobId job) const;
  const std::map<JobId, SlurmJob>& jobs() const { return jobs_; }
  struct Submission {
    JobId job;
    SubmitRequest request;
  };
  const std::vector<Submission>& submissions() const { return submissions_; }
  std::vector<Submission> submissions_tagged(std::int64_t campaign, int segment) const;
  struct Signal {
    JobId job;
    int signo;
  };
  const std::vector<Signal>& signals() const { return signals_; }
  const std::vector<JobId>& cancels() const { return cancels_; }
  const std::vector<JobId>& releases() const { return releases_; }

 private:
  void check_reachable() const;
  void touch() { ++update_stamp_; }

  const Clock& clock_;
  std::map<JobId, SlurmJob> jobs_;
  std::map<JobId, SlurmJob> forgotten_;
  std::vector<SlurmJob> extra_records_;
  bool accounting_ = false;
  bool accounting_reachable_ = true;
  bool accounting_comments_ = true;
  std::vector<AccountingSearch> searches_;
  JobId next_id_ = 1000;
  Seconds update_stamp_ = 1;
  bool reachable_ = true;
  Seconds controller_offset_ = 0;
  std::optional<std::string> refuse_;
  bool refuse_for_now_ = false;
  bool lose_reply_ = false;
  std::optional<std::string> rewritten_comment_;
  std::vector<PartitionInfo> partitions_{{"gpu", 4, 4, 0, true}};
  std::vector<Submission> submissions_;
  std::optional<Seconds> will_run_wait_;
  std::optional<std::string> will_run_error_;
  std::vector<SubmitRequest> will_run_requests_;
  std::vector<Signal> signals_;
  std::vector<JobId> cancels_;
  std::vector<JobId> releases_;
  std::map<JobId, JobId> after_any_;  // held job -> the job it waits for, until met or released
  RpcCounters counters_;
  std::function<void(FakeSlurmClient&)> on_dump_;
  std::function<void(FakeSlurmClient&)> on_submit_;
  std::uint32_t submitter_ = 0;
};

}  // namespace mirage::daemon

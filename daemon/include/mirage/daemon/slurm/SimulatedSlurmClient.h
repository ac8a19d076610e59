#pragma once
// The embedded cluster: mirage's simulator replaying a trace in accelerated time behind the
// SlurmClient seam, so a user without a cluster can watch the daemon work (cluster.backend =
// "simulator"). The trace's jobs are everyone else's load; the daemon's submissions join them and
// run their full time limit, or stop `checkpoint` after a hand-off signal.
//
// It survives restarts like a real cluster: with a `state_path`, every submission, hand-off
// signal and cancellation is written there before it takes effect (write-ahead), with the clock.
// A new client over the same file replays the trace and those events in order (the simulator is
// deterministic, so the same jobs get the same ids, starts and ends) and resumes the clock where
// it would be had it never stopped: simulated time runs on while the daemon is down, as it does
// on a real cluster, so it never goes backwards. The daemon's own jobs stay in every dump, ended
// or not, so a restart never finds a segment's job gone.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mirage/daemon/slurm/Clock.h"
#include "mirage/daemon/slurm/SlurmClient.h"
#include "mirage/simulator/Simulator.h"
#include "mirage/traces/Trace.h"

namespace mirage::daemon {

struct SimulatedClusterConfig {
  double speed = 600;         // simulated seconds per wall second
  Seconds warmup = 2 * kDay;  // the replay starts this long after the trace's first job
  int nodes = 0;              // 0: from the trace
  int gpus_per_node = 0;      // 0: from the trace, else 4
  Seconds checkpoint = 2 * kMinute;
  std::string partition = "sim";
  std::uint32_t user_id = 0;         // the daemon's jobs run as this uid
  std::string state_path;            // where the cluster's state persists; empty: in memory only
  std::string calibration = "none";  // none, infer, auto or a file (simulator/CalibrationFile.h)
};

class SimulatedSlurmClient final : public SlurmClient {
 public:
  // Resumes from `config.state_path` when that file exists. Throws std::runtime_error naming the
  // file when it cannot be read or belongs to another trace or machine size.
  SimulatedSlurmClient(const Trace& trace, SimulatedClusterConfig config);
  // Saves the clock on the way out, so that a restart never shows a time before one already seen.
  ~SimulatedSlurmClient() override;

  const Clock& clock() const { return *clock_; }
  std::shared_ptr<const Clock> shared_clock() const { return clock_; }
  const ClusterSpec& spec() const { return sim_->spec(); }

  std::string name() const override;
  JobDump load_jobs(Seconds last_update) override;
  std::vector<PartitionInfo> load_partitions() override;
  JobId submit(const SubmitRequest& request) override;
  void signal_job(JobId job, int signo) override;
  void cancel_job(JobId job) override;
  void release_job(JobId job) override;
  // The simulator's own plan of the queue as it stands, every job at its limit, nothing new
  // arriving: what slurmctld's will-run test answers.
  StartEstimate will_run(const SubmitRequest& request) override;
  // The simulated cluster keeps every record: its accounting knows every job it ran.
  std::map<JobId, AccountedJob> accounted_jobs(const std::vector<JobId>& jobs) override;
  AccountedJobs search_accounting(const AccountingSearch& search) override;
  RpcCounters counters() const override { return counters_; }

  // What happened to the daemon's jobs, in order: what the state file holds.
  struct Event {
    enum class Op { kSubmit, kEndEarly, kCancel, kRelease };
    Op op = Op::kSubmit;
    Seconds time = 0;  // simulated time it happened
    SimJobIndex job = 0;
    Seconds end = 0;  // kEndEarly: when the job stops
    // kSubmit: the job's shape and what the dump reports of it.
    Seconds time_limit = 0;
    int nodes = 1;
    int gpus_per_node = 0;
    std::string name, comment;
    std::int64_t after_any = -1;  // kSubmit: the job index it waits for (afterany); -1: none
  };
  const std::vector<Event>& events() const { return events_; }

 private:
  void catch_up();
  void apply(const Event& e);
  void record(const Event& e);  // write-ahead: durable before it is applied
  void save() const;
  void resume(Seconds& now);
  std::string fingerprint() const;
  SlurmJob report(SimJobIndex j) const;
  bool ours(JobId job, SimJobIndex& index) const;

  SimulatedClusterConfig config_;
  std::string trace_name_;
  std::string calibration_;  // what the calibration holds, for the state file's fingerprint
  std::shared_ptr<const std::vector<SimJobSpec>> jobs_;
  std::unique_ptr<Simulator> sim_;
  std::shared_ptr<AcceleratedClock> clock_;
  std::size_t next_arrival_ = 0;     // trace jobs reported from here on
  std::vector<SimJobIndex> active_;  // trace jobs still reported
  struct Extra {
    std::string name, comment;
  };
  std::map<SimJobIndex, Extra> ours_;  // the daemon's jobs, always reported
  std::vector<Event> events_;
  RpcCounters counters_;
};

}  // namespace mirage::daemon

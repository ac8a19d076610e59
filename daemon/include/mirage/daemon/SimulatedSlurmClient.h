#pragma once
// The embedded cluster: mirage's simulator replaying a trace in accelerated time behind the
// SlurmClient seam, so a user without a cluster can watch the daemon work (cluster.backend =
// "simulator"). The trace's jobs are everyone else's load; the daemon's submissions join them and
// run their full time limit, or stop `checkpoint` after a hand-off signal. Time is the
// AcceleratedClock it exposes, which the daemon's controller uses too. Its state lives in memory:
// a restarted daemon starts a fresh simulation.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mirage/daemon/Clock.h"
#include "mirage/daemon/SlurmClient.h"
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
  std::uint32_t user_id = 0;  // the daemon's jobs run as this uid
};

class SimulatedSlurmClient final : public SlurmClient {
 public:
  SimulatedSlurmClient(const Trace& trace, SimulatedClusterConfig config);

  const Clock& clock() const { return *clock_; }
  std::shared_ptr<const Clock> shared_clock() const { return clock_; }
  const ClusterSpec& spec() const { return sim_->spec(); }

  std::string name() const override;
  JobDump load_jobs(Seconds last_update) override;
  std::vector<PartitionInfo> load_partitions() override;
  JobId submit(const SubmitRequest& request) override;
  void signal_job(JobId job, int signo) override;
  void cancel_job(JobId job) override;
  RpcCounters counters() const override { return counters_; }

 private:
  void catch_up();
  SlurmJob report(SimJobIndex j) const;

  SimulatedClusterConfig config_;
  std::string trace_name_;
  std::shared_ptr<const std::vector<SimJobSpec>> jobs_;
  std::unique_ptr<Simulator> sim_;
  std::shared_ptr<AcceleratedClock> clock_;
  std::size_t next_arrival_ = 0;     // trace jobs reported from here on
  std::vector<SimJobIndex> active_;  // jobs still reported
  struct Extra {
    std::string name, comment, partition;
  };
  std::map<SimJobIndex, Extra> ours_;  // the daemon's jobs
  RpcCounters counters_;
};

}  // namespace mirage::daemon

// Test hooks for the crash tests (tests/daemon/integration.sh, simulator_crash.sh), built into
// their own build of the program (mirage-with-faults): a SlurmClient that SIGKILLs its own
// process, with the probabilities in MIRAGE_FAULT_AFTER_INTENT and MIRAGE_FAULT_AFTER_SUBMIT,
// right before a submission (its intent is already durable) or right after Slurm accepted it
// (before its job id is recorded). The daemon and `mirage tick` alike; unset, nothing changes.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <random>

#include "mirage/daemon/service/Daemon.h"
#include "mirage/daemon/slurm/SlurmClient.h"

namespace mirage::daemon {

namespace {

double fault_probability(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atof(v) : 0.0;
}

class FaultInjectingClient final : public SlurmClient {
 public:
  FaultInjectingClient(std::unique_ptr<SlurmClient> inner, double after_intent, double after_submit)
      : inner_(std::move(inner)), after_intent_(after_intent), after_submit_(after_submit) {}

  std::string name() const override { return inner_->name(); }
  JobDump load_jobs(Seconds last_update) override { return inner_->load_jobs(last_update); }
  std::vector<PartitionInfo> load_partitions() override { return inner_->load_partitions(); }
  JobId submit(const SubmitRequest& request) override {
    maybe_crash(after_intent_, "after the intent, before submitting");
    const JobId id = inner_->submit(request);
    maybe_crash(after_submit_, "after submitting, before recording the job id");
    return id;
  }
  void signal_job(JobId job, int signo) override { inner_->signal_job(job, signo); }
  void cancel_job(JobId job) override { inner_->cancel_job(job); }
  void release_job(JobId job) override { inner_->release_job(job); }
  StartEstimate will_run(const SubmitRequest& request) override {
    return inner_->will_run(request);
  }
  std::map<JobId, AccountedJob> accounted_jobs(const std::vector<JobId>& jobs) override {
    return inner_->accounted_jobs(jobs);
  }
  AccountedJobs search_accounting(const AccountingSearch& search) override {
    return inner_->search_accounting(search);
  }
  RpcCounters counters() const override { return inner_->counters(); }

 private:
  void maybe_crash(double p, const char* where) {
    if (p <= 0) return;
    std::uniform_real_distribution<double> u(0, 1);
    if (u(rng_) < p) {
      spdlog::warn("fault injection: SIGKILL {}", where);
      spdlog::default_logger()->flush();
      ::kill(::getpid(), SIGKILL);
    }
  }

  std::unique_ptr<SlurmClient> inner_;
  double after_intent_;
  double after_submit_;
  std::mt19937 rng_{std::random_device{}()};
};

std::unique_ptr<SlurmClient> with_fault_injection(std::unique_ptr<SlurmClient> client) {
  const double after_intent = fault_probability("MIRAGE_FAULT_AFTER_INTENT");
  const double after_submit = fault_probability("MIRAGE_FAULT_AFTER_SUBMIT");
  if (after_intent <= 0 && after_submit <= 0) return client;
  return std::make_unique<FaultInjectingClient>(std::move(client), after_intent, after_submit);
}

// Linked into the program itself (not from a library), so this runs before main.
[[maybe_unused]] const bool kRegistered = (set_slurm_client_decorator(&with_fault_injection), true);

}  // namespace

}  // namespace mirage::daemon

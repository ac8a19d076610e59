#include "mirage/daemon/SimulatedSlurmClient.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <stdexcept>

namespace mirage::daemon {
namespace {

constexpr std::uint32_t kTraceUser = 65534;     // everyone else's jobs
constexpr Seconds kKeepFinished = 5 * kMinute;  // like MinJobAge: ended jobs stay visible

}  // namespace

SimulatedSlurmClient::SimulatedSlurmClient(const Trace& trace, SimulatedClusterConfig config)
    : config_(std::move(config)), trace_name_(trace.source) {
  ClusterSpec spec;
  spec.nodes = config_.nodes > 0 ? config_.nodes : trace.machine_nodes;
  if (spec.nodes <= 0)
    throw std::runtime_error("simulator: the trace " + trace.source +
                             " does not say the machine size; set simulator.nodes");
  spec.gpus_per_node = config_.gpus_per_node > 0         ? config_.gpus_per_node
                       : trace.machine_gpus_per_node > 0 ? trace.machine_gpus_per_node
                                                         : 4;
  std::vector<Job> kept;
  for (const Job& j : trace.jobs)
    if (j.nodes > 0 && j.nodes <= spec.nodes) kept.push_back(j);
  if (kept.empty())
    throw std::runtime_error("simulator: the trace " + trace.source + " has no jobs");
  jobs_ = std::make_shared<const std::vector<SimJobSpec>>(to_sim_jobs(kept));
  sim_ = std::make_unique<Simulator>(spec, jobs_);
  const Seconds origin = jobs_->front().submit + config_.warmup;
  sim_->set_recording(false);
  sim_->run_until(origin);
  while (next_arrival_ < jobs_->size() && (*jobs_)[next_arrival_].submit <= origin) {
    const auto j = static_cast<SimJobIndex>(next_arrival_++);
    const auto st = sim_->state(j);
    if (st == SimJobState::kPending || st == SimJobState::kRunning) active_.push_back(j);
  }
  clock_ = std::make_shared<AcceleratedClock>(origin, config_.speed);
  spdlog::info("simulator: replaying {} ({} jobs) on {} nodes x {} GPUs at {}x from {}",
               trace.source, jobs_->size(), spec.nodes, spec.gpus_per_node, config_.speed,
               format_iso_time(origin));
}

std::string SimulatedSlurmClient::name() const {
  return "simulator (" + trace_name_ + ")";
}

void SimulatedSlurmClient::catch_up() {
  const Seconds now = clock_->now();
  if (now > sim_->now()) sim_->run_until(now);
}

SlurmJob SimulatedSlurmClient::report(SimJobIndex j) const {
  const SimJobSpec& s = sim_->job(j);
  SlurmJob out;
  out.id = static_cast<JobId>(j) + 1;
  out.submit = s.submit;
  out.time_limit = s.time_limit;
  out.nodes = s.nodes;
  out.gpus_per_node = s.gpus_per_node;
  out.partition = config_.partition;
  out.user_id = kTraceUser;
  if (auto it = ours_.find(j); it != ours_.end()) {
    out.name = it->second.name;
    out.comment = it->second.comment;
    out.user_id = config_.user_id;
  }
  out.start = sim_->start_time(j);
  switch (sim_->state(j)) {
    case SimJobState::kFuture:
    case SimJobState::kPending: out.state = SlurmJobState::kPending; break;
    case SimJobState::kRunning: out.state = SlurmJobState::kRunning; break;
    case SimJobState::kDone:
      out.end = sim_->end_time(j);
      out.state =
          out.end - out.start >= s.time_limit ? SlurmJobState::kTimeout : SlurmJobState::kCompleted;
      break;
    case SimJobState::kCancelled:
      out.end = sim_->end_time(j) != kUnknownTime ? sim_->end_time(j) : sim_->now();
      out.state = SlurmJobState::kCancelled;
      break;
  }
  return out;
}

JobDump SimulatedSlurmClient::load_jobs(Seconds) {
  ++counters_.job_dumps;
  catch_up();
  const Seconds now = sim_->now();
  JobDump dump;
  dump.taken = now;
  dump.last_update = now;
  while (next_arrival_ < jobs_->size() && (*jobs_)[next_arrival_].submit <= now)
    active_.push_back(static_cast<SimJobIndex>(next_arrival_++));
  std::vector<SimJobIndex> keep;
  keep.reserve(active_.size());
  dump.jobs.reserve(active_.size());
  for (SimJobIndex j : active_) {
    SlurmJob job = report(j);
    const bool gone =
        is_finished(job.state) && job.end != kUnknownTime && job.end + kKeepFinished < now;
    if (!gone) keep.push_back(j);
    dump.jobs.push_back(std::move(job));
  }
  active_ = std::move(keep);
  return dump;
}

std::vector<PartitionInfo> SimulatedSlurmClient::load_partitions() {
  ++counters_.partition_loads;
  ++counters_.node_loads;
  ++counters_.config_loads;
  return {{config_.partition, sim_->spec().nodes, sim_->spec().gpus_per_node, 0, true,
           sim_->spec().priority}};
}

JobId SimulatedSlurmClient::submit(const SubmitRequest& r) {
  ++counters_.submits;
  if (!r.partition.empty() && r.partition != config_.partition)
    throw SlurmError(
        "Batch job submission failed: Invalid partition name specified (the "
        "simulated cluster has partition '" +
            config_.partition + "')",
        2000, false);
  if (r.nodes < 1 || r.nodes > sim_->spec().nodes || r.gpus_per_node > sim_->spec().gpus_per_node)
    throw SlurmError("Batch job submission failed: Requested node configuration is not available",
                     2014, false);
  catch_up();
  SimJobSpec s;
  s.time_limit = r.time_limit;
  s.runtime = r.time_limit;  // a training segment uses its whole allocation
  s.nodes = r.nodes;
  s.gpus_per_node = r.gpus_per_node;
  const SimJobIndex j = sim_->submit(s);
  ours_[j] = {r.name, r.comment, config_.partition};
  active_.push_back(j);
  return static_cast<JobId>(j) + 1;
}

void SimulatedSlurmClient::signal_job(JobId job, int) {
  ++counters_.signals;
  catch_up();
  const auto j = static_cast<SimJobIndex>(job - 1);
  if (job < 1 || !ours_.count(j)) return;
  if (sim_->state(j) == SimJobState::kRunning) sim_->end_early(j, sim_->now() + config_.checkpoint);
}

void SimulatedSlurmClient::cancel_job(JobId job) {
  ++counters_.cancels;
  catch_up();
  const auto j = static_cast<SimJobIndex>(job - 1);
  if (job < 1 || !ours_.count(j)) return;
  const auto st = sim_->state(j);
  if (st == SimJobState::kPending || st == SimJobState::kRunning) sim_->cancel(j);
}

}  // namespace mirage::daemon

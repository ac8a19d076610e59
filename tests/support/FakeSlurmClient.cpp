#include "FakeSlurmClient.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <stdexcept>
#include <string>

namespace mirage::daemon {

void FakeSlurmClient::check_reachable() const {
  if (!reachable_)
    throw SlurmError("Unable to contact slurm controller (connect failure)", ECONNREFUSED, true);
}

JobDump FakeSlurmClient::load_jobs(Seconds last_update) {
  ++counters_.job_dumps;
  if (on_dump_) on_dump_(*this);
  check_reachable();
  JobDump dump;
  dump.taken = clock_.now();
  dump.last_update = update_stamp_;
  if (last_update != 0 && last_update >= update_stamp_) {
    dump.changed = false;
    return dump;
  }
  dump.controller_ahead = controller_offset_;
  dump.jobs.reserve(jobs_.size());
  for (const auto& [id, job] : jobs_) dump.jobs.push_back(job);
  return dump;
}

std::vector<PartitionInfo> FakeSlurmClient::load_partitions() {
  ++counters_.partition_loads;
  ++counters_.node_loads;
  ++counters_.config_loads;
  check_reachable();
  return partitions_;
}

JobId FakeSlurmClient::create_job(const SubmitRequest& request, Seconds submitted) {
  SlurmJob job;
  job.name = request.name;
  job.comment = rewritten_comment_.value_or(request.comment);
  job.partition = request.partition.empty() ? "gpu" : request.partition;
  job.time_limit = request.time_limit;
  job.nodes = request.nodes;
  job.gpus_per_node = request.gpus_per_node;
  job.user_id = submitter_;
  job.submit = submitted;
  const JobId id = add_job(job);
  if (request.after_any > 0) after_any_[id] = request.after_any;
  return id;
}

JobId FakeSlurmClient::submit(const SubmitRequest& request) {
  if (on_submit_) on_submit_(*this);
  ++counters_.submits;
  check_reachable();
  if (refuse_) {
    const std::string why = *refuse_;
    refuse_.reset();
    throw SlurmError("Batch job submission failed: " + why, 2000, false, refuse_for_now_);
  }
  const JobId id = create_job(request);
  submissions_.push_back({id, request});
  if (lose_reply_) {
    lose_reply_ = false;
    throw SlurmError("Socket timed out on send/recv operation", ETIMEDOUT, true);
  }
  return id;
}

void FakeSlurmClient::signal_job(JobId job, int signo) {
  ++counters_.signals;
  check_reachable();
  signals_.push_back({job, signo});
}

void FakeSlurmClient::cancel_job(JobId job) {
  ++counters_.cancels;
  check_reachable();
  cancels_.push_back(job);
  auto it = jobs_.find(job);
  if (it == jobs_.end() || is_finished(it->second.state)) return;
  it->second.state = SlurmJobState::kCancelled;
  it->second.end = controller_now();
  touch();
}

void FakeSlurmClient::release_job(JobId job) {
  ++counters_.releases;
  check_reachable();
  releases_.push_back(job);
  after_any_.erase(job);
}

StartEstimate FakeSlurmClient::will_run(const SubmitRequest& request) {
  ++counters_.will_runs;
  check_reachable();
  will_run_requests_.push_back(request);
  if (will_run_error_) throw SlurmError(*will_run_error_, 5004, true);
  StartEstimate e;
  if (will_run_wait_) e.start = controller_now() + *will_run_wait_;
  e.partition = request.partition.empty() ? partitions_.front().name : request.partition;
  return e;
}

bool FakeSlurmClient::held(JobId job) const {
  const auto it = after_any_.find(job);
  if (it == after_any_.end()) return false;
  const SlurmJob* dep = find(it->second);
  return dep && !is_finished(dep->state);
}

JobId FakeSlurmClient::add_job(SlurmJob job) {
  if (job.id == 0) job.id = next_id_++;
  if (job.submit == kUnknownTime) job.submit = controller_now();
  if (job.partition.empty()) job.partition = "gpu";
  const JobId id = job.id;
  jobs_[id] = std::move(job);
  touch();
  return id;
}

void FakeSlurmClient::start(JobId job) {
  if (held(job))
    throw std::logic_error("fake Slurm: job " + std::to_string(job) +
                           " waits on its dependency and cannot start");
  SlurmJob& j = jobs_.at(job);
  j.state = SlurmJobState::kRunning;
  j.start = controller_now();
  touch();
}

void FakeSlurmClient::finish(JobId job, SlurmJobState state, int exit_code) {
  SlurmJob& j = jobs_.at(job);
  j.state = state;
  j.end = controller_now();
  j.exit_code = exit_code;
  touch();
}

void FakeSlurmClient::requeue(JobId job) {
  SlurmJob& j = jobs_.at(job);
  j.state = SlurmJobState::kPending;
  j.start = kUnknownTime;
  j.end = kUnknownTime;
  touch();
}

void FakeSlurmClient::grant(JobId job, int nodes, int gpus_per_node, Seconds time_limit) {
  SlurmJob& j = jobs_.at(job);
  j.nodes = nodes;
  j.gpus_per_node = gpus_per_node;
  j.time_limit = time_limit;
  touch();
}

void FakeSlurmClient::forget(JobId job) {
  if (auto it = jobs_.find(job); it != jobs_.end()) forgotten_[job] = it->second;
  jobs_.erase(job);
  touch();
}

namespace {

// What sacct's record gives (SacctLookup): how and when it ran, its name and comment (where
// accounting keeps comments), not its shape.
SlurmJob as_accounted(const SlurmJob& j, bool comments) {
  SlurmJob a;
  a.id = j.id;
  a.name = j.name;
  if (comments) a.comment = j.comment;
  a.user_id = j.user_id;
  a.state = j.state;
  a.submit = j.submit;
  a.start = j.start;
  a.end = j.end;
  a.exit_code = j.exit_code;
  a.exit_signal = j.exit_signal;
  return a;
}

}  // namespace

std::map<JobId, AccountedJob> FakeSlurmClient::accounted_jobs(const std::vector<JobId>& jobs) {
  ++counters_.accounting_lookups;
  if (accounting_ && !accounting_reachable_)
    throw SlurmError("sacct: error: slurmdbd: Connection refused", 1, true);
  std::map<JobId, AccountedJob> out;
  for (JobId job : jobs) {
    AccountedJob& answer = out[job];
    if (!accounting_) {
      answer.why = "this cluster keeps no accounting";
      continue;
    }
    for (const SlurmJob& r : extra_records_)
      if (r.id == job) answer.records.push_back(as_accounted(r, accounting_comments_));
    if (auto it = forgotten_.find(job); it != forgotten_.end())
      answer.records.push_back(as_accounted(it->second, accounting_comments_));
    else if (auto it = jobs_.find(job); it != jobs_.end())
      answer.records.push_back(as_accounted(it->second, accounting_comments_));
    std::stable_sort(answer.records.begin(), answer.records.end(),
                     [](const SlurmJob& a, const SlurmJob& b) { return a.submit < b.submit; });
    if (answer.records.empty())
      answer.why = "accounting has no record of job " + std::to_string(job);
  }
  return out;
}

AccountedJobs FakeSlurmClient::search_accounting(const AccountingSearch& search) {
  ++counters_.accounting_searches;
  searches_.push_back(search);
  if (!accounting_) return {std::nullopt, "this cluster keeps no accounting"};
  if (!accounting_reachable_)
    throw SlurmError("sacct: error: slurmdbd: Connection refused", 1, true);
  std::vector<SlurmJob> found;
  for (const auto* jobs : {&forgotten_, &jobs_})
    for (const auto& [id, j] : *jobs) {
      if (j.submit < search.since ||
          std::find(search.names.begin(), search.names.end(), j.name) == search.names.end())
        continue;
      found.push_back(as_accounted(j, accounting_comments_));
    }
  return {std::move(found), {}};
}

const SlurmJob* FakeSlurmClient::find(JobId job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? nullptr : &it->second;
}

std::vector<FakeSlurmClient::Submission> FakeSlurmClient::submissions_tagged(std::int64_t campaign,
                                                                             int segment) const {
  std::vector<Submission> out;
  for (const auto& s : submissions_) {
    const auto tag = JobTag::parse(s.request.comment);
    if (tag && tag->campaign == campaign && tag->segment == segment) out.push_back(s);
  }
  return out;
}

}  // namespace mirage::daemon

#include "mirage/daemon/slurm/SimulatedSlurmClient.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "mirage/core/DurableFile.h"
#include "mirage/simulator/CalibrationFile.h"

namespace mirage::daemon {
namespace {

using json = nlohmann::json;

constexpr std::uint32_t kTraceUser = 65534;     // everyone else's jobs
constexpr Seconds kKeepFinished = 5 * kMinute;  // like MinJobAge: ended jobs stay visible
constexpr int kStateVersion = 1;

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const char* op_name(SimulatedSlurmClient::Event::Op op) {
  switch (op) {
    case SimulatedSlurmClient::Event::Op::kSubmit: return "submit";
    case SimulatedSlurmClient::Event::Op::kEndEarly: return "end_early";
    case SimulatedSlurmClient::Event::Op::kCancel: return "cancel";
    case SimulatedSlurmClient::Event::Op::kRelease: return "release";
  }
  return "?";
}

json to_json(const SimulatedSlurmClient::Event& e) {
  json j{{"op", op_name(e.op)}, {"time", e.time}, {"job", e.job}};
  if (e.op == SimulatedSlurmClient::Event::Op::kEndEarly) j["end"] = e.end;
  if (e.op == SimulatedSlurmClient::Event::Op::kSubmit) {
    j["time_limit"] = e.time_limit;
    j["nodes"] = e.nodes;
    j["gpus_per_node"] = e.gpus_per_node;
    j["name"] = e.name;
    j["comment"] = e.comment;
    if (e.after_any >= 0) j["after_any"] = e.after_any;
  }
  return j;
}

SimulatedSlurmClient::Event event_from_json(const json& j) {
  SimulatedSlurmClient::Event e;
  const std::string op = j.at("op").get<std::string>();
  if (op == "submit")
    e.op = SimulatedSlurmClient::Event::Op::kSubmit;
  else if (op == "end_early")
    e.op = SimulatedSlurmClient::Event::Op::kEndEarly;
  else if (op == "cancel")
    e.op = SimulatedSlurmClient::Event::Op::kCancel;
  else if (op == "release")
    e.op = SimulatedSlurmClient::Event::Op::kRelease;
  else
    throw std::runtime_error("unknown event '" + op + "'");
  e.time = j.at("time").get<Seconds>();
  e.job = j.at("job").get<SimJobIndex>();
  if (e.op == SimulatedSlurmClient::Event::Op::kEndEarly) e.end = j.at("end").get<Seconds>();
  if (e.op == SimulatedSlurmClient::Event::Op::kSubmit) {
    e.time_limit = j.at("time_limit").get<Seconds>();
    e.nodes = j.at("nodes").get<int>();
    e.gpus_per_node = j.at("gpus_per_node").get<int>();
    e.name = j.at("name").get<std::string>();
    e.comment = j.at("comment").get<std::string>();
    e.after_any = j.value("after_any", std::int64_t{-1});
  }
  return e;
}

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
  std::string said;
  const Calibration calibration =
      resolve_calibration(config_.calibration, kept, trace.source, spec, said);
  apply_calibration(calibration, spec, kept);
  if (!said.empty()) spdlog::info("simulator: {}", said);
  calibration_ = fmt::format("limits {}/{}, {} capacity steps, {} dependencies",
                             spec.user_limits.max_running_jobs, spec.user_limits.max_running_nodes,
                             calibration.unavailable.size(), calibration.dependencies.size());
  jobs_ = std::make_shared<const std::vector<SimJobSpec>>(to_sim_jobs(kept));
  sim_ = std::make_unique<Simulator>(spec, jobs_);
  sim_->set_recording(false);
  Seconds now = jobs_->front().submit + config_.warmup;
  sim_->run_until(now);
  const bool resumed = !config_.state_path.empty() && std::filesystem::exists(config_.state_path);
  if (resumed) resume(now);
  sim_->run_until(now);
  // The trace jobs a dump reports now: arrived, and not ended longer ago than records are kept.
  for (; next_arrival_ < jobs_->size() && (*jobs_)[next_arrival_].submit <= now; ++next_arrival_) {
    const auto j = static_cast<SimJobIndex>(next_arrival_);
    const auto st = sim_->state(j);
    if (st == SimJobState::kPending || st == SimJobState::kRunning ||
        sim_->end_time(j) + kKeepFinished >= now)
      active_.push_back(j);
  }
  clock_ = std::make_shared<AcceleratedClock>(now, config_.speed);
  if (!config_.state_path.empty()) save();  // the clock's new anchor
  spdlog::info("simulator: {} {} ({} jobs) on {} nodes x {} GPUs at {}x from {}{}",
               resumed ? "resumed the replay of" : "replaying", trace.source, jobs_->size(),
               spec.nodes, spec.gpus_per_node, config_.speed, format_iso_time(now),
               resumed ? " with " + std::to_string(ours_.size()) + " jobs of the daemon's" : "");
}

SimulatedSlurmClient::~SimulatedSlurmClient() {
  if (config_.state_path.empty() || !clock_) return;
  try {
    save();
  } catch (const std::exception& e) {
    // The last event's save stands; a restart then resumes from that anchor.
    spdlog::warn("simulator: could not save the clock at exit: {}", e.what());
  }
}

std::string SimulatedSlurmClient::name() const {
  return "simulator (" + trace_name_ + ")";
}

// What a state file must match to be resumed: the same jobs on the same machine from the same
// starting point (the speed may change between runs).
std::string SimulatedSlurmClient::fingerprint() const {
  std::ostringstream os;
  os << "jobs " << jobs_->size() << ", first submit " << jobs_->front().submit << ", last submit "
     << jobs_->back().submit << ", " << sim_->spec().nodes << " nodes x "
     << sim_->spec().gpus_per_node << " GPUs, replay from "
     << jobs_->front().submit + config_.warmup << ", calibration " << calibration_;
  return os.str();
}

void SimulatedSlurmClient::save() const {
  json events = json::array();
  for (const Event& e : events_) events.push_back(to_json(e));
  // The wall time first: the simulated time read after it is never behind the pair it anchors.
  const std::int64_t wall = wall_ms();
  const json state{{"version", kStateVersion},
                   {"trace", trace_name_},
                   {"cluster", fingerprint()},
                   {"clock", {{"simulated", clock_->now()}, {"wall_ms", wall}}},
                   {"events", std::move(events)}};
  write_file_durably(config_.state_path, state.dump(1) + "\n");
}

void SimulatedSlurmClient::resume(Seconds& now) {
  const std::string& path = config_.state_path;
  const std::string fresh =
      "; move it aside to start a new simulated cluster (the jobs it "
      "holds are then forgotten)";
  json state;
  {
    std::ifstream in(path);
    state = json::parse(in, nullptr, false);
  }
  if (state.is_discarded() || !state.is_object())
    throw std::runtime_error("simulator: cannot resume from " + path + ": not a state file" +
                             fresh);
  try {
    if (state.at("version").get<int>() != kStateVersion)
      throw std::runtime_error("version " + state.at("version").dump() + ", expected " +
                               std::to_string(kStateVersion));
    const std::string saved = state.at("cluster").get<std::string>();
    if (saved != fingerprint())
      throw std::runtime_error("it holds the cluster of " + state.value("trace", "?") + " (" +
                               saved + "), and this configuration makes the cluster of " +
                               trace_name_ + " (" + fingerprint() + ")");
    for (const json& j : state.at("events")) events_.push_back(event_from_json(j));
    const json& clock = state.at("clock");
    const double down_s =
        std::max<double>(0, static_cast<double>(wall_ms() - clock.at("wall_ms").get<Seconds>())) /
        1000.0;
    now = std::max(now, clock.at("simulated").get<Seconds>() +
                            static_cast<Seconds>(std::floor(down_s * config_.speed)));
  } catch (const std::exception& e) {
    throw std::runtime_error("simulator: cannot resume from " + path + ": " + e.what() + fresh);
  }
  for (const Event& e : events_) {
    if (e.time > sim_->now()) sim_->run_until(e.time);
    apply(e);
    now = std::max(now, e.time);
  }
}

void SimulatedSlurmClient::catch_up() {
  const Seconds now = clock_->now();
  if (now > sim_->now()) sim_->run_until(now);
}

void SimulatedSlurmClient::apply(const Event& e) {
  switch (e.op) {
    case Event::Op::kSubmit: {
      SimJobSpec s;
      s.time_limit = e.time_limit;
      s.runtime = e.time_limit;  // a training segment uses its whole allocation
      s.nodes = e.nodes;
      s.gpus_per_node = e.gpus_per_node;
      s.user = kCampaignUser;
      if (e.after_any >= 0) s.after_any = static_cast<SimJobIndex>(e.after_any);
      const SimJobIndex j = sim_->submit(s);
      if (j != e.job)
        throw std::runtime_error("replayed submission got job index " + std::to_string(j) +
                                 ", recorded " + std::to_string(e.job));
      ours_[j] = {e.name, e.comment};
      break;
    }
    case Event::Op::kEndEarly: sim_->end_early(e.job, e.end); break;
    case Event::Op::kRelease: sim_->release_dependency(e.job); break;
    case Event::Op::kCancel: {
      const auto st = sim_->state(e.job);
      if (st == SimJobState::kPending || st == SimJobState::kRunning) sim_->cancel(e.job);
      break;
    }
  }
}

void SimulatedSlurmClient::record(const Event& e) {
  events_.push_back(e);
  if (!config_.state_path.empty()) {
    try {
      save();
    } catch (const std::exception& err) {
      events_.pop_back();
      // Refused, not unknown: nothing happened, and the controller retries after retry_delay.
      throw SlurmError(std::string("simulated cluster: ") + err.what(), 1, false);
    }
  }
  apply(e);
}

namespace {

// The reason slurmctld would give for a pending job in this state.
std::string reason_for(PendingState state) {
  switch (state) {
    case PendingState::kEligible: return "Priority";
    case PendingState::kHeld: return "JobHeldUser";
    case PendingState::kDependency: return "Dependency";
    case PendingState::kLimit: return "QOSMaxJobsPerUserLimit";
    case PendingState::kNotYetEligible: return "BeginTime";
    case PendingState::kNever: return "BadConstraints";
  }
  return "Priority";
}

}  // namespace

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
    case SimJobState::kPending:
      out.state = SlurmJobState::kPending;
      if (const auto p = sim_->pending_view(j)) {
        // As slurmctld would report it: a job that is not held has a priority of 1 at least.
        out.priority = std::max(1.0, p->priority);
        // A job a boundary or a down partition holds is eligible and ages, as slurmctld ages a
        // job a reservation holds back: only its reason differs.
        // pending_view reports such a job not eligible yet: only then is it worth asking which.
        const bool held = p->state == PendingState::kNotYetEligible;
        const bool down = held && sim_->held_by_down_window(j);
        const bool boundary = held && !down && sim_->held_by_boundary(j);
        out.reason = down       ? "PartitionDown"
                     : boundary ? "ReqNodeNotAvail, Reserved for maintenance"
                                : reason_for(p->state);
        if (down || boundary || p->state == PendingState::kEligible ||
            p->state == PendingState::kLimit)
          out.eligible = out.accrue = sim_->now() - p->accrued;
      }
      break;
    case SimJobState::kRunning:
      out.state = SlurmJobState::kRunning;
      out.priority = sim_->started_priority(j);
      break;
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
  dump.controller_ahead = 0;  // one clock: the simulated controller's is the daemon's
  while (next_arrival_ < jobs_->size() && (*jobs_)[next_arrival_].submit <= now)
    active_.push_back(static_cast<SimJobIndex>(next_arrival_++));
  std::vector<SimJobIndex> keep;
  keep.reserve(active_.size());
  dump.jobs.reserve(active_.size() + ours_.size());
  for (SimJobIndex j : active_) {
    SlurmJob job = report(j);
    const bool gone =
        is_finished(job.state) && job.end != kUnknownTime && job.end + kKeepFinished < now;
    if (gone) continue;
    keep.push_back(j);
    dump.jobs.push_back(std::move(job));
  }
  active_ = std::move(keep);
  for (const auto& [j, extra] : ours_) dump.jobs.push_back(report(j));
  return dump;
}

std::vector<PartitionInfo> SimulatedSlurmClient::load_partitions() {
  ++counters_.partition_loads;
  ++counters_.node_loads;
  ++counters_.config_loads;
  catch_up();
  PartitionInfo p{config_.partition,    sim_->spec().nodes, sim_->spec().gpus_per_node, 0, true,
                  sim_->spec().priority};
  // The capacity the calibration holds back, and its per-user limits, as a site's node states
  // and QOS would show them.
  p.unavailable_nodes = sim_->unavailable_nodes();
  p.user_limits = sim_->spec().user_limits;
  p.limits_note = "the simulated cluster's calibration";
  // Its weekly boundaries, as slurmctld lists a recurring reservation of every node.
  ++counters_.reservation_loads;
  p.reservations = sim_->boundary_reservations();
  return {p};
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
  if (r.time_limit <= 0)
    throw SlurmError("Batch job submission failed: Requested time limit is invalid", 2051, false);
  catch_up();
  Event e;
  e.op = Event::Op::kSubmit;
  e.time = sim_->now();
  e.job = sim_->next_submit_index();
  e.time_limit = r.time_limit;
  e.nodes = r.nodes;
  e.gpus_per_node = r.gpus_per_node;
  e.name = r.name;
  e.comment = r.comment;
  SimJobIndex dep = 0;
  if (r.after_any > 0 && ours(r.after_any, dep)) e.after_any = dep;
  record(e);
  return static_cast<JobId>(e.job) + 1;
}

bool SimulatedSlurmClient::ours(JobId job, SimJobIndex& index) const {
  if (job < 1) return false;
  index = static_cast<SimJobIndex>(job - 1);
  return ours_.count(index) > 0;
}

void SimulatedSlurmClient::signal_job(JobId job, int) {
  ++counters_.signals;
  catch_up();
  SimJobIndex j = 0;
  if (!ours(job, j) || sim_->state(j) != SimJobState::kRunning) return;
  Event e;
  e.op = Event::Op::kEndEarly;
  e.time = sim_->now();
  e.job = j;
  e.end = sim_->now() + config_.checkpoint;
  record(e);
}

void SimulatedSlurmClient::release_job(JobId job) {
  ++counters_.releases;
  catch_up();
  SimJobIndex j = 0;
  if (!ours(job, j) || sim_->state(j) != SimJobState::kPending) return;
  Event e;
  e.op = Event::Op::kRelease;
  e.time = sim_->now();
  e.job = j;
  record(e);
}

std::map<JobId, AccountedJob> SimulatedSlurmClient::accounted_jobs(const std::vector<JobId>& jobs) {
  ++counters_.accounting_lookups;
  catch_up();
  std::map<JobId, AccountedJob> out;
  for (JobId job : jobs) {
    const auto j = static_cast<SimJobIndex>(job - 1);
    out[job] =
        job >= 1 && ours_.count(j)
            ? AccountedJob{{report(j)}, {}}
            : AccountedJob{{},
                           "the simulated cluster ran no job " + std::to_string(job) + " of ours"};
  }
  return out;
}

AccountedJobs SimulatedSlurmClient::search_accounting(const AccountingSearch& search) {
  ++counters_.accounting_searches;
  catch_up();
  std::vector<SlurmJob> found;
  for (const auto& [j, extra] : ours_) {
    SlurmJob job = report(j);
    if (job.submit >= search.since &&
        std::find(search.names.begin(), search.names.end(), job.name) != search.names.end())
      found.push_back(std::move(job));
  }
  return {std::move(found), {}};
}

StartEstimate SimulatedSlurmClient::will_run(const SubmitRequest& r) {
  ++counters_.will_runs;
  catch_up();
  SimJobSpec s;
  s.time_limit = std::max<Seconds>(kMinute, r.time_limit);
  s.nodes = std::clamp(r.nodes, 1, sim_->spec().nodes);
  s.gpus_per_node = r.gpus_per_node;
  StartEstimate out;
  out.start = sim_->planned_start(s);
  out.partition = config_.partition;
  return out;
}

void SimulatedSlurmClient::cancel_job(JobId job) {
  ++counters_.cancels;
  catch_up();
  SimJobIndex j = 0;
  if (!ours(job, j)) return;
  const auto st = sim_->state(j);
  if (st != SimJobState::kPending && st != SimJobState::kRunning) return;
  Event e;
  e.op = Event::Op::kCancel;
  e.time = sim_->now();
  e.job = j;
  record(e);
}

}  // namespace mirage::daemon

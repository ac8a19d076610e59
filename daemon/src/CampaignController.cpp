#include "mirage/daemon/CampaignController.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_map>

#include "CampaignEntry.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/agents/RiskFrontier.h"
#include "mirage/agents/WaitDistribution.h"
#include "mirage/core/Error.h"
#include "mirage/core/QueueForecast.h"
#include "mirage/daemon/BatchScriptDirectives.h"
#include "mirage/daemon/DoneFile.h"
#include "mirage/daemon/OutputFile.h"

namespace mirage::daemon {

void Actions::append(Actions other) {
  for (auto& a : other.submits) submits.push_back(std::move(a));
  for (auto& a : other.signals) signals.push_back(a);
  for (auto& a : other.cancels) cancels.push_back(a);
  for (auto& a : other.releases) releases.push_back(a);
  for (auto& a : other.estimates) estimates.push_back(std::move(a));
  for (auto& a : other.lookups) lookups.push_back(a);
}

namespace {

std::string estimate_key(std::int64_t campaign) {
  return "slurm_estimate:" + std::to_string(campaign);
}

// The limit of a segment submitted with none from the flags or the script, until Slurm's record
// says which default it got: the successor then waits for the predecessor's end.
constexpr Seconds kUnknownLimit = 365 * kDay;

// How much later than a segment's start the done file may be written and still be taken as
// written before it started (clock skew between the file server and slurmctld; same second).
constexpr Seconds kDoneFileSlack = 10;
constexpr const char* kStartedAfterDone = "cancelled: it started after the done file was written";

std::string attempts_text(int n) {
  return std::to_string(n) + (n == 1 ? " attempt" : " attempts");
}

// "FAILED, exit code 3", "CANCELLED, signal 9", "TIMEOUT".
std::string ended_text(const SlurmJob& job) {
  std::string out(to_string(job.state));
  if (job.exit_signal > 0)
    out += ", signal " + std::to_string(job.exit_signal);
  else if (job.exit_code > 0)
    out += ", exit code " + std::to_string(job.exit_code);
  return out;
}

}  // namespace

// The daemon's own jobs in a dump, by their tag (campaign, segment, attempt). A segment's job is
// found by its tag, never by its id alone: ids repeat (after MaxJobId wraps, or on a cluster
// that lost its state), and a job under a recorded id that lacks the segment's tag is not it.
struct CampaignController::JobIndex {
  std::map<std::tuple<std::int64_t, int, int>, std::vector<const SlurmJob*>> by_tag;
  const std::vector<const SlurmJob*>* tagged(std::int64_t campaign, int segment,
                                             int attempt) const {
    const auto it = by_tag.find({campaign, segment, attempt});
    return it == by_tag.end() ? nullptr : &it->second;
  }
};

CampaignController::CampaignController(CampaignStore& store, const Clock& clock,
                                       ControllerConfig config, PolicyFactory factory)
    : store_(store), clock_(clock), config_(std::move(config)), factory_(std::move(factory)) {
  if (!config_.wait_distribution_file.empty()) {
    try {
      waits_ = std::make_shared<const WaitDistribution>(
          read_wait_distribution(config_.wait_distribution_file));
    } catch (const std::exception& e) {  // `--check` names it; campaigns asking for it are refused
      spdlog::error("[policy] wait_distribution: {}", e.what());
    }
  }
  if (factory_) return;
  PolicyContext context;
  context.waits = waits_;
  factory_ = [context](std::string_view name) { return mirage::make_policy(name, context); };
}

CampaignController::~CampaignController() = default;

std::unique_ptr<Policy> CampaignController::make_policy_for(const std::string& name) const {
  return factory_(name.empty() ? config_.default_policy : name);
}

void CampaignController::load() {
  entries_.clear();
  const Seconds now = clock_.now();
  for (auto& rec : store_.load_campaigns()) {
    auto e = std::make_unique<Entry>();
    e->rec = std::move(rec);
    if (!is_finished(e->rec.state)) {
      try {
        e->policy = make_policy_for(e->rec.spec.policy);
      } catch (const std::exception& ex) {
        spdlog::warn("campaign {}: policy '{}' cannot be loaded ({}); using reactive",
                     e->rec.spec.id, e->rec.spec.policy, ex.what());
        e->policy = factory_("reactive");
      }
    }
    for (const auto& s : e->rec.segments)
      if (s.submitting) e->unknown_since[s.seg.index] = std::max(now, s.intent_time);
    if (e->rec.done_file.empty()) {  // stored before campaigns had one
      e->rec.done_file = default_done_file(store_.path(), store_.store_id(), e->rec.spec.id);
      if (auto why = prepare_done_file(e->rec.done_file))
        spdlog::warn("campaign {}: done file: {}", e->rec.spec.id, *why);
      store_.save_done_file(e->rec);
    }
    restore_estimate(*e);
    const std::int64_t id = e->rec.spec.id;
    entries_[id] = std::move(e);
  }
  spdlog::info(
      "loaded {} campaigns from {} ({} submissions to reconcile with Slurm, {} segments whose "
      "fate is unknown)",
      entries_.size(), store_.path(), unresolved(), fates_unknown());
}

CampaignController::Entry& CampaignController::entry(std::int64_t id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) throw RequestError("there is no campaign " + std::to_string(id));
  return *it->second;
}

const CampaignRecord* CampaignController::find(std::int64_t id) const {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : &it->second->rec;
}

std::vector<const CampaignRecord*> CampaignController::campaigns() const {
  std::vector<const CampaignRecord*> out;
  out.reserve(entries_.size());
  for (const auto& [id, e] : entries_) out.push_back(&e->rec);
  return out;
}

std::size_t CampaignController::unresolved() const {
  std::size_t n = 0;
  for (const auto& [id, e] : entries_) n += e->unknown_since.size();
  return n;
}

std::size_t CampaignController::fates_unknown() const {
  std::size_t n = 0;
  for (const auto& [id, e] : entries_)
    for (const auto& s : e->rec.segments) n += s.fate_unknown() && !is_finished(e->rec.state);
  return n;
}

std::size_t CampaignController::in_flight() const {
  std::size_t n = 0;
  for (const auto& [id, e] : entries_) n += e->in_flight.size();
  return n;
}

// --------------------------------------------------------------------------------- requests

const CampaignRecord& CampaignController::add(CampaignRequest r, std::vector<std::string>* notes) {
  auto fail = [](const std::string& m) { throw RequestError(m); };
  // A retry of a request that was carried out (the reply was lost): the campaign it made.
  if (!r.request_key.empty())
    for (const auto& [id, e] : entries_)
      if (e->rec.request_key == r.request_key && e->rec.owner_uid == r.owner_uid) {
        if (notes)
          *notes = {"this request had already added campaign " + std::to_string(id) +
                    " (its reply was lost); nothing new was added"};
        spdlog::info("campaign {}: a retry of the request that added it; nothing added", id);
        return e->rec;
      }
  if (r.name.empty()) fail("name: a campaign needs a name");
  if (r.name.size() > 200) fail("name: longer than 200 characters");
  if (r.script.empty()) fail("script: the script is empty");
  if (r.segments < 0 || r.segments > kMaxSegments)
    fail("segments: expected 1 to " + std::to_string(kMaxSegments) +
         ", or none (until a segment creates the done file)");
  const ShapeFlags& f = r.shape;
  if (f.nodes && (*f.nodes < 1 || *f.nodes > 100000)) fail("nodes: expected 1 to 100000");
  if (f.gpus_per_node && (*f.gpus_per_node < 0 || *f.gpus_per_node > 1024))
    fail("gpus_per_node: expected 0 to 1024");
  if (f.time_limit && *f.time_limit < kMinute) fail("time_limit: expected at least one minute");
  if (r.max_retries && (*r.max_retries < 0 || *r.max_retries > 1000))
    fail("max_retries: expected 0 to 1000");
  if (r.handoff_grace < 0) fail("handoff_grace: expected 0 or more seconds");
  if (r.max_hours != 0 && !(r.max_hours >= 1.0 / 60 && r.max_hours <= 24.0 * 365 * 10))
    fail("max_hours: expected 1 minute (0.0167) to 87600 hours, or 0 for no cap");
  // As sbatch reads it: a script sbatch would refuse, or a directive that does not parse, is
  // refused now rather than at the first submission.
  const std::string script_name = r.script_path.empty() ? "the script" : r.script_path;
  const BatchScriptDirectives directives = read_batch_directives(r.script, script_name);
  if (directives.error) fail(directives.error->what());
  SegmentShape shape = resolve_segment_shape(f, directives, script_name);
  if (config_.time_limit_required && shape.time_limit <= 0)
    fail(
        "time_limit: the simulated cluster has no default time limit; give --time-limit or an "
        "#SBATCH --time line");
  int owned = 0;
  for (const auto& [id, e] : entries_)
    owned += e->rec.owner_uid == r.owner_uid && !is_finished(e->rec.state);
  if (owned >= config_.max_campaigns_per_user)
    fail("limit reached: user " + std::to_string(r.owner_uid) + " already has " +
         std::to_string(owned) + " active or paused campaigns (guard.max_campaigns_per_user = " +
         std::to_string(config_.max_campaigns_per_user) + ")");
  if (!r.done_file.empty())
    if (auto why = prepare_done_file(r.done_file)) fail("done_file: " + *why);

  if (r.max_overlap) {
    if (!r.policy.empty()) fail("give a policy or a max_overlap, not both");
    if (*r.max_overlap < 0) fail("max_overlap: expected 0 or more seconds");
    if (config_.frontier_file.empty())
      fail(
          "max_overlap: the daemon has no risk frontier to choose from ([policy] frontier in its "
          "config; `mirage eval --sweep-risk --save-frontier FILE` on the cluster's trace makes "
          "one)");
    RiskFrontier f;
    try {
      f = read_risk_frontier(config_.frontier_file);
    } catch (const InputError& ex) {
      fail(std::string("max_overlap: ") + ex.what());
    }
    const auto point = point_within(f, *r.max_overlap);
    if (!point) {
      const FrontierOperatingPoint& near = least_overlap_point(f);
      fail(fmt::format(
          "max_overlap: no point of the frontier ({}) overlaps {} or less per boundary; the "
          "closest is {} with {:.0f} min",
          config_.frontier_file, format_short_duration(*r.max_overlap), near.policy,
          near.mean_overlap_h * 60));
    }
    r.policy = point->policy;
    shape.notes.push_back(fmt::format(
        "policy {}: the risk frontier's least interruption within {} of overlap per boundary "
        "({:.2f} h of interruption, {:.0f} min of overlap on {}, {}-node chains)",
        point->policy, format_short_duration(*r.max_overlap), point->mean_interruption_h,
        point->mean_overlap_h * 60, f.trace, f.chain_nodes));
  }

  auto e = std::make_unique<Entry>();
  try {
    e->policy = make_policy_for(r.policy);
  } catch (const InputError& ex) {
    fail("policy: " + ex.message());
  } catch (const std::exception& ex) {
    fail(std::string("policy: ") + ex.what());
  }
  const std::string& chosen = r.policy.empty() ? config_.default_policy : r.policy;
  if (waits_ && reads_wait_distribution(chosen))
    if (const auto why = chain_mismatch(*waits_, shape.nodes))
      fail("policy: " + chosen + " reads " + config_.wait_distribution_file +
           ", which cannot serve this campaign: " + *why);
  CampaignRecord& rec = e->rec;
  rec.spec.name = r.name;
  rec.spec.script = r.script;
  rec.spec.policy = r.policy.empty() ? config_.default_policy : r.policy;
  rec.spec.segment_count = r.segments;
  rec.spec.nodes = shape.nodes;
  rec.spec.gpus_per_node = shape.gpus_per_node;
  rec.spec.time_limit = shape.time_limit;
  // Neither the flags nor the script name one: the daemon's default goes with each submission.
  rec.spec.partition = shape.partition.empty() ? config_.partition : shape.partition;
  rec.account = shape.account.empty() ? config_.account : shape.account;
  rec.qos = shape.qos;
  rec.sbatch_options = std::move(shape.sbatch_options);
  rec.spec.overlap = r.overlap;
  rec.spec.handoff_grace = r.handoff_grace;
  rec.script_path = r.script_path;
  rec.owner_uid = r.owner_uid;
  rec.max_retries = r.max_retries.value_or(config_.max_retries);
  rec.fallback_chain = r.fallback_chain.value_or(config_.fallback_chain);
  rec.max_hours = r.max_hours;
  rec.done_file = r.done_file;
  rec.work_dir = r.work_dir;
  rec.environment = std::move(r.environment);
  rec.state = CampaignState::kActive;
  rec.created = clock_.now();
  rec.request_key = r.request_key;
  {
    CampaignStore::Batch batch(store_);
    store_.add_campaign(rec);
    if (rec.done_file.empty()) {  // named after the id: known once the row exists
      rec.done_file = default_done_file(store_.path(), store_.store_id(), rec.spec.id);
      if (auto why = prepare_done_file(rec.done_file)) fail("done_file: " + *why);
      store_.save_done_file(rec);
    }
    batch.commit();
  }
  for (const auto& note : shape.notes) spdlog::info("campaign {}: {}", rec.spec.id, note);
  spdlog::info(
      "campaign {} '{}' added: {} segments of {} node(s) x {} GPU(s), limit {}, policy {}, {}",
      rec.spec.id, rec.spec.name,
      rec.open_ended() ? std::string("open-ended") : std::to_string(rec.spec.segment_count),
      rec.spec.nodes, rec.spec.gpus_per_node,
      rec.spec.time_limit > 0 ? format_slurm_duration(rec.spec.time_limit) : "the partition's",
      rec.spec.policy, to_string(rec.spec.overlap));
  if (notes) *notes = std::move(shape.notes);
  const std::int64_t id = rec.spec.id;
  auto& ref = *e;
  entries_[id] = std::move(e);
  return ref.rec;
}

const CampaignRecord& CampaignController::pause(std::int64_t id) {
  Entry& e = entry(id);
  if (e.rec.state == CampaignState::kPaused) return e.rec;
  if (e.rec.state != CampaignState::kActive)
    throw RequestError("campaign " + std::to_string(id) + " is " +
                       std::string(to_string(e.rec.state)) + ": only an active one can be paused");
  e.rec.state = CampaignState::kPaused;
  store_.save_campaign_state(e.rec);
  spdlog::info("campaign {} paused", id);
  return e.rec;
}

const CampaignRecord& CampaignController::resume(std::int64_t id) {
  Entry& e = entry(id);
  if (e.rec.state == CampaignState::kActive) return e.rec;
  if (e.rec.state != CampaignState::kPaused)
    throw RequestError("campaign " + std::to_string(id) + " is " +
                       std::string(to_string(e.rec.state)) + ": only a paused one can be resumed");
  e.rec.state = CampaignState::kActive;
  e.next_decision = 0;
  store_.save_campaign_state(e.rec);
  spdlog::info("campaign {} resumed", id);
  return e.rec;
}

Actions CampaignController::cancel(std::int64_t id) {
  Entry& e = entry(id);
  if (is_finished(e.rec.state))
    throw RequestError("campaign " + std::to_string(id) + " is already " +
                       std::string(to_string(e.rec.state)));
  Actions out;
  const Seconds now = clock_.now();
  CampaignStore::Batch batch(store_);
  finish(e, CampaignState::kCancelled, "cancelled by the user", now);
  sweep_cancelled(e, now, out);
  batch.commit();
  return out;
}

void CampaignController::cancel_segment(Entry& e, SegmentRecord& s, SegmentState state,
                                        const std::string& message, Seconds now, Actions& out) {
  out.cancels.push_back({e.rec.spec.id, s.seg.index, s.seg.slurm_job_id});
  s.seg.state = state;
  s.seg.end_time = now;
  s.message = message;
  save(e, s);
}

void CampaignController::sweep_cancelled(Entry& e, Seconds now, Actions& out) {
  for (auto& s : e.rec.segments) {
    if (s.seg.slurm_job_id <= 0 || s.submitting) continue;
    if (s.seg.state != SegmentState::kPending && s.seg.state != SegmentState::kRunning) continue;
    cancel_segment(e, s, SegmentState::kFailed, "cancelled with the campaign", now, out);
  }
}

// ------------------------------------------------------------------------------------ ticks

Actions CampaignController::tick(const std::vector<SlurmJob>& jobs, Seconds dump_time,
                                 const ObservationBuilder& history, const QueueSnapshot& queue) {
  ++counters_.ticks;
  const Seconds now = clock_.now();
  JobIndex index;
  for (const auto& j : jobs) {
    if (j.comment.size() < 7 || j.comment.compare(0, 7, "mirage:") != 0) continue;
    if (j.user_id != config_.user_id) continue;
    const auto tag = JobTag::parse(j.comment);
    if (tag && tag->store == store_.store_id())
      index.by_tag[{tag->campaign, tag->segment, tag->attempt}].push_back(&j);
  }
  if (!orphans_reported_) {
    report_orphans(index);
    orphans_reported_ = true;
  }
  Actions out;
  CampaignStore::Batch batch(store_);
  for (auto& [id, ep] : entries_) {
    Entry& e = *ep;
    if (is_finished(e.rec.state)) {
      // A cancelled campaign may still have a submission whose outcome is unknown, or a job
      // submitted while it was being cancelled: find them and cancel them.
      if (e.rec.state != CampaignState::kCancelled) continue;
      settle_intents(e, index, dump_time, now, out);
      sweep_cancelled(e, now, out);
      continue;
    }
    settle_intents(e, index, dump_time, now, out);
    track(e, index, dump_time, now, out);
    handoff(e, now, out);
    if (finish_if_done_file(e, now, out)) continue;
    if (e.rec.state == CampaignState::kActive) advance(e, now, history, queue, out);
  }
  batch.commit();
  return out;
}

// Jobs tagged by this store that no campaign of it owns: a store that lost what it had written
// (its -wal file deleted after a crash, a backup restored). Said once a start, a line each: they
// run or wait on unwatched, and only the user knows whether to keep them.
void CampaignController::report_orphans(const JobIndex& index) const {
  for (const auto& [key, jobs] : index.by_tag) {
    const auto& [campaign, segment, attempt] = key;
    const auto it = entries_.find(campaign);
    bool owned = false;
    if (it != entries_.end() && segment < it->second->count()) {
      const SegmentRecord& s = it->second->rec.segments[static_cast<std::size_t>(segment)];
      owned = attempt <= s.seg.attempts;
    }
    if (owned) continue;
    for (const SlurmJob* j : jobs) {
      if (is_finished(j->state)) continue;
      spdlog::warn(
          "job {} ({}, {}) carries the tag {} of this store {}, but no campaign here owns it: the "
          "store has lost what it had written. mirage does not follow it; keep it, or cancel it "
          "with `scancel {}`",
          j->id, j->name, to_string(j->state), j->comment, store_.path(), j->id);
    }
  }
}

void CampaignController::settle_intents(Entry& e, const JobIndex& index, Seconds dump_time,
                                        Seconds now, Actions& out) {
  for (auto& s : e.rec.segments) {
    if (!s.submitting || e.in_flight.count(s.seg.index)) continue;
    const auto* found = index.tagged(e.rec.spec.id, s.seg.index, s.seg.attempts);
    if (found) {
      const SlurmJob& job = *found->front();
      s.submitting = false;
      s.seg.slurm_job_id = job.id;
      s.seg.submit_time = job.submit;
      s.seg.state = SegmentState::kPending;
      e.unknown_since.erase(s.seg.index);
      store_.finish_submission(e.rec.spec.id, s, job.id);
      ++counters_.adopted;
      spdlog::info("campaign {} segment {}: adopted job {} found by its tag {}", e.rec.spec.id,
                   s.seg.index, job.id, job.comment);
      if (!is_finished(e.rec.state)) apply_job(e, s, job, now, out);
      continue;
    }
    auto [since, inserted] = e.unknown_since.emplace(s.seg.index, now);
    if (dump_time < since->second + config_.reconcile_delay) continue;
    if (is_finished(e.rec.state)) {
      s.submitting = false;
      e.unknown_since.erase(s.seg.index);
      store_.refuse_submission(e.rec.spec.id, s, "abandoned: the campaign is finished");
      continue;
    }
    spdlog::warn(
        "campaign {} segment {}: attempt {} is not in Slurm (no job tagged {}); "
        "submitting it again",
        e.rec.spec.id, s.seg.index, s.seg.attempts,
        JobTag{store_.store_id(), e.rec.spec.id, s.seg.index, s.seg.attempts}.str());
    ++counters_.resubmitted;
    e.unknown_since.erase(s.seg.index);
    submit(e, s, now, out, /*again=*/true, "not found in Slurm by its tag; submitted again");
  }
}

void CampaignController::track(Entry& e, const JobIndex& index, Seconds dump_time, Seconds now,
                               Actions& out) {
  for (auto& s : e.rec.segments) {
    if (s.seg.slurm_job_id <= 0 || s.submitting) continue;
    if (s.seg.state != SegmentState::kPending && s.seg.state != SegmentState::kRunning) continue;
    if (const SlurmJob* job = segment_job(e, s, index)) {
      apply_job(e, s, *job, now, out);
      continue;
    }
    // Not in the dump: the controller purged its record (MinJobAge) or lost it. Only look into
    // the absence of a job submitted well before the dump was taken.
    if (s.seg.submit_time < 0 || s.seg.submit_time + config_.reconcile_delay > dump_time) continue;
    settle_fate(e, s, now, out);
  }
}

const SlurmJob* CampaignController::segment_job(Entry& e, SegmentRecord& s, const JobIndex& index) {
  const auto* tagged = index.tagged(e.rec.spec.id, s.seg.index, s.seg.attempts);
  if (!tagged) return nullptr;
  for (const SlurmJob* j : *tagged)
    if (j->id == s.seg.slurm_job_id) return j;
  // The tag is there under another id: the job is the one that carries the tag, and of several
  // (a duplicate someone made by hand), the one submitted closest to the recorded submission.
  const SlurmJob* best = tagged->front();
  for (const SlurmJob* j : *tagged)
    if (std::llabs(j->submit - s.seg.submit_time) < std::llabs(best->submit - s.seg.submit_time))
      best = j;
  spdlog::warn(
      "campaign {} segment {}: job {} does not carry the tag {}; job {} does, and is "
      "followed instead",
      e.rec.spec.id, s.seg.index, s.seg.slurm_job_id, best->comment, best->id);
  s.seg.slurm_job_id = best->id;
  save(e, s);
  return best;
}

void CampaignController::apply_job(Entry& e, SegmentRecord& s, const SlurmJob& job, Seconds now,
                                   Actions& out) {
  const std::int64_t id = e.rec.spec.id;
  record_granted_shape(e, job);
  s.priority = job.priority;
  if (s.fate_unknown()) {  // back in the dump (a controller that had lost it recovered)
    s.lost_at = -1;
    e.answers.erase(s.seg.index);
    e.next_lookup.erase(s.seg.index);
    save(e, s);
  }
  if (!job.std_out.empty() && job.std_out != s.output_file) {
    s.output_file = job.std_out;
    save(e, s);
  }
  if (job.submit != kUnknownTime && s.seg.submit_time != job.submit) {
    s.seg.submit_time = job.submit;  // Slurm's own record over the daemon's clock
    save(e, s);
  }
  switch (job.state) {
    case SlurmJobState::kPending:
      if (s.seg.state != SegmentState::kPending) {
        s.seg.state = SegmentState::kPending;  // e.g. requeued
        save(e, s);
      }
      return;
    case SlurmJobState::kRunning:
    case SlurmJobState::kSuspended:
      if (s.seg.state != SegmentState::kRunning) {
        s.seg.state = SegmentState::kRunning;
        s.seg.start_time = job.start != kUnknownTime ? job.start : now;
        save(e, s);
        spdlog::info(
            "campaign {} segment {}: job {} started after {} in the queue", id, s.seg.index, job.id,
            format_slurm_duration(std::max<Seconds>(0, s.seg.start_time - s.seg.submit_time)));
        // A new boundary begins: the next segment's decisions start now.
        if (e.policy) e.policy->reset();
        e.next_decision = 0;
      }
      return;
    default: break;
  }
  // Finished.
  const bool started = job.start != kUnknownTime || s.seg.state == SegmentState::kRunning;
  if (s.seg.start_time < 0 && job.start != kUnknownTime) s.seg.start_time = job.start;
  s.seg.end_time = job.end != kUnknownTime ? job.end : now;
  const std::string ended = ended_text(job);
  const std::string what = "job " + std::to_string(job.id) + " ended " + ended;
  store_.record_outcome(id, s, started ? ended : ended + " before it started");
  switch (job.state) {
    case SlurmJobState::kCompleted:
    case SlurmJobState::kTimeout:
      s.seg.state = SegmentState::kDone;
      // What made it take more than one attempt stays in view.
      if (s.seg.attempts > 1 && !s.message.empty() && s.message.rfind("earlier attempt", 0) != 0)
        s.message = "earlier attempt: " + s.message;
      else if (s.seg.attempts <= 1)
        s.message.clear();
      save(e, s);
      spdlog::info("campaign {} segment {}: {}", id, s.seg.index, what);
      return;
    case SlurmJobState::kCancelled:
      if (started) {
        s.seg.state = SegmentState::kDone;
        s.message = s.signalled_at < 0 ? "cancelled while running" : "";
        save(e, s);
        spdlog::info("campaign {} segment {}: {}", id, s.seg.index, what);
        return;
      }
      segment_failed(e, s, false, what + " before it started", now, out);
      return;
    default:
      segment_failed(e, s, started, what + (started ? "" : " before it started"), now, out);
      return;
  }
}

void CampaignController::segment_failed(Entry& e, SegmentRecord& s, bool started,
                                        const std::string& why, Seconds now, Actions& out) {
  const std::int64_t id = e.rec.spec.id;
  const int k = s.seg.index;
  s.message = why;
  const bool successor_out =
      k + 1 < e.count() && (e.seg(k + 1).seg.slurm_job_id > 0 || e.seg(k + 1).submitting);
  if (started && successor_out) {
    s.seg.state = SegmentState::kFailed;
    save(e, s);
    // The successor carries on where this one stopped, which is a retry too: a chain whose
    // segments fail one after another (a script that fails at once, with the fallback chain
    // queueing each successor) stops after max_retries + 1 of them.
    int streak = 0;
    for (int j = k; j >= 0 && e.seg(j).seg.state == SegmentState::kFailed; --j) ++streak;
    if (streak > max_retries(e)) {
      for (auto& n : e.rec.segments) {
        if (n.seg.index <= k || n.seg.slurm_job_id <= 0) continue;
        if (n.seg.state != SegmentState::kPending && n.seg.state != SegmentState::kRunning)
          continue;
        cancel_segment(e, n, SegmentState::kFailed,
                       "cancelled: the segments before it failed one after another", now, out);
      }
      finish(e, CampaignState::kFailed,
             std::to_string(streak) + " segments in a row failed (segments " +
                 std::to_string(k - streak + 1) + " to " + std::to_string(k) +
                 "); the last: " + why,
             now);
      return;
    }
    spdlog::warn("campaign {} segment {}: {}; segment {} is already submitted and carries on", id,
                 k, why, k + 1);
    return;
  }
  // It created the done file before it failed: nothing is left to run again.
  if (done_file_exists(e.rec.done_file)) {
    s.seg.state = SegmentState::kFailed;
    save(e, s);
    return;
  }
  if (s.seg.attempts <= max_retries(e)) {
    spdlog::warn("campaign {} segment {}: {}; submitting it again (attempt {} of {})", id, k, why,
                 s.seg.attempts + 1, max_retries(e) + 1);
    s.seg.state = SegmentState::kPlanned;
    s.seg.slurm_job_id = 0;
    s.seg.submit_time = s.seg.start_time = s.seg.end_time = -1;
    s.signalled_at = s.killed_at = -1;
    save(e, s);
    return;
  }
  s.seg.state = SegmentState::kFailed;
  save(e, s);
  finish(e, CampaignState::kFailed,
         "segment " + std::to_string(k) + " failed after " + attempts_text(s.seg.attempts) + ": " +
             why,
         now);
}

int CampaignController::max_retries(const Entry& e) const {
  return e.rec.max_retries >= 0 ? e.rec.max_retries : config_.max_retries;
}

void CampaignController::record_granted_shape(Entry& e, const SlurmJob& job) {
  Campaign& c = e.rec.spec;
  const Seconds limit = job.time_limit > 0 ? job.time_limit : c.time_limit;
  const std::string& partition = job.partition.empty() ? c.partition : job.partition;
  if (e.rec.shape_granted && c.nodes == job.nodes && c.gpus_per_node == job.gpus_per_node &&
      c.time_limit == limit && c.partition == partition)
    return;
  spdlog::info(
      "campaign {}: Slurm granted job {} {} node(s) x {} GPU(s), limit {}, partition {}; "
      "decisions use this shape",
      c.id, job.id, job.nodes, job.gpus_per_node, format_slurm_duration(limit), partition);
  c.nodes = job.nodes;
  c.gpus_per_node = job.gpus_per_node;
  c.time_limit = limit;
  c.partition = partition;
  e.rec.shape_granted = true;
  store_.save_campaign_shape(e.rec);
}

// The index of an open-ended campaign's next segment once the last one runs or has ended; -1
// when there is none (bounded, or the last is still queued, or the campaign is at the limit).
int CampaignController::next_open_ended_segment(Entry& e, Seconds now) {
  if (!e.rec.open_ended()) return -1;
  const SegmentState last = e.rec.segments.back().seg.state;
  if (last == SegmentState::kPlanned || last == SegmentState::kPending) return -1;
  if (e.count() < kMaxSegments) return e.count();
  if (last != SegmentState::kRunning)
    finish(e, CampaignState::kFailed,
           "ran " + std::to_string(kMaxSegments) + " segments and none created the done file " +
               e.rec.done_file,
           now);
  return -1;
}

SegmentRecord& CampaignController::add_segment(Entry& e) {
  SegmentRecord next;
  next.seg.index = e.count();
  e.rec.segments.push_back(next);
  save(e, e.rec.segments.back());
  return e.rec.segments.back();
}

// The segment that creates the done file ends the campaign once it exits: when the file exists
// and no segment runs (nor is being submitted), the campaign is done and a successor still
// queued is cancelled.
bool CampaignController::finish_if_done_file(Entry& e, Seconds now, Actions& out) {
  if (!e.in_flight.empty()) return false;
  const auto written = done_file_time(e.rec.done_file);
  // A segment that started after the file was written (or in its first seconds: the file's
  // server and slurmctld may disagree by a few seconds) did not write it: it started because
  // Slurm released the fallback successor when its predecessor ended, and is not needed.
  for (auto& s : e.rec.segments) {
    if (!written || s.seg.state != SegmentState::kRunning ||
        *written > s.seg.start_time + kDoneFileSlack)
      continue;
    cancel_segment(e, s, SegmentState::kDone, kStartedAfterDone, now, out);
    spdlog::info("campaign {} segment {}: job {} started after the done file; cancelling it",
                 e.rec.spec.id, s.seg.index, s.seg.slurm_job_id);
  }
  for (const auto& s : e.rec.segments)
    if (s.submitting || s.seg.state == SegmentState::kRunning) return false;
  if (!written) return false;
  const SegmentRecord* last = nullptr;
  for (const auto& s : e.rec.segments)
    if (s.seg.start_time >= 0 && s.message != kStartedAfterDone &&
        (!last || s.seg.end_time >= last->seg.end_time))
      last = &s;
  const std::string message = last ? "segment " + std::to_string(last->seg.index) +
                                         " created the done file " + e.rec.done_file
                                   : "the done file " + e.rec.done_file + " exists";
  for (auto& s : e.rec.segments) {
    if (s.seg.state != SegmentState::kPending || s.seg.slurm_job_id <= 0) continue;
    cancel_segment(e, s, SegmentState::kFailed, "cancelled: not needed, the campaign is done", now,
                   out);
  }
  finish(e, CampaignState::kDone, message, now);
  return true;
}

void CampaignController::handoff(Entry& e, Seconds now, Actions& out) {
  if (e.rec.spec.overlap != OverlapMode::kHandoff) return;
  for (int k = 0; k + 1 < e.count(); ++k) {
    SegmentRecord& p = e.seg(k);
    const SegmentRecord& n = e.seg(k + 1);
    if (p.seg.state != SegmentState::kRunning || n.seg.state != SegmentState::kRunning) continue;
    if (p.signalled_at < 0) {
      p.signalled_at = now;
      save(e, p);
      out.signals.push_back({e.rec.spec.id, k, p.seg.slurm_job_id, config_.handoff_signal});
      ++counters_.handoff_signals;
      spdlog::info(
          "campaign {}: segment {} (job {}) started; signalling segment {} (job {}) "
          "with signal {} to checkpoint and stop",
          e.rec.spec.id, k + 1, n.seg.slurm_job_id, k, p.seg.slurm_job_id, config_.handoff_signal);
    } else if (p.killed_at < 0 && now >= p.signalled_at + e.rec.spec.handoff_grace) {
      p.killed_at = now;
      save(e, p);
      out.cancels.push_back({e.rec.spec.id, k, p.seg.slurm_job_id});
      spdlog::warn(
          "campaign {}: segment {} (job {}) still runs {} after the hand-off signal; "
          "cancelling it",
          e.rec.spec.id, k, p.seg.slurm_job_id, format_slurm_duration(e.rec.spec.handoff_grace));
    }
  }
}

double CampaignController::committed_hours(const Entry& e, Seconds now) const {
  Seconds total = 0;
  for (const auto& s : e.rec.segments) {
    if (s.seg.start_time < 0) continue;
    if (s.seg.state == SegmentState::kRunning)
      total += std::max(now, s.seg.start_time + e.rec.spec.time_limit) - s.seg.start_time;
    else if (s.seg.end_time >= s.seg.start_time)
      total += s.seg.end_time - s.seg.start_time;
  }
  return static_cast<double>(total) / 3600.0;
}

std::optional<std::string> CampaignController::successor_due(Entry& e, int next, Seconds now,
                                                             Actions& out,
                                                             const ObservationBuilder& history,
                                                             const QueueSnapshot& queue) {
  const std::int64_t id = e.rec.spec.id;
  const SegmentRecord& pred = e.seg(next - 1);
  // Slurm's estimate from the previous decision: fresh enough while no decision was skipped.
  const bool estimate_fresh =
      e.estimate_segment == next && now - e.estimated_at <= 2 * config_.decision_interval;
  auto log = [&](const char* action, double confidence, Seconds forecast_start = kUnknownTime) {
    DecisionRecord d{id, next, now, action, e.rec.spec.policy, confidence};
    d.forecast_start = forecast_start;
    if (estimate_fresh) {
      d.slurm_start = e.slurm_start;
      d.slurm_note = e.estimate_note;
    } else {
      d.slurm_note = "not asked yet";
    }
    store_.log_decision(d);
  };
  // Known once Slurm granted it; until then, (only with no limit from flags or script) the
  // successor waits for its predecessor's end.
  const Seconds limit = e.rec.spec.time_limit > 0 ? e.rec.spec.time_limit : kUnknownLimit;
  const Seconds remaining = pred.seg.start_time + limit - now;
  if (remaining <= config_.fallback_lead) {
    log("fallback", 1);
    return "fallback: segment " + std::to_string(next - 1) + " reaches its limit in " +
           format_short_duration(std::max<Seconds>(0, remaining)) + " and " + e.rec.spec.policy +
           " had not submitted";
  }
  if (now < e.next_decision) return std::nullopt;
  e.next_decision = now + config_.decision_interval;
  if (config_.earliest_submission > 0 && remaining > config_.earliest_submission)
    return std::nullopt;
  // A successor that waited behind its own predecessor was in the queue from its release (or
  // from that predecessor's end), not from its submission.
  Seconds queued_from = pred.seg.submit_time;
  if (pred.released_at >= 0)
    queued_from = std::max(queued_from, pred.released_at);
  else if (pred.held_behind > 0 && next >= 2 && e.seg(next - 2).seg.end_time >= 0)
    queued_from = std::max(queued_from, e.seg(next - 2).seg.end_time);
  CampaignView view =
      CampaignView::running_chain(e.rec.spec.nodes, e.rec.spec.gpus_per_node, limit,
                                  std::max<Seconds>(0, pred.seg.start_time - queued_from),
                                  std::max<Seconds>(0, now - pred.seg.start_time));
  view.predecessor_priority = pred.priority;
  view.qos = e.rec.qos;
  if (estimate_fresh && e.slurm_start != kUnknownTime)
    view.slurm_estimated_wait = std::max<Seconds>(0, e.slurm_start - now);
  Observation obs = history.build(view);
  obs.time = now;
  obs.latest = queue;
  const Decision d = e.policy->decide(obs);
  ++counters_.decisions;
  const bool go = d.action == Action::kSubmitNow;
  // Were it submitted now: what `campaign show` tells the user, beside Slurm's estimate.
  const Seconds planned = QueueForecast::plan_successor(obs, RuntimeGuess::recent_ends()).wait;
  log(go ? "submit" : "wait", d.confidence,
      planned < QueueForecast::kHorizon ? now + planned : kUnknownTime);
  // Slurm's estimate for the next decision: the segment not submitted yet, or held behind its
  // predecessor (the fallback chain), as if submitted or released now.
  if (!go) {
    EstimateAction a;
    a.campaign = id;
    a.segment = next;
    a.asked_at = now;
    a.request.nodes = e.rec.spec.nodes;
    a.request.gpus_per_node = e.rec.spec.gpus_per_node;
    a.request.time_limit = e.rec.spec.time_limit;
    a.request.partition = e.rec.spec.partition.empty() ? config_.partition : e.rec.spec.partition;
    a.request.account = e.rec.account.empty() ? config_.account : e.rec.account;
    a.request.qos = e.rec.qos;
    a.request.options = e.rec.sbatch_options;  // constraints, exclusivity, a reservation
    a.request.name = e.rec.spec.name;
    a.request.work_dir = e.rec.work_dir;
    out.estimates.push_back(std::move(a));
    ++counters_.estimates;
  }
  if (!go) return std::nullopt;
  spdlog::info(
      "campaign {} segment {}: policy {} says submit now ({} before the predecessor's limit)", id,
      next, e.rec.spec.policy, format_slurm_duration(remaining));
  return e.rec.spec.policy + ": " +
         (d.reason.empty()
              ? "submit now (confidence " + fmt::format("{:.2f}", d.confidence) + "; segment " +
                    std::to_string(next - 1) + " ends in " + format_short_duration(remaining) + ")"
              : d.reason);
}

void CampaignController::release(Entry& e, SegmentRecord& s, Seconds now, Actions& out,
                                 const std::string& why) {
  s.released_at = now;
  store_.record_release(e.rec.spec.id, s, why);
  out.releases.push_back({e.rec.spec.id, s.seg.index, s.seg.slurm_job_id});
  ++counters_.releases;
  spdlog::info("campaign {} segment {}: releasing job {} from behind job {} ({})", e.rec.spec.id,
               s.seg.index, s.seg.slurm_job_id, s.held_behind, why);
}

void CampaignController::advance(Entry& e, Seconds now, const ObservationBuilder& history,
                                 const QueueSnapshot& queue, Actions& out) {
  if (!e.rec.open_ended() && e.count() == e.rec.spec.segment_count &&
      e.rec.segments.back().seg.state == SegmentState::kDone) {
    finish(e, CampaignState::kDone, "", now);
    return;
  }
  // One submission at a time: nothing new while one's outcome is unknown, nor while a segment
  // may have run unseen (it would run twice).
  for (const auto& s : e.rec.segments)
    if (s.submitting || s.fate_unknown()) return;
  // A successor held behind its running predecessor: the policy's decision releases it.
  for (auto& s : e.rec.segments) {
    if (s.seg.state != SegmentState::kPending || !s.held() || s.seg.index == 0) continue;
    if (e.seg(s.seg.index - 1).seg.state != SegmentState::kRunning) return;  // Slurm lets it go
    if (auto why = successor_due(e, s.seg.index, now, out, history, queue))
      release(e, s, now, out, *why);
    return;
  }
  int next = -1;
  for (const auto& s : e.rec.segments)
    if (s.seg.state == SegmentState::kPlanned) {
      next = s.seg.index;
      break;
    }
  if (next < 0) next = next_open_ended_segment(e, now);
  if (next < 0) return;
  if (auto r = e.retry_after.find(next); r != e.retry_after.end()) {
    if (now < r->second) return;
    e.retry_after.erase(r);
  }
  // The cap on run time: nothing more once the segments so far (a running one at its whole
  // limit) have used it.
  if (e.rec.max_hours > 0 && committed_hours(e, now) >= e.rec.max_hours) {
    for (const auto& s : e.rec.segments)
      if (s.seg.state == SegmentState::kRunning || s.seg.state == SegmentState::kPending) return;
    finish(e, CampaignState::kDone,
           fmt::format("reached --max-hours {:g}: the segments ran {:.1f} h", e.rec.max_hours,
                       committed_hours(e, now)),
           now);
    return;
  }
  // An open-ended campaign's next segment is made when it is submitted. A segment tried before
  // is submitted again because that attempt failed (its end is in the history).
  auto submit_next = [&](const std::string& why, JobId after_any = 0) {
    SegmentRecord& s = next < e.count() ? e.seg(next) : add_segment(e);
    submit(e, s, now, out, false,
           s.seg.attempts > 0 ? "again after attempt " + std::to_string(s.seg.attempts) : why,
           after_any);
  };
  if (next == 0) {
    submit_next("first segment");
    return;
  }
  const SegmentRecord& pred = e.seg(next - 1);
  switch (pred.seg.state) {
    case SegmentState::kPlanned:
    case SegmentState::kPending: return;  // guard rail: at most one queued segment per campaign
    case SegmentState::kDone:
    case SegmentState::kFailed:
      store_.log_decision({e.rec.spec.id, next, now, "predecessor-ended", e.rec.spec.policy, 1});
      submit_next("segment " + std::to_string(next - 1) + " (job " +
                  std::to_string(pred.seg.slurm_job_id) + ") ended");
      return;
    case SegmentState::kRunning: break;
  }
  if (auto why = successor_due(e, next, now, out, history, queue)) {
    submit_next(*why);
    return;
  }
  if (e.rec.fallback_chain && pred.seg.slurm_job_id > 0)
    submit_next("fallback chain: queued behind segment " + std::to_string(next - 1) + " (job " +
                    std::to_string(pred.seg.slurm_job_id) + "), to run when it ends unless " +
                    e.rec.spec.policy + " releases it earlier",
                pred.seg.slurm_job_id);
}

std::string CampaignController::expected_output_file(const Entry& e, const SegmentRecord& s,
                                                     JobId job) const {
  const CampaignRecord& r = e.rec;
  const OutputPlace place =
      output_place(r.spec.script, r.sbatch_options, r.work_dir.empty() ? "/tmp" : r.work_dir);
  OutputNames n;
  n.job = job;
  n.name = r.spec.name + "-s" + std::to_string(s.seg.index);
  n.user = user_name_of(config_.user_id);
  n.work_dir = place.work_dir;
  return expand_output_pattern(place.pattern, n);
}

SubmitRequest CampaignController::make_request(const Entry& e, const SegmentRecord& s,
                                               const JobTag& tag) const {
  const CampaignRecord& r = e.rec;
  SubmitRequest q;
  q.script = r.spec.script;
  q.environment = r.environment;
  q.environment.push_back("MIRAGE_CAMPAIGN_ID=" + std::to_string(r.spec.id));
  q.environment.push_back("MIRAGE_CAMPAIGN_NAME=" + r.spec.name);
  q.environment.push_back("MIRAGE_SEGMENT=" + std::to_string(s.seg.index));
  q.environment.push_back("MIRAGE_SEGMENTS=" + std::to_string(r.spec.segment_count));
  q.environment.push_back("MIRAGE_ATTEMPT=" + std::to_string(s.seg.attempts));
  q.environment.push_back("MIRAGE_DONE_FILE=" + r.done_file);
  q.work_dir = r.work_dir;
  q.options = r.sbatch_options;
  // The daemon's partition and account stand in where neither the flags nor the script name
  // one (the script was checked at `campaign add`: read leniently here).
  const auto script = read_batch_directives(r.spec.script, r.script_path);
  if (!config_.partition.empty() && !sets_option(q.options, "partition") && !script.partition)
    q.options.push_back("--partition=" + config_.partition);
  if (!config_.account.empty() && !sets_option(q.options, "account") && !script.account)
    q.options.push_back("--account=" + config_.account);
  q.time_limit = r.spec.time_limit;
  q.nodes = r.spec.nodes;
  q.gpus_per_node = r.spec.gpus_per_node;
  q.partition = r.spec.partition.empty() ? config_.partition : r.spec.partition;
  q.account = r.account.empty() ? config_.account : r.account;
  q.name = r.spec.name + "-s" + std::to_string(s.seg.index);
  q.comment = tag.str();
  q.after_any = s.held_behind;
  return q;
}

void CampaignController::submit(Entry& e, SegmentRecord& s, Seconds now, Actions& out, bool again,
                                const std::string& why, JobId after_any) {
  if (!again) {
    ++s.seg.attempts;
    s.held_behind = after_any;
    s.released_at = -1;
  }
  s.submitting = true;
  s.intent_time = now;
  const JobTag tag{store_.store_id(), e.rec.spec.id, s.seg.index, s.seg.attempts};
  // The intent is durable before anyone may submit: a crash from here on is settled by the tag.
  store_.begin_submission(e.rec.spec.id, s, tag, why);
  e.in_flight.insert(s.seg.index);
  ++counters_.submissions;
  out.submits.push_back({e.rec.spec.id, s.seg.index, s.seg.attempts, make_request(e, s, tag)});
}

void CampaignController::finish(Entry& e, CampaignState state, const std::string& message,
                                Seconds now) {
  e.rec.state = state;
  e.rec.message = message;
  e.rec.finished = now;
  store_.save_campaign_state(e.rec);
  if (state == CampaignState::kFailed)
    spdlog::error("campaign {} '{}' failed: {}", e.rec.spec.id, e.rec.spec.name, message);
  else
    spdlog::info("campaign {} '{}' {}{}{}", e.rec.spec.id, e.rec.spec.name, to_string(state),
                 message.empty() ? "" : ": ", message);
}

void CampaignController::save(const Entry& e, const SegmentRecord& s) {
  store_.save_segment(e.rec.spec.id, s);
}

// -------------------------------------------------------------------------- action outcomes

void CampaignController::on_submitted(const SubmitAction& a, JobId job) {
  auto it = entries_.find(a.campaign);
  if (it == entries_.end()) return;
  Entry& e = *it->second;
  e.in_flight.erase(a.segment);
  SegmentRecord& s = e.seg(a.segment);
  if (!s.submitting || s.seg.attempts != a.attempt) return;
  s.submitting = false;
  s.seg.slurm_job_id = job;
  s.seg.state = SegmentState::kPending;
  s.seg.submit_time = clock_.now();
  // Where its output will be, should it run and be forgotten before a dump reports it.
  s.output_file = expected_output_file(e, s, job);
  e.unknown_since.erase(a.segment);
  store_.finish_submission(a.campaign, s, job);
  spdlog::info("campaign {} segment {}: submitted as job {} (attempt {})", a.campaign, a.segment,
               job, a.attempt);
  // Cancelled while the submission was out: the next tick cancels the job (sweep_cancelled).
}

void CampaignController::on_submit_failed(const SubmitAction& a, const SlurmError& error) {
  auto it = entries_.find(a.campaign);
  if (it == entries_.end()) return;
  Entry& e = *it->second;
  e.in_flight.erase(a.segment);
  SegmentRecord& s = e.seg(a.segment);
  if (!s.submitting || s.seg.attempts != a.attempt) return;
  const Seconds now = clock_.now();
  if (error.transient()) {
    // The job may exist or not: the dumps will tell (by its tag).
    e.unknown_since[a.segment] = now;
    spdlog::warn("campaign {} segment {}: submission outcome unknown ({}); will look for its tag",
                 a.campaign, a.segment, error.what());
    return;
  }
  ++counters_.refused;
  s.submitting = false;
  s.message = error.what();
  e.unknown_since.erase(a.segment);
  if (s.seg.attempts <= max_retries(e) && !is_finished(e.rec.state)) {
    s.seg.state = SegmentState::kPlanned;
    e.retry_after[a.segment] = now + config_.retry_delay;
    store_.refuse_submission(a.campaign, s, error.what());
    spdlog::warn("campaign {} segment {}: Slurm refused the submission ({}); trying again in {}",
                 a.campaign, a.segment, error.what(), format_slurm_duration(config_.retry_delay));
    return;
  }
  s.seg.state = SegmentState::kFailed;
  store_.refuse_submission(a.campaign, s, error.what());
  if (!is_finished(e.rec.state))
    finish(e, CampaignState::kFailed,
           "segment " + std::to_string(a.segment) + " refused by Slurm after " +
               attempts_text(s.seg.attempts) + ": " + error.what(),
           now);
}

void CampaignController::on_signal_failed(const SignalAction& a, const SlurmError& error) {
  auto it = entries_.find(a.campaign);
  if (it == entries_.end()) return;
  SegmentRecord& s = it->second->seg(a.segment);
  spdlog::warn("campaign {} segment {}: signalling job {} failed: {}", a.campaign, a.segment, a.job,
               error.what());
  if (error.transient()) {
    s.signalled_at = -1;  // try again next tick
    save(*it->second, s);
  }
}

void CampaignController::on_cancel_failed(const CancelAction& a, const SlurmError& error) {
  auto it = entries_.find(a.campaign);
  if (it == entries_.end()) return;
  spdlog::warn("campaign {} segment {}: cancelling job {} failed: {}", a.campaign, a.segment, a.job,
               error.what());
  SegmentRecord& s = it->second->seg(a.segment);
  if (error.transient() && s.killed_at >= 0 && !is_finished(it->second->rec.state)) {
    s.killed_at = -1;
    save(*it->second, s);
  }
}

void CampaignController::on_release_failed(const ReleaseAction& a, const SlurmError& error) {
  auto it = entries_.find(a.campaign);
  if (it == entries_.end()) return;
  spdlog::warn("campaign {} segment {}: releasing job {} failed: {}", a.campaign, a.segment, a.job,
               error.what());
  SegmentRecord& s = it->second->seg(a.segment);
  if (error.transient() && s.seg.slurm_job_id == a.job) {
    s.released_at = -1;  // try again at the next decision
    save(*it->second, s);
  }
}

// The latest estimate is kept in the store too: `mirage tick` starts afresh every pass, and a
// restarted daemon should not decide blind for a decision interval.
void CampaignController::keep_estimate(Entry& e) {
  store_.set_value(estimate_key(e.rec.spec.id), nlohmann::json{{"segment", e.estimate_segment},
                                                               {"start", e.slurm_start},
                                                               {"asked_at", e.estimated_at},
                                                               {"note", e.estimate_note}}
                                                    .dump());
}

void CampaignController::restore_estimate(Entry& e) {
  const auto j = nlohmann::json::parse(store_.value(estimate_key(e.rec.spec.id)), nullptr, false);
  if (!j.is_object()) return;
  e.estimate_segment = j.value("segment", -1);
  e.slurm_start = j.value("start", kUnknownTime);
  e.estimated_at = j.value("asked_at", Seconds{-1});
  e.estimate_note = j.value("note", std::string());
}

void CampaignController::on_estimate(const EstimateAction& a, const StartEstimate& estimate) {
  auto it = entries_.find(a.campaign);
  if (it == entries_.end()) return;
  Entry& e = *it->second;
  e.estimate_segment = a.segment;
  e.slurm_start = estimate.start;
  e.estimated_at = a.asked_at;  // as old as the question
  e.estimate_note =
      estimate.start == kUnknownTime ? "Slurm's will-run test gave no start time" : "";
  keep_estimate(e);
}

void CampaignController::on_estimate_failed(const EstimateAction& a, const SlurmError& error) {
  auto it = entries_.find(a.campaign);
  if (it == entries_.end()) return;
  Entry& e = *it->second;
  // The decision goes on without it (the forecast, the fallback); `campaign show` says why.
  if (e.estimate_note.rfind("the will-run test failed", 0) != 0)
    spdlog::warn("campaign {} segment {}: Slurm's will-run test failed: {}", a.campaign, a.segment,
                 error.what());
  e.estimate_segment = a.segment;
  e.slurm_start = kUnknownTime;
  e.estimated_at = a.asked_at;
  e.estimate_note = std::string("the will-run test failed: ") + error.what();
  keep_estimate(e);
}

void perform_actions(SlurmClient& client, const Actions& actions, const OutcomeDelivery& deliver) {
  for (const auto& a : actions.submits) {
    try {
      const JobId id = client.submit(a.request);
      deliver([a, id](CampaignController& c) { c.on_submitted(a, id); });
    } catch (const SlurmError& e) {
      deliver([a, e](CampaignController& c) { c.on_submit_failed(a, e); });
    }
  }
  for (const auto& a : actions.signals) {
    try {
      client.signal_job(a.job, a.signo);
    } catch (const SlurmError& e) {
      deliver([a, e](CampaignController& c) { c.on_signal_failed(a, e); });
    }
  }
  for (const auto& a : actions.cancels) {
    try {
      client.cancel_job(a.job);
    } catch (const SlurmError& e) {
      deliver([a, e](CampaignController& c) { c.on_cancel_failed(a, e); });
    }
  }
  for (const auto& a : actions.releases) {
    try {
      client.release_job(a.job);
    } catch (const SlurmError& e) {
      deliver([a, e](CampaignController& c) { c.on_release_failed(a, e); });
    }
  }
  for (const auto& a : actions.lookups) {
    try {
      AccountedJob answer = client.accounted_job(a.job);
      deliver([a, answer = std::move(answer)](CampaignController& c) mutable {
        c.on_accounted(a, std::move(answer));
      });
    } catch (const SlurmError& e) {
      deliver([a, e](CampaignController& c) { c.on_accounting_failed(a, e); });
    }
  }
  for (const auto& a : actions.estimates) {
    try {
      const StartEstimate estimate = client.will_run(a.request);
      deliver([a, estimate](CampaignController& c) { c.on_estimate(a, estimate); });
    } catch (const SlurmError& e) {
      deliver([a, e](CampaignController& c) { c.on_estimate_failed(a, e); });
    }
  }
}

void perform_actions(CampaignController& controller, SlurmClient& client, const Actions& actions) {
  perform_actions(client, actions,
                  [&controller](const std::function<void(CampaignController&)>& outcome) {
                    outcome(controller);
                  });
}

}  // namespace mirage::daemon

// The controller's frame: its campaigns as loaded from the store, and the tick that drives each
// one through its concepts, each in a file of its own: the requests (CampaignRequests.cpp),
// following the jobs in the dump (JobTracking.cpp), a job gone unseen (SegmentFate.cpp), the
// done file and the hand-off (CampaignEnd.cpp), the decision and the submission
// (SegmentSubmission.cpp), and the outcomes of the actions (ActionOutcomes.cpp).
#include "mirage/daemon/campaigns/CampaignController.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "campaigns/CampaignEntry.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/daemon/campaigns/DoneFile.h"

namespace mirage::daemon {

CampaignController::CampaignController(CampaignStore& store, const Clock& clock,
                                       ControllerConfig config, PolicyFactory factory)
    : store_(store), clock_(clock), config_(std::move(config)), factory_(std::move(factory)) {
  if (!config_.wait_distribution_file.empty()) {
    try {
      auto model = read_wait_predictor(config_.wait_distribution_file);
      calibration_ = std::make_shared<ClassWaitCalibration>();
      waits_ = std::make_shared<CalibratedWaitPredictor>(std::move(model), calibration_);
      waits_digest_ = predictor_digest(config_.wait_distribution_file);
    } catch (const std::exception& e) {  // `--check` names it; campaigns asking for it are refused
      spdlog::error("[policy] wait_distribution: {}", e.what());
    }
  }
}

CampaignController::~CampaignController() = default;

std::unique_ptr<Policy> CampaignController::make_policy_for(const PolicySpec& policy,
                                                            const std::string& partition) const {
  const PolicySpec spec = policy.name.empty() ? PolicySpec(config_.default_policy) : policy;
  if (factory_) return factory_(spec);
  PolicyContext context;
  if (waits_) context.waits = waits_->in_partition(partition);
  return mirage::make_policy(spec, context);
}

void CampaignController::load() {
  // Read whole before anything is replaced: a store that cannot be read leaves what was loaded.
  std::map<std::int64_t, std::unique_ptr<Entry>> fresh;
  const Seconds now = clock_.now();
  for (auto& rec : store_.load_campaigns()) {
    auto e = std::make_unique<Entry>();
    e->rec = std::move(rec);
    if (!is_finished(e->rec.state)) {
      try {
        e->policy = make_policy_for(e->rec.spec.policy, e->rec.spec.partition);
      } catch (const std::exception& ex) {
        spdlog::warn("campaign {}: policy '{}' cannot be loaded ({}); using reactive",
                     e->rec.spec.id, e->rec.spec.policy, ex.what());
        e->policy = make_policy_for(PolicySpec("reactive"), "");
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
    e->rerun_note = store_.value(rerun_check_key(e->rec.spec.id));
    const std::int64_t id = e->rec.spec.id;
    // Read again while this process runs (the store could not be written): what is out on the
    // Slurm thread is still out, and an intent whose submission is queued there is not settled
    // by its absence from a dump taken before it ran.
    if (const auto old = entries_.find(id); old != entries_.end()) {
      const Entry& o = *old->second;
      e->in_flight = o.in_flight;
      e->looking_up = o.looking_up;
      e->answers = o.answers;
      e->earlier_runs = o.earlier_runs;
      e->next_lookup = o.next_lookup;
      e->retry_after = o.retry_after;
      e->refusals_for_now = o.refusals_for_now;
      for (const auto& [k, since] : o.unknown_since)
        if (e->unknown_since.count(k)) e->unknown_since[k] = since;
      e->next_decision = o.next_decision;
    }
    fresh[id] = std::move(e);
  }
  entries_ = std::move(fresh);
  restore_calibration();
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

std::size_t CampaignController::earlier_runs_waiting() const {
  std::size_t n = 0;
  for (const auto& [id, e] : entries_) n += e->earlier_runs.size();
  return n;
}

std::size_t CampaignController::in_flight() const {
  std::size_t n = 0;
  for (const auto& [id, e] : entries_) n += e->in_flight.size();
  return n;
}

Actions CampaignController::tick(const std::vector<SlurmJob>& jobs, Seconds dump_time,
                                 const ObservationBuilder& history, const QueueSnapshot& queue) {
  ++counters_.ticks;
  const Seconds now = clock_.now();
  JobIndex index;
  for (const auto& j : jobs) {
    if (j.user_id != config_.user_id) continue;
    if (j.comment.size() < 7 || j.comment.compare(0, 7, "mirage:") != 0) {
      index.untagged_by_id[j.id] = &j;
      index.untagged_by_name.emplace(j.name, &j);
      continue;
    }
    index.tagged_by_id[j.id] = &j;
    const auto tag = JobTag::parse(j.comment);
    if (tag && tag->store == store_.store_id())
      index.by_tag[{tag->campaign, tag->segment, tag->attempt}].push_back(&j);
  }
  dump_ = &index;
  struct DumpDone {
    const JobIndex*& dump;
    ~DumpDone() { dump = nullptr; }
  } dump_done{dump_};
  if (!orphans_reported_) {
    report_orphans(index);
    orphans_reported_ = true;
  }
  Actions out;
  // A submission is in flight once its action is handed out: a pass whose writes fail hands out
  // none, and must leave none marked (load() keeps the marks of what is truly out).
  struct UnhandedSubmits {
    std::map<std::int64_t, std::unique_ptr<Entry>>& entries;
    const Actions& out;
    bool handed = false;
    ~UnhandedSubmits() {
      if (handed) return;
      for (const auto& a : out.submits)
        if (auto it = entries.find(a.campaign); it != entries.end())
          it->second->in_flight.erase(a.segment);
    }
  } unhanded{entries_, out};
  CampaignStore::Batch batch(store_);
  for (auto& [id, ep] : entries_) {
    Entry& e = *ep;
    if (is_finished(e.rec.state)) {
      // A cancelled campaign may still have a submission whose outcome is unknown, or a job
      // submitted while it was being cancelled: find them and cancel them.
      if (e.rec.state == CampaignState::kCancelled) {
        settle_intents(e, index, dump_time, now, out);
        sweep_cancelled(e, now, out);
      }
      cancel_strays(e, index, now, out);
      continue;
    }
    settle_intents(e, index, dump_time, now, out);
    track(e, index, dump_time, now, out);
    cancel_strays(e, index, now, out);
    handoff(e, now, out);
    if (finish_if_done_file(e, now, out)) continue;
    if (e.rec.state == CampaignState::kActive) advance(e, now, history, queue, out);
  }
  batch.commit();
  unhanded.handed = true;
  return out;
}

int CampaignController::max_retries(const Entry& e) const {
  return e.rec.max_retries >= 0 ? e.rec.max_retries : config_.max_retries;
}

void CampaignController::finish(Entry& e, CampaignState state, const std::string& message,
                                Seconds now) {
  e.rec.state = state;
  e.rec.message = message;
  e.rec.finished = now;
  store_.save_campaign_state(e.rec);
  // A finished campaign asks nothing more about a segment that left unseen.
  for (auto& s : e.rec.segments)
    if (s.fate_unknown()) {
      s.lost_at = -1;
      save(e, s);
    }
  if (state == CampaignState::kFailed)
    spdlog::error("campaign {} '{}' failed: {}", e.rec.spec.id, e.rec.spec.name, message);
  else
    spdlog::info("campaign {} '{}' {}{}{}", e.rec.spec.id, e.rec.spec.name, to_string(state),
                 message.empty() ? "" : ": ", message);
}

void CampaignController::save(const Entry& e, const SegmentRecord& s) {
  store_.save_segment(e.rec.spec.id, s);
}

}  // namespace mirage::daemon

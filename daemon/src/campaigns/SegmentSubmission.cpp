// When the next segment goes, and how: the policy's decision (with Slurm's estimate and the
// forecast recorded beside it), the fallback lead, the fallback chain's release, the cap on run
// time, and each submission made durable as an intent before it is handed out.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string_view>

#include "campaigns/CampaignEntry.h"
#include "mirage/core/QueueForecast.h"
#include "mirage/daemon/campaigns/CampaignController.h"
#include "mirage/daemon/slurm/BatchScriptDirectives.h"
#include "mirage/daemon/slurm/JobEnvironment.h"
#include "mirage/daemon/slurm/OutputFile.h"

namespace mirage::daemon {

namespace {

// The limit of a segment submitted with none from the flags or the script, until Slurm's record
// says which default it got: the successor then waits for the predecessor's end.
constexpr Seconds kUnknownLimit = 365 * kDay;

}  // namespace

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

double CampaignController::committed_hours(const Entry& e, Seconds now) const {
  Seconds total = 0;
  for (const auto& s : e.rec.segments) {
    if (s.seg.start_time < 0) continue;
    if (s.seg.state == SegmentState::kRunning)
      total += std::max(on_controller_clock(now), s.seg.start_time + e.rec.spec.time_limit) -
               s.seg.start_time;
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
  // The predecessor's start, Slurm's estimate and the queue are on slurmctld's clock.
  const Seconds ctld_now = on_controller_clock(now);
  const Seconds remaining = pred.seg.start_time + limit - ctld_now;
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
    queued_from = std::max(queued_from, on_controller_clock(pred.released_at));
  else if (pred.held_behind > 0 && next >= 2 && e.seg(next - 2).seg.end_time >= 0)
    queued_from = std::max(queued_from, e.seg(next - 2).seg.end_time);
  CampaignView view =
      CampaignView::running_chain(e.rec.spec.nodes, e.rec.spec.gpus_per_node, limit,
                                  std::max<Seconds>(0, pred.seg.start_time - queued_from),
                                  std::max<Seconds>(0, ctld_now - pred.seg.start_time));
  view.predecessor_priority = pred.priority;
  view.qos = e.rec.qos;
  if (estimate_fresh && e.slurm_start != kUnknownTime)
    view.slurm_estimated_wait = std::max<Seconds>(0, e.slurm_start - ctld_now);
  Observation obs = history.build(view);
  obs.time = ctld_now;
  obs.latest = queue;
  const Decision d = e.policy->decide(obs);
  ++counters_.decisions;
  const bool go = d.action == Action::kSubmitNow;
  // Were it submitted now: what `campaign show` tells the user, beside Slurm's estimate.
  const Seconds planned = QueueForecast::plan_successor(obs, RuntimeGuess::recent_ends()).wait;
  log(go ? "submit" : "wait", d.confidence,
      planned < QueueForecast::kHorizon ? ctld_now + planned : kUnknownTime);
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
      next, e.rec.spec.policy, format_short_duration(remaining));
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
    if (auto why = successor_due(e, s.seg.index, now, out, history, queue)) {
      release(e, s, now, out, *why);
      predict_wait(e, s, now, queue);
    }
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
    const bool followed =
        submit(e, s, now, out, false,
               s.seg.attempts > 0 ? "again after attempt " + std::to_string(s.seg.attempts) : why,
               after_any);
    // Held behind its predecessor, its wait begins when it is released or the predecessor ends.
    // A job followed instead (a first try whose reply was lost, made late after a retry was
    // refused for now) entered the queue at another moment, perhaps held behind its predecessor
    // by that try's decision: no forecast of now is paired with its wait, so none is learned.
    if (after_any == 0 && !followed) predict_wait(e, s, now, queue);
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

std::string CampaignController::output_file_of(const Entry& e, const std::string& job_name,
                                               JobId job, bool one_job_only) const {
  const CampaignRecord& r = e.rec;
  const OutputPlace place =
      output_place(r.spec.script, r.sbatch_options, r.work_dir.empty() ? "/tmp" : r.work_dir);
  if (one_job_only && !names_one_job(place.pattern, false)) return {};
  OutputNames n;
  n.job = job;
  n.name = job_name;
  n.user = user_name_of(config_.user_id);
  n.work_dir = place.work_dir;
  return expand_output_pattern(place.pattern, n);
}

std::string CampaignController::expected_output_file(const Entry& e, const SegmentRecord& s,
                                                     JobId job) const {
  // Empty where the file is not this job's alone: it would say nothing of it.
  return output_file_of(e, segment_job_name(store_.store_id(), e.rec, s.seg.index), job, true);
}

SubmitRequest CampaignController::make_request(const Entry& e, const SegmentRecord& s,
                                               const JobTag& tag) const {
  const CampaignRecord& r = e.rec;
  SubmitRequest q;
  q.script = r.spec.script;
  // Without the user's own values of the daemon's names (a `campaign add` run inside a segment
  // carries that segment's): sbatch reads the first of a name given twice.
  std::copy_if(r.environment.begin(), r.environment.end(), std::back_inserter(q.environment),
               [](const std::string& e) { return !is_daemon_variable(e); });
  q.environment.push_back("MIRAGE_CAMPAIGN_ID=" + std::to_string(r.spec.id));
  q.environment.push_back("MIRAGE_CAMPAIGN_NAME=" + r.spec.name);
  q.environment.push_back("MIRAGE_SEGMENT=" + std::to_string(s.seg.index));
  q.environment.push_back("MIRAGE_SEGMENTS=" + std::to_string(r.spec.segment_count));
  q.environment.push_back("MIRAGE_ATTEMPT=" + std::to_string(s.seg.attempts));
  q.environment.push_back("MIRAGE_DONE_FILE=" + r.done_file);
  // The campaign of a job `campaign add --adopt` took over (its tag's): the trainer continues its
  // checkpoints, which name that campaign.
  for (const SegmentRecord& a : r.segments)
    if (a.adopted_tag != SegmentRecord::kTagUnread)
      if (const auto adopted = JobTag::parse(a.adopted_tag);
          adopted && adopted->campaign != r.spec.id)
        q.environment.push_back("MIRAGE_ADOPTED_CAMPAIGN_ID=" + std::to_string(adopted->campaign));
  // The segment may start while its predecessor still runs: it waits for the hand-off
  // (training_jobs/sbatch/gpt-segment.sbatch passes --handoff-wait), as long as this daemon may
  // take to signal and then cancel the predecessor, and no less than the trainer's default
  // (--handoff-timeout $MIRAGE_HANDOFF_WAIT). From the config of each submission, so a campaign
  // added before a longer [poll] interval waits long enough too.
  if (r.spec.overlap == OverlapMode::kHandoff) {
    q.environment.push_back("MIRAGE_HANDOFF=1");
    const Seconds wait = std::max(kTrainerHandoffWait,
                                  handoff_wait_needed(config_.tick_interval, r.spec.handoff_grace));
    q.environment.push_back("MIRAGE_HANDOFF_WAIT=" + std::to_string(wait));
  }
  q.work_dir = r.work_dir;
  q.options = r.sbatch_options;
  q.ignore_pbs = r.sbatch_ignores_pbs;
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
  q.name = segment_job_name(store_.store_id(), r, s.seg.index);
  q.comment = tag.str();
  q.after_any = s.held_behind;
  return q;
}

bool CampaignController::submit(Entry& e, SegmentRecord& s, Seconds now, Actions& out, bool again,
                                const std::string& why, JobId after_any) {
  // What this attempt's earlier try was queued behind (the fallback chain): a job it made late,
  // found below, is held so.
  const JobId earlier_try_behind = s.held_behind;
  if (!again) {
    ++s.seg.attempts;
    s.held_behind = after_any;
    s.released_at = -1;
  }
  // A store restored from a copy older than its last submissions does not know the jobs those
  // made: one of this segment still queued or running is followed, never submitted a second time.
  const SlurmJob* queued = queued_attempt(e, s, s.seg.attempts);
  if (queued) s.seg.attempts = JobTag::parse(queued->comment)->attempt;
  s.submitting = true;
  s.intent_time = now;
  const JobTag tag = attempt_tag(store_.store_id(), e.rec, s);
  if (queued) {
    store_.begin_submission(e.rec.spec.id, s, tag,
                            why + "; already in Slurm as job " + std::to_string(queued->id) +
                                ", which a restored store had not recorded: followed, not "
                                "submitted again");
    spdlog::warn(
        "campaign {} segment {}: job {} of tag {} is already queued: followed instead of "
        "a new submission",
        e.rec.spec.id, s.seg.index, queued->id, queued->comment);
    adopt_tagged(e, s, *queued, now, out);
    // Held behind its running predecessor by that try while this decision is to submit it free:
    // released, as a held successor is when the policy says go.
    const SegmentRecord* pred = s.seg.index > 0 ? &e.seg(s.seg.index - 1) : nullptr;
    if (!again && after_any == 0 && earlier_try_behind > 0 && pred &&
        pred->seg.slurm_job_id == earlier_try_behind && pred->seg.state == SegmentState::kRunning &&
        s.seg.state == SegmentState::kPending) {
      s.held_behind = earlier_try_behind;
      release(e, s, now, out, why);
    }
    return true;
  }
  // The intent is durable before anyone may submit: a crash from here on is settled by the tag.
  store_.begin_submission(e.rec.spec.id, s, tag, why);
  ++counters_.submissions;
  // Marked in flight once the action is out (a throw before it leaves no mark behind).
  out.submits.push_back({e.rec.spec.id, s.seg.index, s.seg.attempts, make_request(e, s, tag),
                         earlier_run_question(e, s)});
  e.in_flight.insert(s.seg.index);
  return false;
}

}  // namespace mirage::daemon

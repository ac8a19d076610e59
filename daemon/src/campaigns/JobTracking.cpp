// Following each segment's job in the dump, found by its tag: its submission settled, its
// states applied, its failure retried; and, once a start, the jobs of this store no campaign
// owns.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "campaigns/CampaignEntry.h"
#include "mirage/daemon/campaigns/CampaignController.h"
#include "mirage/daemon/campaigns/DoneFile.h"

namespace mirage::daemon {

namespace {

// "FAILED, exit code 3", "CANCELLED, signal 9", "TIMEOUT".
std::string ended_text(const SlurmJob& job) {
  std::string out(to_string(job.state));
  if (job.exit_signal > 0)
    out += ", signal " + std::to_string(job.exit_signal);
  else if (job.exit_code > 0)
    out += ", exit code " + std::to_string(job.exit_code);
  return out;
}

// Why `job`, named by `campaign add --adopt JOB` and in the queue, cannot be the campaign's first
// segment; nothing when it can. An adopted segment is followed by the tag its job carries
// (segment_job): a job without this store's would be taken, once the reconcile delay passed, for
// one that left the queue unseen while it runs, and a `--rerun` would then start a second
// segment 0 on its checkpoint. (One gone from the queue is asked after as any segment's.)
// Where the site rewrites --comment, no job carries a tag to be followed by.
std::optional<std::string> why_not_adoptable(const SlurmJob& job, const std::string& store_id,
                                             bool comments_rewritten) {
  const std::string named = "job " + std::to_string(job.id) + " (" + job.name + ")";
  const auto tag = JobTag::parse(job.comment);
  if (!tag)
    return named + " carries no mirage tag (its comment is '" + job.comment + "'): " +
           (comments_rewritten
                ? "this site rewrites --comment, so no job can be taken back by its tag"
                : "only a job a mirage daemon submitted can be followed as a segment") +
           "; let it run on its own, or add the campaign without --adopt";
  if (tag->store != store_id)
    return named + " carries the tag " + job.comment + " of store " + tag->store +
           ", not this store's (" + store_id + "): that store's daemon follows it";
  return std::nullopt;
}

}  // namespace

// Jobs tagged by this store that no campaign of it owns: a store that lost what it had written
// (its -wal file deleted after a crash, a backup restored). Said once a start, a line each: they
// run or wait on unwatched, and only the user knows whether to keep them.
bool CampaignController::adopted(JobId job) const {
  for (const auto& [id, e] : entries_)
    for (const auto& s : e->rec.segments)
      if (s.seg.slurm_job_id == job && !s.adopted_tag.empty()) return true;
  return false;
}

void CampaignController::report_orphans(const JobIndex& index) {
  std::int64_t highest = 0;
  for (const auto& [key, jobs] : index.by_tag) {
    highest = std::max(highest, std::get<0>(key));
    const auto& [campaign, segment, attempt] = key;
    const auto it = entries_.find(campaign);
    bool owned = false;
    if (it != entries_.end() && segment < it->second->count()) {
      const SegmentRecord& s = it->second->rec.segments[static_cast<std::size_t>(segment)];
      owned = attempt <= s.seg.attempts;
    }
    if (owned) continue;
    const bool followed_when_due = it != entries_.end() && !is_finished(it->second->rec.state);
    for (const SlurmJob* j : jobs) {
      if (is_finished(j->state) || adopted(j->id)) continue;
      if (followed_when_due) {
        spdlog::warn(
            "job {} ({}, {}) carries the tag {}: campaign {} segment {}, attempt {}, which this "
            "store {} never recorded (restored from an earlier copy?). mirage follows it as that "
            "segment's job when the campaign reaches it, and does not submit the segment again "
            "while it is queued or running",
            j->id, j->name, to_string(j->state), j->comment, campaign, segment, attempt,
            store_.path());
        continue;
      }
      spdlog::warn(
          "job {} ({}, {}) carries the tag {} of this store {}, but no campaign here owns it: the "
          "store has lost what it had written. mirage does not follow it: take it back as a "
          "campaign's first segment with `mirage campaign add --adopt {} ...`, or cancel it with "
          "`scancel {}`",
          j->id, j->name, to_string(j->state), j->comment, store_.path(), j->id, j->id);
    }
  }
  if (highest > 0) store_.reserve_campaign_ids(highest);
}

void CampaignController::settle_intents(Entry& e, const JobIndex& index, Seconds dump_time,
                                        Seconds now, Actions& out) {
  for (auto& s : e.rec.segments) {
    if (!s.submitting || e.in_flight.count(s.seg.index)) continue;
    if (const auto run = e.earlier_runs.find(s.seg.index); run != e.earlier_runs.end()) {
      const EarlierRun found = std::move(run->second);
      e.earlier_runs.erase(run);
      adopt_earlier_run(e, s, found, now, out);
      continue;
    }
    if (const auto* found = index.tagged(e.rec.spec.id, s.seg.index, s.seg.attempts)) {
      adopt_tagged(e, s, *found->front(), now, out);
      continue;
    }
    if (const SlurmJob* found = untagged_submission(e, s, index)) {
      adopt_tagged(e, s, *found, now, out);
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
        e.rec.spec.id, s.seg.index, s.seg.attempts, attempt_tag(store_.store_id(), e.rec, s).str());
    ++counters_.resubmitted;
    e.unknown_since.erase(s.seg.index);
    submit(e, s, now, out, /*again=*/true, "not found in Slurm by its tag; submitted again");
  }
}

void CampaignController::adopt_tagged(Entry& e, SegmentRecord& s, const SlurmJob& job, Seconds now,
                                      Actions& out) {
  s.submitting = false;
  s.seg.slurm_job_id = job.id;
  s.seg.submit_time = job.submit;
  s.seg.state = SegmentState::kPending;
  e.unknown_since.erase(s.seg.index);
  store_.finish_submission(e.rec.spec.id, s, job.id);
  ++counters_.adopted;
  // A job found in accounting by its name carries no tag (accounting kept no comment), nor one
  // whose comment the site rewrote.
  if (!JobTag::parse(job.comment))
    spdlog::info("campaign {} segment {}: adopted job {} found by its name {}", e.rec.spec.id,
                 s.seg.index, job.id, job.name);
  else
    spdlog::info("campaign {} segment {}: adopted job {} found by its tag {}", e.rec.spec.id,
                 s.seg.index, job.id, job.comment);
  if (!is_finished(e.rec.state)) apply_job(e, s, job, now, out);
}

const SlurmJob* CampaignController::queued_attempt(const Entry& e, const SegmentRecord& s,
                                                   int from_attempt) const {
  if (!dump_) return nullptr;
  const SlurmJob* latest = nullptr;
  for (auto it = dump_->by_tag.lower_bound({e.rec.spec.id, s.seg.index, from_attempt});
       it != dump_->by_tag.end() && std::get<0>(it->first) == e.rec.spec.id &&
       std::get<1>(it->first) == s.seg.index;
       ++it)
    for (const SlurmJob* j : it->second)
      if (!is_finished(j->state)) latest = j;
  return latest;
}

void CampaignController::track(Entry& e, const JobIndex& index, Seconds dump_time, Seconds now,
                               Actions& out) {
  for (auto& s : e.rec.segments) {
    if (s.seg.slurm_job_id <= 0 || s.submitting) continue;
    if (s.seg.state != SegmentState::kPending && s.seg.state != SegmentState::kRunning) continue;
    if (s.adopted_tag == SegmentRecord::kTagUnread && s.seg.attempts == 1) {  // not seen yet
      const auto tagged = index.tagged_by_id.find(s.seg.slurm_job_id);
      const auto untagged = index.untagged_by_id.find(s.seg.slurm_job_id);
      const SlurmJob* job = tagged != index.tagged_by_id.end()       ? tagged->second
                            : untagged != index.untagged_by_id.end() ? untagged->second
                                                                     : nullptr;
      const bool rewritten = !store_.value(kCommentsRewrittenKey).empty();
      if (const auto why =
              job ? why_not_adoptable(*job, store_.store_id(), rewritten) : std::nullopt) {
        s.seg.state = SegmentState::kFailed;
        s.message = *why;
        save(e, s);
        finish(e, CampaignState::kFailed, "campaign add --adopt refused: " + *why, now);
        return;
      }
    }
    if (const SlurmJob* job = segment_job(e, s, index)) {
      apply_job(e, s, *job, now, out);
      continue;
    }
    // Not in the dump: the controller purged its record (MinJobAge) or lost it. Only look into
    // the absence of a job submitted well before the dump was taken (the submit time is
    // slurmctld's, the dump's this machine's).
    if (s.seg.submit_time < 0 ||
        s.seg.submit_time - controller_ahead_ + config_.reconcile_delay > dump_time)
      continue;
    settle_fate(e, s, now, out);
  }
}

const SlurmJob* CampaignController::segment_job(Entry& e, SegmentRecord& s, const JobIndex& index) {
  // An adopted job carries the tag it was submitted with, not the segment's: the job under the
  // recorded id with that tag (taken from the first dump that shows it) is the segment.
  if (!s.adopted_tag.empty() && s.seg.attempts == 1) {
    const auto it = index.tagged_by_id.find(s.seg.slurm_job_id);
    if (it == index.tagged_by_id.end()) return nullptr;
    if (s.adopted_tag == SegmentRecord::kTagUnread) {
      s.adopted_tag = it->second->comment;
      save(e, s);
    }
    return it->second->comment == s.adopted_tag ? it->second : nullptr;
  }
  const auto* tagged = index.tagged(e.rec.spec.id, s.seg.index, s.seg.attempts);
  if (!tagged) return untagged_segment_job(e, s, index);
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

// Each attempt's job, and the twin an attempt left where its late job started first (follow_twin).
std::vector<JobId> CampaignController::submitted_jobs(const Entry& e,
                                                      const SegmentRecord& s) const {
  std::vector<JobId> jobs;
  for (const auto& sub : store_.submissions(e.rec.spec.id))
    if (sub.segment == s.seg.index)
      for (const JobId job : {sub.job, sub.twin})
        if (job > 0) jobs.push_back(job);
  return jobs;
}

Seconds CampaignController::earliest_on_controller(Seconds local) const {
  return local < 0 ? local : local + controller_ahead_ - kControllerClockSlack;
}

// A site's job_submit plugin may write over --comment, the tag with it: the job under the id
// sbatch returned, of the segment's name, is the segment's then. slurmctld holds one live job
// under an id, and this one was returned for this submission: no clock is asked. Said once (and
// kept in the store): a submission whose reply is lost is then found by its name.
const SlurmJob* CampaignController::untagged_segment_job(Entry& e, const SegmentRecord& s,
                                                         const JobIndex& index) {
  const auto it = index.untagged_by_id.find(s.seg.slurm_job_id);
  if (it == index.untagged_by_id.end()) return nullptr;
  const SlurmJob& job = *it->second;
  if (job.name != segment_job_name(store_.store_id(), e.rec, s.seg.index)) return nullptr;
  if (store_.value(kCommentsRewrittenKey).empty()) {
    store_.set_value(kCommentsRewrittenKey, "1");
    spdlog::warn(
        "job {} ({}) carries the comment '{}', not the tag mirage gave it: the site rewrites "
        "--comment (a job_submit plugin). mirage follows its jobs by the id sbatch returned and "
        "their name, and finds a submission whose reply was lost by its name and submit time",
        job.id, job.name, job.comment);
  }
  return &job;
}

// Where the site rewrites comments, a submission whose reply was lost is the job of the
// segment's name submitted since the intent (on slurmctld's clock) that no segment follows and
// that no earlier attempt was, the first submitted. Asked before any rewrite was seen too: the
// first submission of all may be the one whose reply is lost.
const SlurmJob* CampaignController::untagged_submission(const Entry& e, const SegmentRecord& s,
                                                        const JobIndex& index) const {
  const auto [from, to] =
      index.untagged_by_name.equal_range(segment_job_name(store_.store_id(), e.rec, s.seg.index));
  if (from == to) return nullptr;
  const Seconds since = earliest_on_controller(s.intent_time);
  // The segment's earlier attempts (one may have failed at once).
  const std::vector<JobId> earlier = submitted_jobs(e, s);
  const SlurmJob* found = nullptr;
  for (auto it = from; it != to; ++it) {
    const SlurmJob* j = it->second;
    if (since >= 0 && (j->submit == kUnknownTime || j->submit < since)) continue;
    if (follower(e, j->id) || std::find(earlier.begin(), earlier.end(), j->id) != earlier.end())
      continue;
    if (!found || j->submit < found->submit) found = j;
  }
  return found;
}

bool CampaignController::successor_started(const Entry& e, const SegmentRecord& s) const {
  const auto next = static_cast<std::size_t>(s.seg.index) + 1;
  return next < e.rec.segments.size() && e.rec.segments[next].seg.start_time >= 0;
}

// Only `e`'s segments can follow a job of its tags: a tick asks this of every live tagged job,
// so it reads one campaign, not the whole store.
const SegmentRecord* CampaignController::follower(const Entry& e, JobId job) const {
  const auto it = std::find_if(e.rec.segments.begin(), e.rec.segments.end(),
                               [&](const SegmentRecord& s) { return s.seg.slurm_job_id == job; });
  return it == e.rec.segments.end() ? nullptr : &*it;
}

// Why a segment that ended (done, or failed with its successor out) still has its job live, if
// it does: queued or started again since (`scontrol requeue` takes a finished batch job too, and
// no segment follows it any more, so it would run the segment a second time unwatched beside the
// one that carries on), or still running after the segment was ended by cancelling it (the
// cancel did not land: the job would run to its limit unwatched). Empty: not live.
std::string live_after_it_ended(const SegmentRecord& s, const SlurmJob& job) {
  if (s.seg.state != SegmentState::kDone && s.seg.state != SegmentState::kFailed) return {};
  if (is_finished(job.state)) return {};
  if (job.state == SlurmJobState::kPending ||
      (s.seg.start_time >= 0 && job.start != kUnknownTime && job.start > s.seg.start_time))
    return "was requeued after it ended";
  return "still runs after it ended";
}

// A submission whose reply was lost is submitted again once a dump taken `reconcile_delay` later
// lacks its tag, but a busy slurmctld may still create the first job after that (it reads the
// request off the socket sbatch gave up on): two jobs then carry the segment's tag. The one the
// segment does not follow would run it a second time, so it is cancelled; if it started first,
// it is followed and its pending twin cancelled instead.
void CampaignController::cancel_strays(Entry& e, const JobIndex& index, Seconds now, Actions& out) {
  const std::int64_t id = e.rec.spec.id;
  const bool finished = is_finished(e.rec.state);
  // The job of a segment that ended, live in the dump: found by its id, and taken as the
  // segment's by its tag or, where the site rewrites --comment, by its name
  // (untagged_segment_job), as a running segment's is (a reused id is someone else's job).
  for (const SegmentRecord& s : e.rec.segments) {
    const JobId job_id = s.seg.slurm_job_id;
    if (job_id <= 0 || s.submitting || e.strays_cancelled.count(job_id)) continue;
    const SlurmJob* j = untagged_segment_job(e, s, index);
    if (const auto tagged = index.tagged_by_id.find(job_id);
        !j && tagged != index.tagged_by_id.end()) {
      const auto tag = JobTag::parse(tagged->second->comment);
      if (tag && tag->store == store_.store_id() && tag->campaign == id &&
          tag->segment == s.seg.index)
        j = tagged->second;
    }
    if (!j) continue;
    const std::string live = live_after_it_ended(s, *j);
    if (live.empty()) continue;
    spdlog::warn(
        "campaign {} segment {}: job {} {} ({}): cancelling it so the segment does not run a "
        "second time",
        id, s.seg.index, job_id, live, to_string(s.seg.state));
    e.strays_cancelled.insert(job_id);
    out.cancels.push_back({id, s.seg.index, job_id});
  }
  for (auto it = index.by_tag.lower_bound({id, 0, 0});
       it != index.by_tag.end() && std::get<0>(it->first) == id; ++it) {
    const auto& [campaign, k, attempt] = it->first;
    SegmentRecord* s = k < e.count() ? &e.seg(k) : nullptr;
    // Settled by its tag first: one of the jobs is adopted, and the next tick sees the others.
    if (s && s->submitting) continue;
    // An attempt the store never recorded (restored from an earlier copy) is followed when the
    // campaign reaches it (queued_attempt), unless the campaign is over.
    if (!finished && (!s || attempt > s->seg.attempts)) continue;
    for (const SlurmJob* j : it->second) {
      if (is_finished(j->state) || e.strays_cancelled.count(j->id)) continue;
      if (follower(e, j->id)) continue;  // a segment's own job: above
      JobId cancel = j->id;
      JobId kept = s ? s->seg.slurm_job_id : 0;
      if (!finished && attempt == s->seg.attempts && s->seg.state == SegmentState::kPending &&
          s->seg.slurm_job_id > 0 && j->state != SlurmJobState::kPending) {
        cancel = s->seg.slurm_job_id;  // the twin that started first is the segment's run
        kept = j->id;
        s->seg.slurm_job_id = j->id;
        store_.follow_twin(id, *s, cancel);  // a later search for its runs knows both
        apply_job(e, *s, *j, now, out);
      }
      spdlog::warn(
          "campaign {} segment {}: job {} carries the tag {} and is not the segment's job ({}; "
          "a submission taken as lost that slurmctld carried out late?): cancelling job {} so "
          "the segment does not run twice",
          id, k, j->id, j->comment, kept > 0 ? "job " + std::to_string(kept) : "none", cancel);
      e.strays_cancelled.insert(cancel);
      out.cancels.push_back({id, k, cancel});
    }
  }
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
  // Requeued (preempted, a node failed, `scontrol requeue`): the same job, back in the queue or
  // started again, is the same attempt; but once the successor has started, it would run the
  // segment a second time beside the one that carries on from its checkpoint.
  const bool requeued = s.seg.start_time >= 0 && !is_finished(job.state) &&
                        (job.state == SlurmJobState::kPending ||
                         (s.seg.state == SegmentState::kRunning && job.start > s.seg.start_time));
  if (requeued && successor_started(e, s)) {
    cancel_segment(e, s, SegmentState::kDone,
                   "requeued by Slurm after segment " + std::to_string(s.seg.index + 1) +
                       " started, which carries on: cancelled so that it does not run twice",
                   now, out);
    spdlog::warn(
        "campaign {} segment {}: job {} was requeued after segment {} started; cancelling it", id,
        s.seg.index, job.id, s.seg.index + 1);
    return;
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
      if (requeued) {  // started again between two dumps: its limit runs from the new start
        s.seg.start_time = job.start;
        save(e, s);
        spdlog::info("campaign {} segment {}: job {} was requeued and started again", id,
                     s.seg.index, job.id);
        if (e.policy) e.policy->reset();
        e.next_decision = 0;
        return;
      }
      if (s.seg.state != SegmentState::kRunning) {
        s.seg.state = SegmentState::kRunning;
        s.seg.start_time = job.start != kUnknownTime ? job.start : now;
        save(e, s);
        wait_started(e, s);
        spdlog::info(
            "campaign {} segment {}: job {} started after {} in the queue", id, s.seg.index, job.id,
            format_short_duration(std::max<Seconds>(0, s.seg.start_time - s.seg.submit_time)));
        // A new boundary begins: the next segment's decisions start now.
        if (e.policy) e.policy->reset();
        e.next_decision = 0;
      }
      return;
    default: break;
  }
  // Finished. A job that ran, was requeued and then ended in the queue ran all the same: its
  // successor carries on from its checkpoint, and submitting it again could run it beside that.
  const bool started =
      job.start != kUnknownTime || s.seg.state == SegmentState::kRunning || s.seg.start_time >= 0;
  if (s.seg.start_time < 0 && job.start != kUnknownTime) {
    s.seg.start_time = job.start;  // started and ended between two dumps
    wait_started(e, s);
  }
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
        // Pending: requeued after it ran, then cancelled in the queue.
        s.message = s.signalled_at >= 0                     ? ""
                    : s.seg.state == SegmentState::kPending ? "cancelled after it had run"
                                                            : "cancelled while running";
        s.seg.state = SegmentState::kDone;
        save(e, s);
        spdlog::info("campaign {} segment {}: {}", id, s.seg.index, what);
        return;
      }
      segment_failed(e, s, false, what + " before it started", now, out);
      return;
    default:
      // A hand-off predecessor ends whichever way after its signal (a script that traps no signal
      // dies of it): its successor carries on from its checkpoint, so this is no failure of the
      // campaign, and never one of a streak that would fail it.
      if (started && s.signalled_at >= 0) {
        s.seg.state = SegmentState::kDone;
        s.message = what + " after the hand-off signal; segment " +
                    std::to_string(s.seg.index + 1) + " carries on";
        save(e, s);
        spdlog::info("campaign {} segment {}: {}", id, s.seg.index, s.message);
        return;
      }
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
    s.forget_handoff();
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
      c.id, job.id, job.nodes, job.gpus_per_node, format_short_duration(limit), partition);
  c.nodes = job.nodes;
  c.gpus_per_node = job.gpus_per_node;
  c.time_limit = limit;
  if (c.partition != partition) {
    c.partition = partition;
    follow_granted_partition(e);
  }
  e.rec.shape_granted = true;
  store_.save_campaign_shape(e.rec);
}

}  // namespace mirage::daemon

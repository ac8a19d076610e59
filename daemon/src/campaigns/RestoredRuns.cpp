// A store restored from an earlier copy (a backup, a file system snapshot, a crash that lost the
// -wal file's tail) does not know the submissions made after that copy. One still queued or
// running is found in the dump by its tag (CampaignController::queued_attempt); one that ran and
// ended is gone from it, so before each submission accounting (one search a tick) and then the
// segment's output files are asked whether the segment already ran (EarlierRuns.h). Found, the run
// is adopted as the segment's attempt and the campaign carries on from how it ended, as if the
// store had seen it; the segment is never submitted again.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "campaigns/CampaignEntry.h"
#include "mirage/daemon/campaigns/CampaignController.h"

namespace mirage::daemon {

EarlierRunQuestion CampaignController::earlier_run_question(const Entry& e,
                                                            const SegmentRecord& s) const {
  EarlierRunQuestion q;
  // Accounting's times are slurmctld's, an output file's its file server's, which may follow this
  // machine's clock instead: nothing the campaign ran is older than its creation on either. A run
  // taken as older would run the segment twice; a file of an earlier campaign of the name that
  // the wider window takes in is a job the store knows (below).
  q.since = std::min(e.rec.created, e.rec.created + controller_ahead_) - kControllerClockSlack;
  q.user_id = config_.user_id;
  q.known_jobs = submitted_jobs(e, s);
  if (s.seg.slurm_job_id > 0) q.known_jobs.push_back(s.seg.slurm_job_id);
  for (const auto& [id, other] : entries_) {
    if (id == e.rec.spec.id || other->rec.spec.name != e.rec.spec.name) continue;
    q.name_is_unique = false;
    for (const auto& sub : store_.submissions(id))
      for (const JobId job : {sub.job, sub.twin})
        if (job > 0) q.known_jobs.push_back(job);
  }
  q.comments_rewritten = !store_.value(kCommentsRewrittenKey).empty();
  q.output_pattern =
      segment_output_pattern(segment_job_name(store_.store_id(), e.rec, s.seg.index),
                             [&](JobId job, const std::string& name) {
                               return output_file_of(e, name, job, /*one_job_only=*/false);
                             });
  return q;
}

void CampaignController::on_earlier_run(const SubmitAction& a, EarlierRun run) {
  auto it = entries_.find(a.campaign);
  if (it == entries_.end()) return;
  Entry& e = *it->second;
  e.in_flight.erase(a.segment);
  const SegmentRecord& s = e.seg(a.segment);
  if (!s.submitting || s.seg.attempts != a.attempt) return;
  e.earlier_runs[a.segment] = std::move(run);
}

void CampaignController::on_earlier_runs_checked(const SubmitAction& a,
                                                 const std::string& unchecked) {
  auto it = entries_.find(a.campaign);
  if (it == entries_.end()) return;
  Entry& e = *it->second;
  if (e.rerun_note == unchecked) return;  // said once, not at every submission
  e.rerun_note = unchecked;
  store_.set_value(rerun_check_key(a.campaign), unchecked);
  if (!unchecked.empty())
    spdlog::warn(
        "campaign {} segment {}: submitted without knowing whether it already ran while the "
        "store did not know it (a store restored from an earlier copy would run it twice): {}",
        a.campaign, a.segment, unchecked);
}

void CampaignController::adopt_earlier_run(Entry& e, SegmentRecord& s, const EarlierRun& run,
                                           Seconds now, Actions& out) {
  const std::int64_t id = e.rec.spec.id;
  const int k = s.seg.index;
  const std::string what =
      "ran while the store did not know it (restored from an earlier copy?): " + run.evidence +
      "; adopted, not submitted again";
  if (run.attempt > s.seg.attempts) {  // later attempts ran too: the last of them is the segment's
    store_.refuse_submission(
        id, s, "not submitted: attempt " + std::to_string(run.attempt) + " had already run unseen");
    s.seg.attempts = run.attempt;
    store_.begin_submission(id, s, attempt_tag(store_.store_id(), e.rec, s), what);
  } else {
    store_.note_submission(id, s, what);
  }
  ++counters_.earlier_runs;
  spdlog::warn("campaign {} segment {}: attempt {} {}", id, k, s.seg.attempts, what);
  if (run.accounted) {
    adopt_tagged(e, s, in_campaign_shape(*run.accounted, e.rec), now, out);
    return;
  }
  // Its output file says that it started, not how it ended: taken as ended, as a job that left
  // the queue unseen is (SegmentFate.cpp).
  s.submitting = false;
  s.seg.slurm_job_id = run.job;
  s.seg.submit_time = kUnknownTime;
  s.seg.state = SegmentState::kDone;
  s.seg.end_time = run.written;
  s.output_file = run.output_file;
  s.message = "ran unseen by a restored store; " + run.evidence + ", so it is taken as ended";
  e.unknown_since.erase(k);
  store_.finish_submission(id, s, run.job);
  store_.record_outcome(id, s, "ended unseen: " + run.evidence);
}

}  // namespace mirage::daemon

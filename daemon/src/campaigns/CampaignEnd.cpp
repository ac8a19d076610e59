// How segments and campaigns end besides their limit: the done file a segment creates, and the
// hand-off (the predecessor signalled once its successor runs, cancelled after the grace).
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "campaigns/CampaignEntry.h"
#include "mirage/daemon/campaigns/CampaignController.h"
#include "mirage/daemon/campaigns/DoneFile.h"

namespace mirage::daemon {

namespace {

// How much later than a segment's start the done file may be written and still be taken as
// written before it started (clock skew between the file server and slurmctld; same second).
constexpr Seconds kDoneFileSlack = 10;
constexpr const char* kStartedAfterDone = "cancelled: it started after the done file was written";

// A hand-off signal or cancel committed at `committed` that this process did not send: an
// earlier process may have died before sending it, so it is due again `delay` later (both are
// harmless to repeat: the training job ignores a second signal, a job gone is no error).
bool due_again(const std::set<int>& sent_here, int k, Seconds committed, Seconds delay,
               Seconds now) {
  return !sent_here.count(k) && now >= committed + delay;
}

}  // namespace

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
  const auto signal = [&](int k, JobId job) {
    e.handoff_signalled_here.insert(k);
    out.signals.push_back({e.rec.spec.id, k, job, config_.handoff_signal});
  };
  const auto cancel = [&](int k, JobId job) {
    e.handoff_cancelled_here.insert(k);
    out.cancels.push_back({e.rec.spec.id, k, job});
  };
  for (int k = 0; k + 1 < e.count(); ++k) {
    SegmentRecord& p = e.seg(k);
    const SegmentRecord& n = e.seg(k + 1);
    if (p.seg.state != SegmentState::kRunning || n.seg.state != SegmentState::kRunning) continue;
    if (p.signalled_at < 0) {
      p.signalled_at = now;
      save(e, p);
      signal(k, p.seg.slurm_job_id);
      ++counters_.handoff_signals;
      spdlog::info(
          "campaign {}: segment {} (job {}) started; signalling segment {} (job {}) "
          "with signal {} to checkpoint and stop",
          e.rec.spec.id, k + 1, n.seg.slurm_job_id, k, p.seg.slurm_job_id, config_.handoff_signal);
    } else if (p.killed_at < 0 && now >= p.signalled_at + e.rec.spec.handoff_grace) {
      p.killed_at = now;
      save(e, p);
      cancel(k, p.seg.slurm_job_id);
      spdlog::warn(
          "campaign {}: segment {} (job {}) still runs {} after the hand-off signal; "
          "cancelling it",
          e.rec.spec.id, k, p.seg.slurm_job_id, format_short_duration(e.rec.spec.handoff_grace));
    } else if (const bool cancelled = p.killed_at >= 0;
               due_again(cancelled ? e.handoff_cancelled_here : e.handoff_signalled_here, k,
                         cancelled ? p.killed_at : p.signalled_at, config_.retry_delay, now)) {
      if (cancelled)
        cancel(k, p.seg.slurm_job_id);
      else
        signal(k, p.seg.slurm_job_id);
      spdlog::warn(
          "campaign {}: segment {} (job {}) still runs {} after its hand-off {}, which a process "
          "that stopped may not have sent; sending it again",
          e.rec.spec.id, k, p.seg.slurm_job_id,
          format_short_duration(now - (cancelled ? p.killed_at : p.signalled_at)),
          cancelled ? "cancel" : "signal");
    }
  }
}

}  // namespace mirage::daemon

// How segments and campaigns end besides their limit: the done file a segment creates, and the
// hand-off (the predecessor signalled once its successor runs, cancelled a grace after Slurm took
// the signal).
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "campaigns/CampaignEntry.h"
#include "mirage/daemon/campaigns/CampaignController.h"
#include "mirage/daemon/campaigns/DoneFile.h"

namespace mirage::daemon {

namespace {

// How much later than a segment's start the done file may be written and still be taken as
// written before it started (clock skew between the file server and slurmctld; same second).
constexpr Seconds kDoneFileSlack = 10;
constexpr const char* kStartedAfterDone = "cancelled: it started after the done file was written";

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

// Each step is committed (its time kept) before it is sent, and kept as sent once Slurm took it
// (on_signalled, on_cancelled). One committed and not taken was lost with a process that stopped
// first (a restart drops the Slurm thread's queue; a tick may be killed before its actions), or
// is still on its way: it is sent again, while the predecessor runs, once the retry delay has
// passed since it was last committed (both are harmless to repeat: the training job ignores a
// second signal, a job gone is no error). The grace runs from the signal's taking.
void CampaignController::handoff(Entry& e, Seconds now, Actions& out) {
  if (e.rec.spec.overlap != OverlapMode::kHandoff) return;
  const auto signal = [&](SegmentRecord& p) {
    p.signalled_at = now;
    save(e, p);
    out.signals.push_back({e.rec.spec.id, p.seg.index, p.seg.slurm_job_id, config_.handoff_signal});
  };
  const auto cancel = [&](SegmentRecord& p) {
    p.killed_at = now;
    save(e, p);
    out.cancels.push_back({e.rec.spec.id, p.seg.index, p.seg.slurm_job_id});
  };
  const auto lost = [&](const SegmentRecord& p, Seconds committed, const char* what) {
    if (now < committed + config_.retry_delay) return false;
    spdlog::warn(
        "campaign {}: segment {} (job {}) still runs {} after its hand-off {} was committed, and "
        "Slurm is not known to have taken it (a process that stopped may not have sent it); "
        "sending it again",
        e.rec.spec.id, p.seg.index, p.seg.slurm_job_id, format_short_duration(now - committed),
        what);
    return true;
  };
  for (int k = 0; k + 1 < e.count(); ++k) {
    SegmentRecord& p = e.seg(k);
    const SegmentRecord& n = e.seg(k + 1);
    if (p.seg.state != SegmentState::kRunning || n.seg.state != SegmentState::kRunning) continue;
    if (p.signalled_at < 0) {
      signal(p);
      ++counters_.handoff_signals;
      spdlog::info(
          "campaign {}: segment {} (job {}) started; signalling segment {} (job {}) "
          "with signal {} to checkpoint and stop",
          e.rec.spec.id, k + 1, n.seg.slurm_job_id, k, p.seg.slurm_job_id, config_.handoff_signal);
    } else if (p.killed_at >= 0) {
      if (p.cancel_sent_at < 0 && lost(p, p.killed_at, "cancel")) cancel(p);
    } else if (p.signal_sent_at < 0) {
      if (lost(p, p.signalled_at, "signal")) signal(p);
    } else if (now >= p.signal_sent_at + e.rec.spec.handoff_grace) {
      cancel(p);
      spdlog::warn(
          "campaign {}: segment {} (job {}) still runs {} after the hand-off signal; "
          "cancelling it",
          e.rec.spec.id, k, p.seg.slurm_job_id, format_short_duration(e.rec.spec.handoff_grace));
    }
  }
}

}  // namespace mirage::daemon

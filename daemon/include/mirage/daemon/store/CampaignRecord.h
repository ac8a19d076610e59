#pragma once
// A campaign as the daemon keeps it: the core Campaign (what to run) plus what the daemon needs
// to drive it and to survive a restart (owner, account, environment, state of each segment with
// its submission intent).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mirage/core/Campaign.h"
#include "mirage/core/Job.h"
#include "mirage/core/QueueSnapshot.h"

namespace mirage::daemon {

// The most segments a campaign may have, bounded or open-ended.
inline constexpr int kMaxSegments = 10000;

enum class CampaignState { kActive, kPaused, kDone, kFailed, kCancelled };
std::string_view to_string(CampaignState state);
std::optional<CampaignState> parse_campaign_state(std::string_view text);
// Done, failed and cancelled campaigns are finished: nothing more is submitted for them.
inline bool is_finished(CampaignState s) {
  return s == CampaignState::kDone || s == CampaignState::kFailed || s == CampaignState::kCancelled;
}

struct SegmentRecord {
  Segment seg;  // state, Slurm job id, times, attempts (submissions made so far)
  // An intent was recorded for attempt seg.attempts and its outcome is not known yet: the job
  // may or may not exist in Slurm; it is found by its tag or submitted again.
  bool submitting = false;
  Seconds intent_time = -1;
  // Hand-off, of a predecessor: when its signal (its cancel after the grace) was last committed,
  // and when Slurm took it; -1 for none. One committed and not taken (its process stopped first)
  // is sent again; the grace runs from the signal's taking, so the job gets all of it.
  Seconds signalled_at = -1;
  Seconds signal_sent_at = -1;
  Seconds killed_at = -1;
  Seconds cancel_sent_at = -1;
  void forget_handoff() { signalled_at = signal_sent_at = killed_at = cancel_sent_at = -1; }
  std::string message;  // the last failure, for humans
  // The fallback chain: submitted behind this job (--dependency=afterany), the predecessor, so
  // that it starts when that job ends even if mirage is gone; 0 when submitted without one.
  JobId held_behind = 0;
  Seconds released_at = -1;  // when mirage cleared that dependency (the policy's decision)
  bool held() const { return held_behind > 0 && released_at < 0; }
  // Its job left the queue while mirage was not looking, and how it ended is not known yet
  // (accounting and its output file are asked): since when; -1 once its fate is known. Nothing
  // more is submitted for the campaign meanwhile: a segment that may have run never runs twice.
  Seconds lost_at = -1;
  bool fate_unknown() const { return lost_at >= 0; }
  // Its batch script's standard output as Slurm reported it: the file exists once it started.
  std::string output_file;
  // A job `campaign add --adopt` took back (a lost store's, another campaign's): the tag it
  // carries in place of the segment's own, kTagUnread until a dump shows it; empty otherwise.
  std::string adopted_tag;
  static constexpr const char* kTagUnread = "?";
  // Its priority as Slurm last reported it (running: as it started), for the successor's
  // forecast; not stored, as the next job dump reports it again.
  double priority = kUnknownPriority;
};

struct CampaignRecord {
  // spec.segments is unused: the segments' state lives in `segments`. spec.segment_count is the
  // most segments, 0 for none (the campaign runs until a segment creates the done file).
  // spec.nodes, gpus_per_node, time_limit (0: not known yet) and partition are the segments'
  // shape: as asked at `campaign add`, then as Slurm granted it (shape_granted).
  Campaign spec;
  std::string script_path;  // where the script was read from, for display
  std::uint32_t owner_uid = 0;
  std::string account;
  std::string qos;
  bool shape_granted = false;
  // The `campaign add` flags as sbatch options, which override the script's directives.
  std::vector<std::string> sbatch_options;
  int max_retries = -1;   // further submissions of a failed segment; -1: the daemon's default
  std::string done_file;  // MIRAGE_DONE_FILE
  // Keep the next segment queued behind the running one (afterany) and release it early when the
  // policy decides, so the chain goes on reactively without mirage.
  bool fallback_chain = false;
  double max_hours = 0;  // the most run time of all segments together, in hours; 0: no cap
  std::string work_dir;
  std::vector<std::string> environment;  // NAME=value, as sbatch --export=ALL would pass
  CampaignState state = CampaignState::kActive;
  std::string message;  // why it failed or was cancelled
  Seconds created = 0;
  Seconds finished = -1;
  // The key `campaign add` sent: a retry with the same key returns this campaign.
  std::string request_key;
  // Its segments' jobs are named NAME-sK-<store id> (segment_job_name); false for a campaign
  // added before names carried the store id (schema 6 and earlier), whose jobs go by NAME-sK.
  bool job_names_carry_store = true;
  // Its segments are submitted with --ignore-pbs (sbatch applies none of the script's #PBS and
  // #BSUB lines); false for a campaign added before (schema 9 and earlier), whose segments keep
  // what sbatch made of them.
  bool sbatch_ignores_pbs = true;
  std::vector<SegmentRecord> segments;

  int segments_done() const;
  bool open_ended() const { return spec.segment_count == 0; }
};

}  // namespace mirage::daemon

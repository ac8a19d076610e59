#pragma once
// What the controller keeps of one campaign besides its record: the policy and what is under
// way (submissions out, accounting asked, Slurm's latest estimate). Private to the controller's
// sources.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "mirage/daemon/campaigns/CampaignController.h"

namespace mirage::daemon {

struct CampaignController::Entry {
  CampaignRecord rec;
  std::unique_ptr<Policy> policy;
  std::string policy_name;
  Seconds next_decision = 0;
  std::set<int> in_flight;                 // segments whose submit action is out
  std::set<int> looking_up;                // segments whose job is being asked of accounting
  std::map<int, AccountedJob> answers;     // what accounting said, for the next tick
  std::map<int, Seconds> next_lookup;      // a segment whose fate is unknown: asked again then
  std::map<int, Seconds> unknown_since;    // segments whose intent has an unknown outcome
  std::map<int, Seconds> retry_after;      // refused segments: not submitted again before
  std::map<int, int> refusals_for_now;     // refusals in a row that only last a while
  std::map<int, EarlierRun> earlier_runs;  // submissions not made: the segment had run unseen
  std::set<JobId> strays_cancelled;        // cancel sent: a tag's second jobs, ended segments'
  // Why the latest submission could not be checked for an earlier unseen run; empty when it was.
  std::string rerun_note;
  // Slurm's latest estimate for segment `estimate_segment` (asked once a decision), or why there
  // is none.
  int estimate_segment = -1;
  Seconds slurm_start = kUnknownTime;
  Seconds estimated_at = -1;
  std::string estimate_note;
  bool has_unresolved() const {
    return std::any_of(rec.segments.begin(), rec.segments.end(),
                       [](const SegmentRecord& s) { return s.submitting; });
  }
  SegmentRecord& seg(int i) { return rec.segments.at(static_cast<std::size_t>(i)); }
  int count() const { return static_cast<int>(rec.segments.size()); }
};

// The daemon's own jobs in a dump, by their tag (campaign, segment, attempt). A segment's job is
// found by its tag, never by its id alone: ids repeat (after MaxJobId wraps, or on a cluster
// that lost its state), and a job under a recorded id that lacks the segment's tag is not it.
struct CampaignController::JobIndex {
  std::map<std::tuple<std::int64_t, int, int>, std::vector<const SlurmJob*>> by_tag;
  // Every job of the user's that carries a mirage tag, of any store: what an adopted segment is.
  std::map<JobId, const SlurmJob*> tagged_by_id;
  // The user's jobs whose comment is no mirage tag: where the site's job_submit plugin rewrites
  // --comment, a segment's job is one of these, found by its id or name and its submit time.
  std::map<JobId, const SlurmJob*> untagged_by_id;
  std::multimap<std::string, const SlurmJob*> untagged_by_name;
  const std::vector<const SlurmJob*>* tagged(std::int64_t campaign, int segment,
                                             int attempt) const {
    const auto it = by_tag.find({campaign, segment, attempt});
    return it == by_tag.end() ? nullptr : &it->second;
  }
};

// What the measure of slurmctld's clock against this machine's may be off by (whole seconds both
// sides, a dump stamped while its reply was on the way): a job submitted this much before an
// intent, as the two clocks read, may still be the intent's.
constexpr Seconds kControllerClockSlack = 30;

// Kept in the store once a job of it is seen with its --comment (the tag) rewritten by the site.
constexpr const char* kCommentsRewrittenKey = "site_rewrites_comments";

// The job name a segment is submitted under, NAME-sK-<store id>: what squeue, accounting and its
// output file (%x) know it by, and, where the site rewrites --comment, what tells its job from
// others. The store id (the tag's, 8 hex digits) keeps apart two stores of one user (two
// projects) with campaigns of one name. A campaign added before names carried it keeps NAME-sK,
// the name its jobs in flight were submitted under.
inline std::string segment_job_name(const std::string& store_id, const CampaignRecord& r,
                                    int index) {
  std::string name = r.spec.name + "-s" + std::to_string(index);
  if (r.job_names_carry_store) name += "-" + store_id;
  return name;
}

// The tag the segment's current attempt is submitted with, and found by in the queue and
// accounting.
inline JobTag attempt_tag(const std::string& store_id, const CampaignRecord& r,
                          const SegmentRecord& s) {
  return JobTag{store_id, r.spec.id, s.seg.index, s.seg.attempts};
}

// Accounting's record of a segment's job as a dump would show it: how it ran and ended, in the
// shape Slurm granted before (accounting's record does not say it).
inline SlurmJob in_campaign_shape(SlurmJob job, const CampaignRecord& r) {
  job.nodes = r.spec.nodes;
  job.gpus_per_node = r.spec.gpus_per_node;
  job.time_limit = r.spec.time_limit;
  job.partition = r.spec.partition;
  return job;
}

// "1 attempt", "3 attempts".
inline std::string attempts_text(int n) {
  return std::to_string(n) + (n == 1 ? " attempt" : " attempts");
}

}  // namespace mirage::daemon

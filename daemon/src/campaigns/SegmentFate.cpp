// A segment whose job left the queue while mirage was not looking. Slurm purges a job's record
// MinJobAge after it ends (300 s by default), so the job's absence from the dump says only that it
// ended or will never run, not whether it ran: a segment taken as "never started" and submitted
// again may run twice. Its fate is asked instead, in this order: accounting (slurmdbd, through
// sacct), then the output file slurmd creates when the batch script starts. A segment neither can
// tell about is held, named in `campaign show`, and asked about again; nothing more of its
// campaign is submitted until it is known or the user says (`mirage campaign settle`).
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

#include "campaigns/CampaignEntry.h"
#include "mirage/daemon/campaigns/CampaignController.h"

namespace mirage::daemon {
namespace {

// How far accounting's submit time may differ from the one recorded (the daemon's clock when
// the job was never seen in a dump) and still be the segment's job rather than a reused id.
constexpr Seconds kSubmitSlack = 5 * kMinute;
// A file written this long before the job's submission is older than the job, not its output.
constexpr Seconds kOutputSlack = 10;
// Accounting that did not answer, or whose record lags, is asked again this soon.
constexpr Seconds kAskAgain = kMinute;

// What tells the segment's job among the records accounting keeps under its id.
struct SegmentMarks {
  std::uint32_t user_id = 0;
  std::string tag;   // the comment it was submitted with; empty: not known
  std::string name;  // the job name it was submitted under; empty: not known (an adopted job)
};

// Whether `job` is the segment's: the user's, under its id, carrying its tag where accounting
// keeps comments, else by its name and submitted no earlier than the segment (a requeued job's
// records can be submitted later), else submitted when the segment was.
bool same_job(const SegmentRecord& s, const SlurmJob& job, const SegmentMarks& marks) {
  if (job.id != s.seg.slurm_job_id || job.user_id != marks.user_id) return false;
  // A comment that is no mirage tag was written by the site (a job_submit plugin), not by this
  // job's submitter: the name and submit time tell then.
  if (JobTag::parse(job.comment) && !marks.tag.empty()) return job.comment == marks.tag;
  const bool unknown_submit = job.submit == kUnknownTime || s.seg.submit_time < 0;
  if (!job.name.empty() && !marks.name.empty())
    return job.name == marks.name &&
           (unknown_submit || job.submit >= s.seg.submit_time - kSubmitSlack);
  return unknown_submit || std::llabs(job.submit - s.seg.submit_time) <= kSubmitSlack;
}

// The segment's record among every one accounting keeps under the id (`sacct -D`: an id repeats,
// and a requeued job has a record for each run): the last of those that are the segment's, which
// says how its last run ended; nullptr when none is.
const SlurmJob* segment_record(const SegmentRecord& s, const std::vector<SlurmJob>& records,
                               const SegmentMarks& marks) {
  const SlurmJob* found = nullptr;
  for (const SlurmJob& r : records)
    if (same_job(s, r, marks) && (!found || r.submit >= found->submit)) found = &r;
  return found;
}

// When the segment's output file was last written, if it shows that the job started: slurmd
// creates it as the batch script starts. The file's time is its file server's clock, which may
// follow slurmctld's (the submit time's) or this machine's, `controller_ahead` apart: the file
// must be no older than the submission on either, else a file written before it (on this
// machine's clock, ahead) would pass for a run and the segment would be skipped. A run missed so
// is held and asked about, never submitted again.
std::optional<Seconds> output_written(const SegmentRecord& s, Seconds controller_ahead) {
  if (s.output_file.empty()) return std::nullopt;
  struct stat st {};
  if (::stat(s.output_file.c_str(), &st) != 0) return std::nullopt;
  const Seconds submitted = std::max(s.seg.submit_time, s.seg.submit_time - controller_ahead);
  if (st.st_mtime + kOutputSlack < submitted) return std::nullopt;
  return static_cast<Seconds>(st.st_mtime);
}

std::string output_note(const SegmentRecord& s) {
  return s.output_file.empty() ? "Slurm never reported its output file"
                               : "its output file " + s.output_file + " does not exist";
}

}  // namespace

void CampaignController::settle_fate(Entry& e, SegmentRecord& s, Seconds now, Actions& out) {
  const std::int64_t id = e.rec.spec.id;
  const int k = s.seg.index;
  if (!s.fate_unknown()) {
    s.lost_at = now;
    save(e, s);
    spdlog::warn(
        "campaign {} segment {}: job {} ({}) is no longer in Slurm's queue; asking accounting "
        "how it ended before anything is submitted",
        id, k, s.seg.slurm_job_id, to_string(s.seg.state));
  }
  const auto a = e.answers.find(k);
  if (a == e.answers.end()) {
    if (e.looking_up.count(k)) return;
    if (auto n = e.next_lookup.find(k); n != e.next_lookup.end() && now < n->second) return;
    e.looking_up.insert(k);
    out.lookups.push_back({id, k, s.seg.attempts, s.seg.slurm_job_id});
    ++counters_.lookups;
    return;
  }
  const AccountedJob answer = std::move(a->second);
  e.answers.erase(a);
  const std::string job = "job " + std::to_string(s.seg.slurm_job_id);
  SegmentMarks marks{config_.user_id, {}, {}};
  if (s.adopted_tag == SegmentRecord::kTagUnread && s.seg.attempts == 1) {
    // An adopted job gone before any dump showed it: its tag is read from accounting's record
    // of it, one of this store's (what a dump would have shown), so its campaign is known.
    const SlurmJob* tagged = nullptr;
    for (const SlurmJob& r : answer.records)
      if (const auto tag = JobTag::parse(r.comment);
          r.id == s.seg.slurm_job_id && r.user_id == config_.user_id && tag &&
          tag->store == store_.store_id() && (!tagged || r.submit >= tagged->submit))
        tagged = &r;
    if (tagged) {
      s.adopted_tag = tagged->comment;
      save(e, s);
    }
  }
  if (s.adopted_tag.empty() || s.seg.attempts > 1) {  // an adopted job's tag is its first's
    marks.tag = attempt_tag(store_.store_id(), e.rec, s).str();
    marks.name = segment_job_name(store_.store_id(), e.rec, k);
  } else if (s.adopted_tag != SegmentRecord::kTagUnread) {
    marks.tag = s.adopted_tag;
  }
  const SlurmJob* record = segment_record(s, answer.records, marks);
  const bool ours = record != nullptr;
  if (ours && is_finished(record->state)) {
    s.lost_at = -1;
    e.next_lookup.erase(k);
    spdlog::info("campaign {} segment {}: accounting says {} ended {}", id, k, job,
                 to_string(record->state));
    apply_job(e, s, in_campaign_shape(*record, e.rec), now, out);
    return;
  }
  // Accounting did not answer, or its record lags behind the controller's (not ended yet): asked
  // again shortly; only after fate_retry is nothing from it taken as its word.
  if ((answer.transient || ours) && now < s.lost_at + config_.fate_retry) {
    e.next_lookup[k] = now + kAskAgain;
    const std::string message =
        job + " left the queue unseen; accounting cannot say yet how it ended (" +
        (answer.transient ? answer.why
                          : "its record says " + std::string(to_string(record->state))) +
        "): asked again shortly, nothing is submitted meanwhile";
    if (s.message != message) {
      s.message = message;
      save(e, s);
    }
    return;
  }
  const std::string no_record = !answer.records.empty() ? "accounting's record of " + job +
                                                              " is not the segment's, or not ended"
                                                        : answer.why;
  auto taken_as_ended = [&](const std::string& how, Seconds end) {
    s.lost_at = -1;
    e.next_lookup.erase(k);
    s.seg.state = SegmentState::kDone;
    s.seg.end_time = end;
    s.message = job + " ended while mirage was not looking; " + how + " (" + no_record + ")";
    store_.record_outcome(id, s, "ended unseen: " + how);
    save(e, s);
    spdlog::info("campaign {} segment {}: {}", id, k, s.message);
  };
  if (s.seg.state == SegmentState::kRunning) {
    taken_as_ended("it was seen running, so it is taken as ended", now);
    return;
  }
  if (const auto written = output_written(s, controller_ahead_)) {
    taken_as_ended("its output file " + s.output_file + " shows it started", *written);
    return;
  }
  hold_unknown_fate(e, s, no_record + "; " + output_note(s), now);
}

void CampaignController::hold_unknown_fate(Entry& e, SegmentRecord& s, const std::string& why,
                                           Seconds now) {
  const std::int64_t id = e.rec.spec.id;
  const int k = s.seg.index;
  e.next_lookup[k] = now + config_.fate_retry;
  const std::string message = fmt::format(
      "job {} left the queue while mirage was not looking, and whether it ran cannot be known "
      "({}); nothing more is submitted until it is: `mirage campaign settle {} --segment {} "
      "--ran` if it ran, `--rerun` if it did not",
      s.seg.slurm_job_id, why, id, k);
  if (s.message == message) return;
  s.message = message;
  save(e, s);
  spdlog::warn("campaign {} segment {}: {}", id, k, message);
}

void CampaignController::on_accounted(const LookupAction& a, AccountedJob answer) {
  auto it = entries_.find(a.campaign);
  if (it == entries_.end()) return;
  Entry& e = *it->second;
  e.looking_up.erase(a.segment);
  const SegmentRecord& s = e.seg(a.segment);
  if (!s.fate_unknown() || s.seg.attempts != a.attempt || s.seg.slurm_job_id != a.job) return;
  e.answers[a.segment] = std::move(answer);
}

void CampaignController::on_accounting_failed(const LookupAction& a, const SlurmError& error) {
  on_accounted(a,
               {{}, std::string("accounting did not answer: ") + error.what(), error.transient()});
}

const CampaignRecord& CampaignController::settle(std::int64_t id, int segment, bool ran) {
  Entry& e = entry(id);
  if (segment < 0 || segment >= e.count())
    throw RequestError("segment: campaign " + std::to_string(id) + " has segments 0 to " +
                       std::to_string(e.count() - 1));
  if (is_finished(e.rec.state))
    throw RequestError("campaign " + std::to_string(id) + " is " +
                       std::string(to_string(e.rec.state)) + ": there is nothing to settle");
  SegmentRecord& s = e.seg(segment);
  if (!s.fate_unknown())
    throw RequestError("segment " + std::to_string(segment) + " of campaign " + std::to_string(id) +
                       " is " + std::string(to_string(s.seg.state)) +
                       ": its fate is known, there is nothing to settle");
  const Seconds now = clock_.now();
  CampaignStore::Batch batch(store_);
  s.lost_at = -1;
  e.answers.erase(segment);
  e.next_lookup.erase(segment);
  if (ran) {
    s.seg.state = SegmentState::kDone;
    if (s.seg.end_time < 0) s.seg.end_time = now;
    s.message = "job " + std::to_string(s.seg.slurm_job_id) +
                " ended unseen; taken as run, as the user said";
    store_.record_outcome(id, s, "ended unseen: the user said it ran");
  } else {
    store_.record_outcome(id, s, "ended unseen: the user said it did not run");
    s.seg.state = SegmentState::kPlanned;
    s.seg.slurm_job_id = 0;
    s.seg.submit_time = s.seg.start_time = s.seg.end_time = -1;
    s.forget_handoff();
    s.message = "the user said its job did not run: submitted again";
  }
  save(e, s);
  batch.commit();
  e.next_decision = 0;
  spdlog::info("campaign {} segment {}: settled by the user: {}", id, segment,
               ran ? "it ran" : "it did not run");
  return e.rec;
}

}  // namespace mirage::daemon

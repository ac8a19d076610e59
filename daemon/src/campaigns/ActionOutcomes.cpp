// The actions performed against Slurm (on the daemon's Slurm thread, or at once in a tick) and
// what their outcomes do to the campaigns; Slurm's latest estimate kept for the next decision.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "campaigns/CampaignEntry.h"
#include "campaigns/CancelsNotTaken.h"
#include "mirage/daemon/campaigns/CampaignController.h"

namespace mirage::daemon {

namespace {

std::string estimate_key(std::int64_t campaign) {
  return "slurm_estimate:" + std::to_string(campaign);
}

}  // namespace

void Actions::append(Actions other) {
  for (auto& a : other.submits) submits.push_back(std::move(a));
  for (auto& a : other.signals) signals.push_back(a);
  for (auto& a : other.cancels) cancels.push_back(a);
  for (auto& a : other.releases) releases.push_back(a);
  for (auto& a : other.estimates) estimates.push_back(std::move(a));
  for (auto& a : other.lookups) lookups.push_back(a);
}

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
  // On slurmctld's clock, as every Slurm time the segment is compared with (its first dump puts
  // Slurm's own stamp here).
  s.seg.submit_time = clock_.now() + controller_ahead_;
  // Where its output will be, should it run and be forgotten before a dump reports it.
  s.output_file = expected_output_file(e, s, job);
  e.unknown_since.erase(a.segment);
  if (e.refusals_for_now.erase(a.segment)) s.message.clear();
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
  if (error.refused_for_now() && !is_finished(e.rec.state)) {
    refused_for_now(e, s, error, now);
    return;
  }
  ++counters_.refused;
  s.submitting = false;
  s.message = error.what();
  e.unknown_since.erase(a.segment);
  e.refusals_for_now.erase(a.segment);
  if (s.seg.attempts <= max_retries(e) && !is_finished(e.rec.state)) {
    s.seg.state = SegmentState::kPlanned;
    e.retry_after[a.segment] = now + config_.retry_delay;
    store_.refuse_submission(a.campaign, s, error.what());
    spdlog::warn("campaign {} segment {}: Slurm refused the submission ({}); trying again in {}",
                 a.campaign, a.segment, error.what(), format_short_duration(config_.retry_delay));
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

// A submit limit reached, a controller too busy: waiting is all it takes, so no retry is spent
// (the campaign would fail while its predecessor runs well). The attempt's number is used again:
// no job was made under its tag by this try (a first try that went unanswered and makes its job
// late is followed when the segment is next submitted: queued_attempt). Tried again later and
// later, up to 16 retry delays apart.
void CampaignController::refused_for_now(Entry& e, SegmentRecord& s, const SlurmError& error,
                                         Seconds now) {
  const int k = s.seg.index;
  const int times = ++e.refusals_for_now[k];
  const Seconds wait = config_.retry_delay * (Seconds{1} << std::min(times - 1, 4));
  s.submitting = false;
  s.seg.state = SegmentState::kPlanned;
  e.unknown_since.erase(k);
  e.retry_after[k] = now + wait;
  s.message = "Slurm refuses submissions for now (" + std::string(error.what()) +
              "); trying again in " + format_short_duration(wait) + ", no retry spent (" +
              std::to_string(times) + (times == 1 ? " refusal" : " refusals in a row") + ")";
  const int attempt = s.seg.attempts--;
  store_.withdraw_submission(e.rec.spec.id, s, attempt);
  spdlog::warn("campaign {} segment {}: {}", e.rec.spec.id, k, s.message);
}

// A hand-off predecessor's signal or cancel taken at `now`: kept in the store (in `sent`), so that
// no later process sends it again. Not for another job of the segment (a stray's cancel), nor
// for one not committed (a segment sent again since).
void CampaignController::handoff_sent(std::int64_t campaign, int segment, JobId job,
                                      Seconds SegmentRecord::*committed,
                                      Seconds SegmentRecord::*sent) {
  auto it = entries_.find(campaign);
  if (it == entries_.end()) return;
  SegmentRecord& s = it->second->seg(segment);
  if (s.seg.slurm_job_id != job || s.*committed < 0 || s.*sent >= 0) return;
  s.*sent = clock_.now();
  save(*it->second, s);
}

void CampaignController::on_signalled(const SignalAction& a) {
  handoff_sent(a.campaign, a.segment, a.job, &SegmentRecord::signalled_at,
               &SegmentRecord::signal_sent_at);
}

void CampaignController::on_cancelled(const CancelAction& a) {
  handoff_sent(a.campaign, a.segment, a.job, &SegmentRecord::killed_at,
               &SegmentRecord::cancel_sent_at);
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
    return;
  }
  // Refused for good (the job not ours, or gone): sending it again would be refused the same, so
  // it counts as sent and the grace runs; the cancel after it ends a predecessor still running.
  on_signalled(a);
}

void CampaignController::on_cancel_failed(const CancelAction& a, const SlurmError& error) {
  auto it = entries_.find(a.campaign);
  if (it == entries_.end()) return;
  spdlog::warn("campaign {} segment {}: cancelling job {} failed: {}", a.campaign, a.segment, a.job,
               error.what());
  // Tried again at the next tick whatever the error: a cancel repeated is harmless (a job
  // already gone is no error), one given up leaves the job running beside the segment's.
  // A second job of the segment's tag, or the job of a segment that ended:
  if (it->second->strays_cancelled.count(a.job)) {
    it->second->strays_cancelled.erase(a.job);
    return;
  }
  // A hand-off predecessor past its grace:
  SegmentRecord& s = it->second->seg(a.segment);
  if (s.seg.slurm_job_id == a.job && s.killed_at >= 0 && !is_finished(it->second->rec.state)) {
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

namespace {

// One accounting search for every segment about to be submitted: the names they go by, since the
// earliest of their campaigns began. Jobs nullopt, with why, when accounting cannot say.
AccountedJobs search_earlier_runs(SlurmClient& client, const std::vector<SubmitAction>& submits) {
  AccountingSearch search;
  search.since = submits.front().earlier.since;
  for (const auto& a : submits) {
    search.since = std::min(search.since, a.earlier.since);
    if (std::find(search.names.begin(), search.names.end(), a.request.name) == search.names.end())
      search.names.push_back(a.request.name);
  }
  try {
    return client.search_accounting(search);
  } catch (const std::exception& e) {  // Slurm's, or another: the search is as good as unanswered
    return {std::nullopt, std::string("accounting did not answer: ") + e.what()};
  }
}

}  // namespace

namespace {

// Throws, as a transient failure of the call, when `may_act` says this process may act no more.
void check_may_act(const ActionGuard& may_act) {
  if (!may_act) return;
  if (const auto why = may_act())
    throw SlurmError("not sent: " + *why + " (another process may act on the store)", ENOLCK, true);
}

// What `call` threw, if anything. An error other than Slurm's (a file system error looking for
// earlier runs, memory) leaves unknown whether the action took effect: a transient error, settled
// as one is (a submission by its job's tag), and no action after it in the batch is dropped.
template <typename Call>
std::optional<SlurmError> error_of(Call&& call) {
  try {
    call();
  } catch (const SlurmError& e) {
    return e;
  } catch (const std::exception& e) {
    return SlurmError(std::string("unexpected error: ") + e.what(), EIO, true);
  }
  return std::nullopt;
}

}  // namespace

namespace {

std::vector<CancelNotTaken> perform(SlurmClient& client, const Actions& actions,
                                    const OutcomeDelivery& deliver, const ActionGuard& may_act) {
  std::vector<CancelNotTaken> not_cancelled;
  const AccountedJobs accounted =
      actions.submits.empty() ? AccountedJobs{} : search_earlier_runs(client, actions.submits);
  for (const auto& a : actions.submits) {
    EarlierRunAnswer earlier;
    auto error = error_of([&] {
      if (const auto tag = JobTag::parse(a.request.comment))
        earlier = find_earlier_run(a.earlier, *tag, a.request.name, accounted.jobs, accounted.why);
    });
    if (!error && earlier.run) {
      deliver([a, run = std::move(*earlier.run)](CampaignController& c) mutable {
        c.on_earlier_run(a, std::move(run));
      });
      continue;
    }
    JobId id = 0;
    if (!error) {
      deliver([a, unchecked = std::move(earlier.unchecked)](CampaignController& c) {
        c.on_earlier_runs_checked(a, unchecked);
      });
      error = error_of([&] {
        check_may_act(may_act);
        id = client.submit(a.request);
      });
    }
    if (error)
      deliver([a, e = *error](CampaignController& c) { c.on_submit_failed(a, e); });
    else
      deliver([a, id](CampaignController& c) { c.on_submitted(a, id); });
  }
  for (const auto& a : actions.signals) {
    if (const auto error = error_of([&] {
          check_may_act(may_act);
          client.signal_job(a.job, a.signo);
        }))
      deliver([a, e = *error](CampaignController& c) { c.on_signal_failed(a, e); });
    else
      deliver([a](CampaignController& c) { c.on_signalled(a); });
  }
  for (const auto& a : actions.cancels) {
    if (const auto error = error_of([&] {
          check_may_act(may_act);
          client.cancel_job(a.job);
        })) {
      not_cancelled.push_back({a, error->what()});
      deliver([a, e = *error](CampaignController& c) { c.on_cancel_failed(a, e); });
    } else {
      deliver([a](CampaignController& c) { c.on_cancelled(a); });
    }
  }
  for (const auto& a : actions.releases) {
    if (const auto error = error_of([&] {
          check_may_act(may_act);
          client.release_job(a.job);
        }))
      deliver([a, e = *error](CampaignController& c) { c.on_release_failed(a, e); });
  }
  if (!actions.lookups.empty()) {  // one question to accounting for every job gone unseen
    std::vector<JobId> jobs;
    for (const auto& a : actions.lookups) jobs.push_back(a.job);
    std::map<JobId, AccountedJob> answers;
    if (const auto error = error_of([&] { answers = client.accounted_jobs(jobs); })) {
      for (const auto& a : actions.lookups)
        deliver([a, e = *error](CampaignController& c) { c.on_accounting_failed(a, e); });
    } else {
      for (const auto& a : actions.lookups) {
        const auto it = answers.find(a.job);
        AccountedJob answer = it != answers.end() ? it->second : AccountedJob{};
        deliver([a, answer = std::move(answer)](CampaignController& c) mutable {
          c.on_accounted(a, std::move(answer));
        });
      }
    }
  }
  for (const auto& a : actions.estimates) {
    StartEstimate estimate;
    if (const auto error = error_of([&] { estimate = client.will_run(a.request); }))
      deliver([a, e = *error](CampaignController& c) { c.on_estimate_failed(a, e); });
    else
      deliver([a, estimate](CampaignController& c) { c.on_estimate(a, estimate); });
  }
  return not_cancelled;
}

OutcomeDelivery on_this_thread(CampaignController& controller) {
  return [&controller](const std::function<void(CampaignController&)>& outcome) {
    outcome(controller);
  };
}

}  // namespace

void perform_actions(SlurmClient& client, const Actions& actions, const OutcomeDelivery& deliver,
                     const ActionGuard& may_act) {
  perform(client, actions, deliver, may_act);
}

void perform_actions(CampaignController& controller, SlurmClient& client, const Actions& actions,
                     const ActionGuard& may_act) {
  perform(client, actions, on_this_thread(controller), may_act);
}

std::vector<CancelNotTaken> perform_actions_reporting(CampaignController& controller,
                                                      SlurmClient& client, const Actions& actions,
                                                      const ActionGuard& may_act) {
  return perform(client, actions, on_this_thread(controller), may_act);
}

}  // namespace mirage::daemon

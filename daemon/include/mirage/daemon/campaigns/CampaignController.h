#pragma once
// The campaign lifecycle and the decisions, as pure logic driven by ticks. It never calls Slurm:
// each tick takes the latest job list and returns the actions to perform (submit, signal,
// cancel); their outcomes come back through on_submitted / on_submit_failed. Every submission's
// intent is committed to the store before the action is returned, and every unresolved intent is
// settled by its tag in a later dump (adopt the job if it exists, submit again if it does not),
// which makes submissions exactly-once across crashes.
//
// Per campaign, each tick:
//   1. follow each submitted segment's job in the dump (pending -> running -> done / failed);
//   2. settle intents whose outcome is unknown (after a restart or a lost reply);
//   3. hand-off mode: once the successor runs, signal the predecessor, and cancel it after the
//      grace period after Slurm took the signal (either sent again, while it runs, until Slurm
//      has taken it);
//   4. the done file: once it exists and no segment runs, the campaign is done (a successor
//      still queued is cancelled);
//   5. submit: segment 0 at once; a later one when the policy says so (asked every decision
//      interval while the predecessor runs, inside the earliest-submission window), or at the
//      latest `fallback_lead` before the predecessor's limit or when it ends; a segment that
//      failed to start, or failed before its successor was submitted, is submitted again up to
//      max_retries times, after which the campaign fails. An open-ended campaign makes its next
//      segment when it submits it.
//      With the fallback chain, the successor is queued behind the running predecessor
//      (afterany) at once, so it runs when the predecessor ends even if mirage is gone; the
//      policy's decision (or the fallback lead) releases it early instead of submitting anew. A
//      chain whose segments fail one after another stops after max_retries + 1 of them, and
//      --max-hours caps the run time of all segments together.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "mirage/agents/PolicyRegistry.h"
#include "mirage/agents/WaitPredictor.h"
#include "mirage/core/FeatureEncoder.h"
#include "mirage/core/Policy.h"
#include "mirage/daemon/campaigns/DefaultPolicy.h"
#include "mirage/daemon/campaigns/EarlierRuns.h"
#include "mirage/daemon/campaigns/WaitCalibration.h"
#include "mirage/daemon/slurm/Clock.h"
#include "mirage/daemon/slurm/SegmentShape.h"
#include "mirage/daemon/slurm/SlurmClient.h"
#include "mirage/daemon/store/CampaignRecord.h"
#include "mirage/daemon/store/CampaignStore.h"

namespace mirage::daemon {

// mirage-train-gpt's --handoff-timeout default (training_jobs/src/TrainOptions.h): how long a
// hand-off successor waits for its predecessor unless told otherwise.
inline constexpr Seconds kTrainerHandoffWait = 15 * kMinute;

// How long a hand-off successor may wait for its predecessor's checkpoint directory: a tick to
// see it start (the signal), the grace, a tick to see the grace out (the cancel), and a minute
// for Slurm to kill the job (KillWait, 30 s by default) and its lock to go.
constexpr Seconds handoff_wait_needed(Seconds tick_interval, Seconds grace) {
  return 2 * tick_interval + grace + kMinute;
}

struct ControllerConfig {
  std::string partition;  // for campaigns that name none (empty: the cluster's default)
  std::string account;    // for campaigns that name none
  std::string default_policy = compiled_default_policy();
  // A risk frontier measured on the cluster's trace (RiskFrontier.h): where a campaign with a
  // budget of overlap (CampaignRequest::max_overlap) takes its policy from. Empty: none.
  std::string frontier_file;
  // The distribution of a successor's wait on the cluster (`mirage trace waits`), which the
  // `quantile` policy reads. Empty: none, and campaigns cannot ask for `quantile`.
  std::string wait_distribution_file;
  Seconds decision_interval = FeatureEncoder::kSpacing;
  // Guard rail: never submit a successor more than this before the predecessor's expected end
  // (start + time limit). 0: no limit.
  Seconds earliest_submission = 0;
  // The successor is submitted at the latest this long before the predecessor's limit runs out
  // (the `reactive` fallback), and in any case when the predecessor ends.
  Seconds fallback_lead = 60;
  int max_retries = 2;                  // further submissions of a segment that failed (the
                                        // default of campaigns that set none)
  Seconds retry_delay = 60;             // wait before submitting a refused segment again
  int max_campaigns_per_user = 100;     // guard rail: active + paused campaigns per owner
  int handoff_signal = 10;              // SIGUSR1 on Linux
  Seconds handoff_grace = 5 * kMinute;  // [handoff] grace: of campaigns that set none
  Seconds tick_interval = 30;           // [poll] interval: how often a pass sees the jobs
  // An intent whose outcome is unknown is submitted again only when its tag is missing from a
  // dump taken at least this long after the outcome became unknown (covers an RPC still being
  // processed by slurmctld when the daemon died).
  Seconds reconcile_delay = 5;
  std::uint32_t user_id = 0;  // jobs of other users never match a tag
  // The simulated cluster has no default time limit: a campaign must state one.
  bool time_limit_required = false;
  // Campaigns that do not say: keep the successor queued behind the running segment.
  bool fallback_chain = true;
  // A segment whose job left the queue unseen and whose fate nothing could tell: asked again
  // this often (accounting may come back, the output file may appear on a slow file system).
  Seconds fate_retry = 5 * kMinute;
};

struct SubmitAction {
  std::int64_t campaign = 0;
  int segment = 0;
  int attempt = 0;
  SubmitRequest request;
  // Asked of accounting (one search for all of a tick's submissions) and the output files just
  // before submitting: a run of the segment a restored store did not know is adopted instead.
  EarlierRunQuestion earlier;
};
struct SignalAction {
  std::int64_t campaign = 0;
  int segment = 0;
  JobId job = 0;
  int signo = 0;
};
struct CancelAction {
  std::int64_t campaign = 0;
  int segment = 0;
  JobId job = 0;
};
// Clears the dependency of a successor held behind its predecessor (the fallback chain).
struct ReleaseAction {
  std::int64_t campaign = 0;
  int segment = 0;
  JobId job = 0;
};
// Asks Slurm when the next segment, submitted (or, held behind its predecessor, released) now,
// would start (the will-run test): once per decision of a running campaign that waits.
struct EstimateAction {
  std::int64_t campaign = 0;
  int segment = 0;
  Seconds asked_at = 0;   // the decision that asked: the answer is as old as that
  SubmitRequest request;  // the segment's shape; no script
};
// Asks accounting how a segment's job ended: it left the queue while mirage was not looking.
struct LookupAction {
  std::int64_t campaign = 0;
  int segment = 0;
  int attempt = 0;
  JobId job = 0;
};
struct Actions {
  std::vector<SubmitAction> submits;
  std::vector<SignalAction> signals;
  std::vector<CancelAction> cancels;
  std::vector<ReleaseAction> releases;
  std::vector<EstimateAction> estimates;
  std::vector<LookupAction> lookups;
  bool empty() const {
    return submits.empty() && signals.empty() && cancels.empty() && releases.empty() &&
           estimates.empty() && lookups.empty();
  }
  void append(Actions other);
};

// What `mirage campaign add` asks for.
struct CampaignRequest {
  std::string name;
  std::string script;
  std::string script_path;  // names the script in messages
  int segments = 0;         // the most segments; 0: until a segment creates the done file
  ShapeFlags shape;         // what the script's #SBATCH lines do not decide
  std::optional<int> max_retries;
  std::optional<bool> fallback_chain;  // nullopt: the daemon's default
  double max_hours = 0;                // the most run time of all segments, in hours; 0: no cap
  std::string done_file;               // empty: the campaign's own beside the store
  std::string policy;                  // empty: the daemon's default
  // Instead of a policy: the most overlap per boundary the user accepts; the policy is the
  // frontier's point with the least interruption within it (ControllerConfig::frontier_file).
  std::optional<Seconds> max_overlap;
  OverlapMode overlap = OverlapMode::kConcurrent;
  std::optional<Seconds> handoff_grace;  // none: the daemon's [handoff] grace
  std::string work_dir;
  std::vector<std::string> environment;
  // False (`campaign add --no-export-env`): the segments get no environment of the add, as with
  // sbatch --export=NONE on the command line (over the script's --export line), and the daemon's
  // MIRAGE_* variables.
  bool export_environment = true;
  std::uint32_t owner_uid = 0;
  // Names this request: a retry with the same key (through the socket or the store) returns the
  // campaign the first one made instead of adding a second. Empty: none.
  std::string request_key;
  // A job of the user's already in the queue (one that carries a mirage tag no campaign owns, as
  // after a store was lost) taken back as the campaign's first segment instead of submitting
  // one. 0: none.
  JobId adopt_job = 0;
};

// A request the controller refuses, with a message for the user.
class RequestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using PolicyFactory = std::function<std::unique_ptr<Policy>(const PolicySpec&)>;

struct ControllerCounters {
  std::uint64_t ticks = 0;
  std::uint64_t decisions = 0;    // policy consultations
  std::uint64_t submissions = 0;  // submit actions issued (first tries and resubmissions)
  std::uint64_t adopted = 0;      // unresolved intents found in Slurm by their tag
  std::uint64_t resubmitted = 0;  // unresolved intents not found, submitted again
  std::uint64_t refused = 0;
  std::uint64_t handoff_signals = 0;
  std::uint64_t releases = 0;      // held successors released early
  std::uint64_t estimates = 0;     // will-run tests asked for
  std::uint64_t lookups = 0;       // segments' jobs asked of accounting after they left unseen
  std::uint64_t earlier_runs = 0;  // segments found run unseen (a restored store), not submitted
};

class CampaignController {
 public:
  // `factory` makes policies by name or model file (mirage::make_policy when empty).
  CampaignController(CampaignStore& store, const Clock& clock, ControllerConfig config,
                     PolicyFactory factory = {});
  ~CampaignController();

  // Loads every campaign from the store. Intents recorded by a previous run are unresolved:
  // the next dumps settle them.
  void load();

  // --- requests. Throw RequestError with a message for the user.
  // `notes` (when given) receives what the user should know: flags that override the script.
  const CampaignRecord& add(CampaignRequest request, std::vector<std::string>* notes = nullptr);
  const CampaignRecord& pause(std::int64_t id);
  const CampaignRecord& resume(std::int64_t id);
  // Marks the campaign cancelled and returns the cancellations of its queued or running jobs.
  Actions cancel(std::int64_t id);
  // The user's word on a segment whose fate could not be known: it ran (the campaign goes on
  // with the next segment) or it did not (it is submitted again).
  const CampaignRecord& settle(std::int64_t id, int segment, bool ran);
  const CampaignRecord* find(std::int64_t id) const;
  std::vector<const CampaignRecord*> campaigns() const;

  // --- the tick: the latest full job list (its dump taken at `dump_time`), the queue history
  // and the queue now.
  Actions tick(const std::vector<SlurmJob>& jobs, Seconds dump_time,
               const ObservationBuilder& history, const QueueSnapshot& now);

  // How far slurmctld's clock runs ahead of this machine's, as the latest dump measured it
  // (JobDump::controller_ahead): Slurm's submit times are compared with the daemon's intents on
  // Slurm's clock, so a login node whose clock runs minutes apart neither misses its own job nor
  // takes an older one for it.
  void observe_controller_clock(Seconds ahead) { controller_ahead_ = ahead; }
  // `mirage tick` from scrontab: passes come as often as scrontab runs it, not every
  // [poll] interval. A hand-off segment's wait (MIRAGE_HANDOFF_WAIT) is reckoned from the longer
  // of the two, at most a day, so that no successor gives up before its predecessor is signalled.
  void observe_tick_interval(Seconds seen) {
    config_.tick_interval = std::max(config_.tick_interval, std::min(seen, kDay));
  }
  // A time of this machine's clock on slurmctld's, which every time Slurm reports is on (starts,
  // ends, submit times, its estimates): what a decision compares with them, and the queue seen.
  Seconds on_controller_clock(Seconds local) const { return local + controller_ahead_; }

  // --- outcomes of the actions
  void on_submitted(const SubmitAction& action, JobId job);
  // Instead of submitting: the segment had already run, unseen by a store restored from an
  // earlier copy; the next tick adopts that run as the attempt (RestoredRuns.cpp).
  void on_earlier_run(const SubmitAction& action, EarlierRun run);
  // Before submitting: whether an earlier run could be looked for (`unchecked` empty) or why not,
  // which `campaign show` says.
  void on_earlier_runs_checked(const SubmitAction& action, const std::string& unchecked);
  void on_submit_failed(const SubmitAction& action, const SlurmError& error);
  // Slurm took a hand-off's signal (cancel): kept, so that no later process sends it again.
  void on_signalled(const SignalAction& action);
  void on_cancelled(const CancelAction& action);
  void on_signal_failed(const SignalAction& action, const SlurmError& error);
  void on_cancel_failed(const CancelAction& action, const SlurmError& error);
  void on_release_failed(const ReleaseAction& action, const SlurmError& error);
  // Slurm's estimate for the next segment, or why there is none; the next decision reads it.
  void on_estimate(const EstimateAction& action, const StartEstimate& estimate);
  void on_estimate_failed(const EstimateAction& action, const SlurmError& error);
  // What accounting said of a job that left unseen, or why it could not say; the next tick
  // settles the segment with it.
  void on_accounted(const LookupAction& action, AccountedJob answer);
  void on_accounting_failed(const LookupAction& action, const SlurmError& error);

  const ControllerCounters& counters() const { return counters_; }
  const ControllerConfig& config() const { return config_; }
  std::size_t in_flight() const;
  // Submissions whose outcome is unknown, to be settled by their tag in a later dump.
  std::size_t unresolved() const;
  // Segments whose job left the queue unseen and whose fate is not known yet.
  std::size_t fates_unknown() const;
  // Segments found run unseen whose adoption waits for the next tick.
  std::size_t earlier_runs_waiting() const;
  // What `quantile` reads, recalibrated on the user's recent jobs; null when none is configured
  // (or it could not be read).
  const CalibratedWaitPredictor* wait_predictor() const { return waits_.get(); }

 private:
  struct Entry;
  struct JobIndex;
  Entry& entry(std::int64_t id);
  void track(Entry& e, const JobIndex& index, Seconds dump_time, Seconds now, Actions& out);
  // Why segment `next` should go now (the fallback lead, or the policy's decision, asked once a
  // decision interval); nullopt while it should wait. Its predecessor runs.
  // Slurm's latest estimate for a campaign, kept in the store and read back on load.
  void keep_estimate(Entry& e);
  void restore_estimate(Entry& e);
  std::optional<std::string> successor_due(Entry& e, int next, Seconds now, Actions& out,
                                           const ObservationBuilder& history,
                                           const QueueSnapshot& queue);
  void release(Entry& e, SegmentRecord& s, Seconds now, Actions& out, const std::string& why);
  // Hours of run time the campaign has used, counting a running segment at its whole limit.
  double committed_hours(const Entry& e, Seconds now) const;
  void report_orphans(const JobIndex& index);
  bool adopted(JobId job) const;  // segment 0 of a campaign added with --adopt
  void settle_intents(Entry& e, const JobIndex& index, Seconds dump_time, Seconds now,
                      Actions& out);
  // The segment's submission is job `job`, found in the dump by its tag (or in accounting).
  void adopt_tagged(Entry& e, SegmentRecord& s, const SlurmJob& job, Seconds now, Actions& out);
  // What tells the segment's runs the store does not know from others (RestoredRuns.cpp).
  EarlierRunQuestion earlier_run_question(const Entry& e, const SegmentRecord& s) const;
  // The segment's submission is a run found before it was made: adopted as its attempt.
  void adopt_earlier_run(Entry& e, SegmentRecord& s, const EarlierRun& run, Seconds now,
                         Actions& out);
  // The latest attempt of `s` from `from_attempt` on that the current dump shows queued or
  // running, by its tag; nullptr when none (or outside a tick).
  const SlurmJob* queued_attempt(const Entry& e, const SegmentRecord& s, int from_attempt) const;
  void handoff(Entry& e, Seconds now, Actions& out);
  bool finish_if_done_file(Entry& e, Seconds now, Actions& out);
  int next_open_ended_segment(Entry& e, Seconds now);
  SegmentRecord& add_segment(Entry& e);
  void record_granted_shape(Entry& e, const SlurmJob& job);
  int max_retries(const Entry& e) const;
  // Cancels the segment's job, leaving it in `state` with `message` for `campaign show`.
  void cancel_segment(Entry& e, SegmentRecord& s, SegmentState state, const std::string& message,
                      Seconds now, Actions& out);
  void sweep_cancelled(Entry& e, Seconds now, Actions& out);
  void advance(Entry& e, Seconds now, const ObservationBuilder& history, const QueueSnapshot& queue,
               Actions& out);
  const SlurmJob* segment_job(Entry& e, SegmentRecord& s, const JobIndex& index);
  const SlurmJob* untagged_segment_job(Entry& e, const SegmentRecord& s, const JobIndex& index);
  const SlurmJob* untagged_submission(const Entry& e, const SegmentRecord& s,
                                      const JobIndex& index) const;
  // The jobs the segment's attempts were submitted as, from the intent log.
  std::vector<JobId> submitted_jobs(const Entry& e, const SegmentRecord& s) const;
  // A time of this machine's clock on slurmctld's, less what the measure may be off by: the
  // earliest Slurm can have stamped a job submitted after it. Negative (none) stays so.
  Seconds earliest_on_controller(Seconds local) const;
  // Queued or running jobs of the campaign's tags that no segment follows (a submission whose
  // reply was lost, created by slurmctld after its resubmission): cancelled, or followed instead
  // of a twin still pending, so that no segment runs twice.
  void cancel_strays(Entry& e, const JobIndex& index, Seconds now, Actions& out);
  const SegmentRecord* follower(const Entry& e, JobId job) const;
  bool successor_started(const Entry& e, const SegmentRecord& s) const;
  void adopt(CampaignRecord& rec, SegmentRecord& s, JobId job);
  // The segment's job is gone from the dump: how it ended is asked, never concluded from the
  // absence (SegmentFate.cpp).
  void settle_fate(Entry& e, SegmentRecord& s, Seconds now, Actions& out);
  void hold_unknown_fate(Entry& e, SegmentRecord& s, const std::string& why, Seconds now);
  void apply_job(Entry& e, SegmentRecord& s, const SlurmJob& job, Seconds now, Actions& out);
  void segment_failed(Entry& e, SegmentRecord& s, bool started, const std::string& why, Seconds now,
                      Actions& out);
  // `why`, in words, is kept with the submission for `campaign show`.
  // `after_any`: queued behind that job (the fallback chain); 0: free to start. True when a job
  // of the segment already queued (a late one, a restored store's) is followed instead.
  bool submit(Entry& e, SegmentRecord& s, Seconds now, Actions& out, bool again,
              const std::string& why, JobId after_any = 0);
  SubmitRequest make_request(const Entry& e, const SegmentRecord& s, const JobTag& tag) const;
  // The segment's output file, as its script and options name it, for job `job`.
  std::string expected_output_file(const Entry& e, const SegmentRecord& s, JobId job) const;
  // The output file of job `job` named `job_name`; empty, with `one_job_only`, where the pattern
  // does not name one job's file alone.
  std::string output_file_of(const Entry& e, const std::string& job_name, JobId job,
                             bool one_job_only) const;
  void finish(Entry& e, CampaignState state, const std::string& message, Seconds now);
  // Slurm refused the segment's submission only for a while: planned again, later, as it was.
  void refused_for_now(Entry& e, SegmentRecord& s, const SlurmError& error, Seconds now);
  // Slurm took the hand-off signal or cancel committed in `committed`: the time goes in `sent`.
  void handoff_sent(std::int64_t campaign, int segment, JobId job,
                    Seconds SegmentRecord::*committed, Seconds SegmentRecord::*sent);
  void save(const Entry& e, const SegmentRecord& s);
  // The wait the predictor states for the segment's job, which entered the queue now (submitted
  // free to start, or released from behind its predecessor), kept beside the decisions; and,
  // once it starts, the wait it got, which the calibration learns from (WaitTracking.cpp).
  void predict_wait(const Entry& e, const SegmentRecord& s, Seconds now,
                    const QueueSnapshot& queue);
  void wait_started(const Entry& e, const SegmentRecord& s);
  // The calibration from the store: every outcome of the predictor in use, in the order of their
  // starts, as a daemon that never stopped learned them (its state is the sequence's).
  void restore_calibration();
  // `partition`: where the campaign's successors go, which the wait predictor `quantile` reads
  // is asked for (WaitTracking.cpp).
  std::unique_ptr<Policy> make_policy_for(const PolicySpec& policy,
                                          const std::string& partition) const;
  // A campaign whose successors Slurm put in another partition than it asked for (the cluster's
  // default, named) decides by the wait predicted there from now on.
  void follow_granted_partition(Entry& e);

  CampaignStore& store_;
  const Clock& clock_;
  ControllerConfig config_;
  PolicyFactory factory_;
  // What `quantile` reads ([policy] wait_distribution), recalibrated on the user's recent jobs;
  // null when none could be read. `waits_digest_` names the file's contents in the store.
  std::shared_ptr<ClassWaitCalibration> calibration_;
  std::shared_ptr<const CalibratedWaitPredictor> waits_;
  // The latest outcome learned, by (start, campaign, segment): the order the store replays them
  // in; a start seen later than one after it is learned by replaying them all.
  std::tuple<Seconds, std::int64_t, int> learned_up_to_{kUnknownTime, 0, 0};
  std::string waits_digest_;
  std::map<std::int64_t, std::unique_ptr<Entry>> entries_;
  ControllerCounters counters_;
  bool orphans_reported_ = false;   // the first tick after load() reports them
  const JobIndex* dump_ = nullptr;  // the dump of the tick under way, by tag
  Seconds controller_ahead_ = 0;    // slurmctld's clock less this machine's, latest measured
};

// Performs the actions against `client`, one call each, and hands each outcome to `deliver`,
// which runs it on the controller: at once (`mirage tick`, tests), or posted to the controller's
// thread (the daemon performs on its Slurm thread).
using OutcomeDelivery = std::function<void(std::function<void(CampaignController&)>)>;
// Asked right before each call that changes something in Slurm (submit, signal, cancel, release):
// why this process may act no more (its store's lock file was deleted or replaced, so another
// process may act on the store), or nullopt. A call it stops is not made and its outcome is a
// transient failure: a submission's intent settles by its tag, as after a lost reply.
using ActionGuard = std::function<std::optional<std::string>()>;
void perform_actions(SlurmClient& client, const Actions& actions, const OutcomeDelivery& deliver,
                     const ActionGuard& may_act = {});
// The same with the controller on this thread.
void perform_actions(CampaignController& controller, SlurmClient& client, const Actions& actions,
                     const ActionGuard& may_act = {});

}  // namespace mirage::daemon

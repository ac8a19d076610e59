#pragma once
// An event-driven, deterministic Slurm-like scheduler simulator. Time jumps from event to event
// (arrivals, job ends, --begin times, scheduler passes); nothing ticks per second or per minute.
//
// What it models (docs/simulator.md): multifactor priority with age (counted from the moment a
// job becomes eligible, so frozen while a dependency or --begin holds it; capped at
// PriorityMaxAge) and job size; the main scheduler (priority order, stops at the first job that
// does not fit), run after every event; the backfill scheduler every bf_interval, planning with
// time limits (never true runtimes) at bf_resolution over bf_window, testing at most
// bf_max_job_test jobs, with EASY or Slurm-style reservations; whole-node or GPU-granular
// allocation; jobs end at min(runtime, time limit); afterany dependencies, --begin,
// cancellation and early termination (the hand-off signal); capacity held by work the log does
// not show, replayed as background jobs (HiddenWork.h).
//
// fork() copies the whole mutable state: the trace itself is shared and immutable, the per-job
// records are shared until written (SharedChunks.h), and the per-job outcome log is not carried
// into forks, so a fork costs O(jobs in the system).
#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "mirage/core/AvailabilityProfile.h"
#include "mirage/core/ClusterSpec.h"
#include "mirage/core/Job.h"
#include "mirage/core/QueueSnapshot.h"
#include "mirage/simulator/PerUser.h"
#include "mirage/simulator/SharedChunks.h"

namespace mirage {

// Index of a job inside one simulation: trace jobs are 0..trace_size-1 in submit order; the
// hidden work of the machine's capacity steps follows, then jobs submitted through
// Simulator::submit.
using SimJobIndex = std::uint32_t;

// A job as the simulator needs it. The runtime is the truth the scheduler never sees.
struct SimJobSpec {
  Seconds submit = 0;
  Seconds time_limit = 0;
  Seconds runtime = 0;  // true runtime; the job ends at min(runtime, time_limit)
  int nodes = 1;
  int gpus_per_node = 0;  // used in GPU-granular mode; 0 there means all GPUs of each node
  Seconds begin = 0;      // --begin: not eligible before this instant (0: no constraint)
  std::optional<SimJobIndex> after_any;  // --dependency=afterany:<job>
  // With after_any: submitted this long after that job ends (a user who submits the next job on
  // seeing the last one end), not at `submit`; -1: at `submit`, held until it ends.
  Seconds think = -1;
  std::uint32_t user = 0;  // for per-user limits; 0: unknown, never limited
};

// The user a chaining campaign's own jobs run as: a user of their own, under the same limits.
inline constexpr std::uint32_t kCampaignUser = 0xFFFFFFFE;

enum class SimJobState : std::uint8_t { kFuture, kPending, kRunning, kDone, kCancelled };

struct JobOutcome {
  SimJobIndex job = 0;
  Seconds start = kUnknownTime;
  Seconds end = kUnknownTime;
};

// Converts normalised trace jobs into simulator jobs (runtime from recorded start/end). Users
// are numbered 1, 2, ... in order of first appearance ("" is 0).
std::vector<SimJobSpec> to_sim_jobs(const std::vector<Job>& jobs);

class Simulator {
 public:
  // `jobs` must be sorted by submit time. Throws std::invalid_argument when a job cannot ever
  // fit the machine or has a non-positive size, naming the job.
  Simulator(ClusterSpec spec, std::shared_ptr<const std::vector<SimJobSpec>> jobs);

  // Processes every event with time <= t, then sets now() to t.
  void run_until(Seconds t);
  // Runs until no job is left pending or running and the trace is exhausted (hidden work aside).
  void run_to_completion();
  // Runs until `job` has started (or ended/cancelled), or until `deadline`; returns true if it
  // started.
  bool run_until_started(SimJobIndex job, Seconds deadline);

  Seconds now() const { return now_; }

  // Submits a job at now() (its submit field is overwritten with now()). Returns its index,
  // next_submit_index().
  SimJobIndex next_submit_index() const {
    return static_cast<SimJobIndex>(trace_->size() + hidden_->size() + extra_.size());
  }
  SimJobIndex submit(SimJobSpec spec);
  // Counts `units` (nodes, or GPUs on a GPU-granular machine) held by `user` without a break
  // until now, as fairshare would have recorded it (with decay, all the usage a steady user
  // carries): a campaign that ran for days before the replay began. No effect without fairshare.
  void add_steady_usage(std::uint32_t user, double units);
  // Cancels a pending job, or ends a running one now.
  void cancel(SimJobIndex job);
  // Makes a running job end at `at` (>= now) if that is before its natural end: the hand-off.
  void end_early(SimJobIndex job, Seconds at);
  // Clears a pending job's afterany dependency (`scontrol update dependency=`): it becomes
  // eligible now and accrues age from now. A job not held by a dependency is left as it is.
  void release_dependency(SimJobIndex job);

  SimJobState state(SimJobIndex job) const;
  Seconds start_time(SimJobIndex job) const;  // kUnknownTime until started
  // When job j entered the queue: its submit time, or for a job that follows another's end
  // (SimJobSpec::think), when the replay submitted it; kUnknownTime before that.
  Seconds submit_time(SimJobIndex j) const;
  // The wait of each of the first `count` jobs, from its submission in this replay to its start
  // (kUnknownTime where it did not start).
  std::vector<Seconds> waits(std::size_t count) const;
  Seconds end_time(SimJobIndex job) const;  // kUnknownTime until ended (expected end not given)

  QueueSnapshot snapshot() const;
  // The same without its pending and running jobs (their lists left empty), for readers of the
  // figures alone: costs nothing by the queue's length.
  QueueSnapshot snapshot_without_jobs() const;
  // One pending job as the snapshot shows it (its priority now, the age it has accrued, why it
  // waits); nothing when it is not pending. What a simulated Slurm reports of it.
  std::optional<PendingJobView> pending_view(SimJobIndex job) const;
  // Whether pending job `j` could start but for a weekly boundary its limit would run across:
  // slurmctld reports such a job as a recurring reservation holds it (ReqNodeNotAvail).
  bool held_by_boundary(SimJobIndex j) const;
  // Whether pending job `j` could start but for a down window (ClusterSpec::down): slurmctld
  // reports such a job as its partition being down (PartitionDown).
  bool held_by_down_window(SimJobIndex j) const;
  // The weekly boundaries to come within the queue forecast's horizon, as slurmctld lists a
  // recurring reservation of every node: each instant held for a second (a job may end at it or
  // start after it, not run across it). Empty without boundaries.
  std::vector<NodeReservation> boundary_reservations() const;
  // The priority a running job started with; kUnknownPriority when it does not run.
  double started_priority(SimJobIndex job) const;

  // A copy of the whole state that evolves independently; it does not record outcomes.
  Simulator fork() const;
  // When a job of `spec`, submitted now, would start among the running jobs alone, each running
  // to its time limit, on the capacity there is now: what Slurm's will-run test (`sbatch
  // --test-only`, job_start_data) plans, which leaves the pending queue and the limits out.
  // kUnknownTime when not within `horizon`.
  Seconds planned_start(SimJobSpec spec, Seconds horizon = 14 * kDay) const;

  // Outcomes of every job that has ended, in end order (only when recording; on by default),
  // hidden work left out.
  const std::vector<JobOutcome>& outcomes() const { return outcomes_; }
  void set_recording(bool on) { recording_ = on; }
  // For tests: a backfill pass proven to start nothing (Counters::backfill_passes_proven_idle)
  // runs whole all the same, and one that starts a job counts in backfill_idle_proofs_broken.
  void check_idle_proofs(bool on) { check_idle_proofs_ = on; }
  // For tests: each ranking that keeps the last one's jobs and rewrites only their priorities
  // (ranked_eligible) is compared with one made afresh, and one that differs counts in
  // kept_rankings_wrong.
  void check_kept_rankings(bool on) { check_kept_rankings_ = on; }

  const ClusterSpec& spec() const { return spec_; }
  const SimJobSpec& job(SimJobIndex j) const {  // in the header: every scheduling pass reads it
    if (j < trace_->size()) return (*trace_)[j];
    j -= static_cast<SimJobIndex>(trace_->size());
    return j < hidden_->size() ? (*hidden_)[j] : extra_[j - hidden_->size()];
  }
  std::size_t trace_size() const { return trace_->size(); }
  std::size_t pending_count() const;  // hidden work included
  std::size_t running_count() const { return running_.size(); }
  // Nodes held now by work the log does not show (the calibration's capacity steps, HiddenWork.h).
  int unavailable_nodes() const { return hidden_nodes_; }
  // Whether `j` is hidden work, not a job of the trace or one submitted.
  bool hidden(SimJobIndex j) const {
    return j >= trace_->size() && j < trace_->size() + hidden_->size();
  }

  // Counters, for benchmarks and tests.
  struct Counters {
    std::uint64_t events = 0;
    std::uint64_t main_passes = 0;
    std::uint64_t backfill_passes = 0;
    std::uint64_t backfill_starts = 0;
    // Passes left before ranking the queue: the plan proves none of its jobs can start now.
    std::uint64_t backfill_passes_proven_idle = 0;
    std::uint64_t backfill_idle_proofs_broken = 0;             // check_idle_proofs only
    std::uint64_t kept_rankings = 0, kept_rankings_wrong = 0;  // check_kept_rankings only
  };
  const Counters& counters() const { return counters_; }

 private:
  static constexpr Seconds kNever = INT64_MAX;
  struct RunningJob {
    SimJobIndex job;
    Seconds start;
    Seconds end;           // actual end: min(runtime, limit), or earlier when ended early
    Seconds expected_end;  // start + time limit: what the scheduler plans with
    std::vector<std::uint16_t> gpu_nodes;  // GPU-granular: the nodes it holds
    double priority = 0;                   // as it started
  };
  struct PerJob {
    SimJobState state = SimJobState::kFuture;
    // Jobs held by a dependency on this one (dependency_held_): its end looks for them only then.
    int held_behind = 0;
    Seconds submitted = kUnknownTime;
    Seconds start = kUnknownTime;
    Seconds end = kUnknownTime;
  };
  struct Ranked {  // a pending job as the schedulers order it
    SimJobIndex job;
    int nodes;           // held here, as the passes' counts of what fits read it for every job
    std::uint32_t user;  // likewise, for the limits
    double priority;
    Seconds submit;   // ties of priority: earlier first (held here: ordering reads no job spec)
    Seconds planned;  // its time limit as backfill plans it (rounded up to bf_resolution)
  };
  // A pending, eligible job with the moment it became eligible (age counts from there), and what
  // of its spec every pass reads, copied once: each pass ranks every eligible job.
  struct EligibleJob {
    SimJobIndex job;
    std::uint32_t user;
    Seconds since;
    Seconds submit;
    double size_part;  // the job-size factor's share of its priority (never changes)
    Seconds planned;   // its time limit as backfill plans it (rounded up to bf_resolution)
    int nodes;
    std::uint32_t slot;  // its user's in eligible_users_
  };
  // A user with eligible jobs, and the fairshare factor their priorities were last ranked with:
  // a ranking computes each user's factor once, and at the instant of a start only the jobs of
  // users whose factor moved are ranked again.
  struct EligibleUser {
    std::uint32_t user = 0;
    int jobs = 0;            // eligible jobs of this user; 0: a free slot
    double fairshare = 0;    // fairshare_of(user) at `factor_at` and `factor_version`
    double ranked_with = 0;  // the factor the ranking of this instant holds for their jobs
    Seconds factor_at = -1;  // -1: not computed since the slot was taken
    std::uint64_t factor_version = 0;
  };

  void process_events_at(Seconds t);
  void arrive(SimJobIndex j);
  void become_eligible_or_hold(SimJobIndex j);
  void complete(SimJobIndex j, SimJobState final_state);
  void note_runtime(Seconds limit, Seconds runtime);  // into the recent runtime shares
  void start_job(std::size_t eligible_pos, const std::vector<std::uint16_t>* nodes);
  void release(const RunningJob& r);
  Seconds planned_end(Seconds expected_end) const;  // as backfill plans it: bf_resolution
  void main_schedule();
  // Whole-node mode: whether the best job within its user's limits is sure not to fit the free
  // nodes, without ranking the queue: no job within its limits fits them (on a congested
  // machine, most passes), or the job that blocked the last main pass (main_blocker_) still waits
  // too big for them and outranks every job that fits (then only those few are ranked). Its
  // priority and theirs are what a ranking gives them: the pass starts what it would have.
  bool best_cannot_fit();
  void backfill_schedule();
  // Whole-node mode, with bf_.profile holding the running jobs' plan: whether a backfill pass is
  // sure to start nothing, before its queue is ranked. The job it tests first (the best within its
  // user's limits) does not fit now and reserves the plan's earliest start for it; every later
  // reservation only takes from the plan, so a job without room beside that one has none when
  // tested. `ranked`: the eligible jobs with their priorities (ranked_eligible).
  bool no_room_beside_the_top(const std::vector<Ranked>& ranked, Seconds latest_start);
  // The index in `ranked` of the best job its user's limits let start (the limits looked up only
  // for a job that would be the best), or ranked.size() where there is none: the main pass starts
  // it next, a backfill pass tests it first.
  std::size_t best_within_limits(const std::vector<Ranked>& ranked) const;
  // The start `place` (from a not-before time to the plan's earliest start) gives `j`, moved
  // past each down window ahead (bf_.down_ahead) it would start in and each boundary its limit
  // would run across, as a backfill pass plans a job.
  template <class Place>
  std::optional<Seconds> start_past_holds(SimJobIndex j, const Place& place) const;
  void mark_dirty(bool main_too);
  double priority_of(const SimJobSpec& s, Seconds eligible_since) const;
  // Makes `j` eligible now.
  void add_eligible(SimJobIndex j);
  // Takes the eligible job at `pos` out (the last one takes its place), and out of the ranking
  // made at this instant, which stays valid for the rest.
  void remove_eligible(std::size_t pos);
  void clear_eligible();
  std::uint32_t user_slot(std::uint32_t user);
  void release_user_slot(std::uint32_t slot);
  // The fairshare factor a priority of `user`'s adds (weighted by weight_fairshare): 0.5 for an
  // unknown user, 0 without fairshare.
  double fairshare_of(std::uint32_t user) const;
  // Every eligible user's factor now, into their slots (computed once for an instant and
  // share version).
  void refresh_user_factors();
  // One eligible user's factor now, into their slot where it is not there already: a check that
  // prices a few jobs need not compute every user's.
  double slot_factor(EligibleUser& u) {
    if (u.factor_at != priority_at() || u.factor_version != factor_version()) {
      u.fairshare = fairshare_of(u.user);
      u.factor_at = priority_at();
      u.factor_version = factor_version();
    }
    return u.fairshare;
  }
  // The instant the priorities in force were computed: now, or with a PriorityCalcPeriod the
  // start of the period now is in (periods on multiples of it, as backfill's ticks are).
  Seconds priority_at() const { return priority_at_; }
  // Moves the clock, and with it the instant of the priorities in force (a division saved on
  // every priority a pass reads).
  void set_now(Seconds t) {
    now_ = t;
    const Seconds period = spec_.scheduler.priority_calc_period;
    priority_at_ = period > 0 ? t - ((t % period) + period) % period : t;
  }
  // What changes the fairshare factors in force at priority_at(): every start and end, or, with
  // a PriorityCalcPeriod, nothing before the next period (a user's factor is computed when first
  // needed in a period and kept for it).
  std::uint64_t factor_version() const {
    return spec_.scheduler.priority_calc_period > 0 ? 0 : share_version_;
  }
  // An eligible job's priority now, from what it holds of its spec: the same figure.
  double eligible_priority(const EligibleJob& e) const {
    return priority_from(e, fairshare_of(e.user));
  }
  // PriorityParameters::score's sum, in its order, from what an eligible job holds and its
  // user's factor.
  double priority_from(const EligibleJob& e, double fairshare) const {
    return spec_.priority.age_part(priority_at() - e.since) + e.size_part +
           spec_.priority.weight_fairshare * fairshare;
  }
  double size_part(const SimJobSpec& s) const;
  // Every eligible job with its priority now, in eligible_'s order: computed once for an instant,
  // the shares and eligible_ as they are, so the backfill pass after a main pass that started
  // nothing ranks nothing again.
  const std::vector<Ranked>& ranked_eligible();
  // The same in priority order (in bf_.order): sorted from the last backfill pass's order.
  const std::vector<Ranked>& rank_in_order();
  PendingJobView pending_view(SimJobIndex j, PendingState state, Seconds accruing_since) const;
  // True when a should run before b: higher priority, then earlier submit, then lower index (in
  // the header, so that the sorts of the scheduling passes inline it).
  static bool before(const Ranked& a, const Ranked& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.submit != b.submit) return a.submit < b.submit;
    return a.job < b.job;
  }
  Seconds next_event_time() const;
  bool fits_now(const SimJobSpec& s) const;
  // Whether job `j` started at `start` would run across a weekly boundary (ClusterSpec's
  // boundaries, which hidden work ignores).
  bool runs_across_boundary(SimJobIndex j, Seconds start) const;
  std::optional<Seconds> next_boundary_after(Seconds t) const;
  // Whether `j` is pending, eligible and under its user's limits: only a boundary or a down
  // window can hold it (held_by_boundary, held_by_down_window).
  bool eligible_within_limits(SimJobIndex j) const;
  // The end of the down window (ClusterSpec::down) that holds `t`, in which no job starts.
  // Asked of every event and pass, each at now or later: found from a cursor, not searched for.
  std::optional<Seconds> down_until(Seconds t) const;
  // True when starting `s` now would break its user's limits, counting `extra` more jobs and
  // nodes of that user started in the same pass.
  bool over_user_limit(const SimJobSpec& s, int extra_jobs = 0, int extra_nodes = 0) const {
    return over_user_limit(s.user, s.nodes, extra_jobs, extra_nodes);
  }
  bool over_user_limit(std::uint32_t user, int job_nodes, int extra_jobs = 0,
                       int extra_nodes = 0) const {  // in the header: every pass asks, per job
    const UserLimits& l = spec_.user_limits;
    if (user == 0 || (l.max_running_jobs <= 0 && l.max_running_nodes <= 0)) return false;
    const UserUse* use = user_use_.find(user);
    const int jobs = (use ? use->jobs : 0) + extra_jobs;
    const int nodes = (use ? use->nodes : 0) + extra_nodes;
    return (l.max_running_jobs > 0 && jobs + 1 > l.max_running_jobs) ||
           (l.max_running_nodes > 0 && nodes + job_nodes > l.max_running_nodes);
  }
  int gpus_needed(const SimJobSpec& s) const;

  ClusterSpec spec_;
  std::shared_ptr<const std::vector<SimJobSpec>> trace_;
  std::shared_ptr<const std::vector<SimJobSpec>> hidden_;  // HiddenWork.h, in submit order
  std::vector<SimJobSpec> extra_;                          // jobs submitted through submit()
  Seconds now_ = 0;
  Seconds priority_at_ = 0;       // priority_at()
  std::size_t next_arrival_ = 0;  // cursor into *trace_
  std::size_t next_hidden_ = 0;   // cursor into *hidden_

  // Pending, eligible jobs.
  std::vector<EligibleJob> eligible_;
  std::vector<EligibleUser> eligible_users_;    // slots; those of 0 jobs are free
  std::vector<std::uint32_t> free_user_slots_;  // in eligible_users_
  PerUser<std::uint32_t> slot_of_user_;         // a user's slot in eligible_users_
  // The instant and share version eligible_users_' factors were refreshed at.
  Seconds factors_at_ = -1;
  std::uint64_t factors_version_ = 0;
  std::uint64_t eligible_changes_ = 0;  // counts every change to eligible_ (ranked_eligible)
  std::vector<std::pair<Seconds, SimJobIndex>> begin_heap_;  // held by --begin (min-heap)
  std::vector<SimJobIndex> dependency_held_;                 // held by afterany
  // Jobs that follow another's end (SimJobSpec::think): each (job followed, follower), sorted, and
  // the followers to submit, by when (min-heap).
  std::shared_ptr<const std::vector<std::pair<SimJobIndex, SimJobIndex>>> followers_;
  std::vector<std::pair<Seconds, SimJobIndex>> submit_heap_;
  std::vector<RunningJob> running_;  // min-heap by end
  // Every job: trace jobs, hidden work, then extra ones; shared with forks until written.
  SharedChunks<PerJob> state_;

  int free_nodes_ = 0;    // whole-node mode
  int hidden_nodes_ = 0;  // nodes held by running hidden work
  int hidden_live_ = 0;   // hidden jobs pending or running
  struct UserUse {
    int jobs = 0;
    int nodes = 0;
  };
  PerUser<UserUse> user_use_;  // running work per limited user
  // Fairshare. Usage is node-seconds (GPU-seconds when GPU-granular); decay is kept as growing
  // weights, 2^((t - usage_origin_) / half-life) for usage accrued at t, so that every user's
  // share of the total, all the factor needs, is exact without touching every user as time
  // passes.
  struct UserShare {
    double usage = 0;          // ended work, weighted
    double running = 0;        // units of running jobs
    double running_since = 0;  // sum of units x start of running jobs
    double factor = 1;         // cached for `factor_at`
    // The exponent `factor` is 2 to (NaN: none): the same again, at the next instant or after
    // a start at this one, is the same factor without computing it.
    double exponent = std::numeric_limits<double>::quiet_NaN();
    Seconds factor_at = -1;
    std::uint64_t factor_version = 0;
    // With a PriorityCalcPeriod: usage, running and running_since as they stood at the start of
    // the period they last changed in (`changed_in`, that period's priority_at()), so that a
    // factor is the period start's whoever asks for it and whenever (a snapshot, a pass).
    double usage_at_start = 0, running_at_start = 0, running_since_at_start = 0;
    Seconds changed_in = -1;
  };
  double fairshare_factor(std::uint32_t user) const;
  // With a PriorityCalcPeriod: `u`'s factor from the figures of the period's start.
  double period_start_factor(UserShare& u) const;
  // `user`'s share, made if it has none, about to change: with a PriorityCalcPeriod what it and
  // the totals were at the period's start is kept first.
  UserShare& changing_share(std::uint32_t user);
  // The totals and the count of users as they stood at the start of the period they last changed
  // in (totals_changed_in_), kept before they change (with a PriorityCalcPeriod only).
  void keep_period_start_totals();
  double usage_weight(Seconds t) const;
  void note_share(const SimJobSpec& s, Seconds start, bool starting);
  mutable PerUser<UserShare> shares_;
  // usage_weight(now_), for `weight_at_` and `weight_origin_`: every user's factor needs it.
  mutable double weight_now_ = 1;
  mutable Seconds weight_at_ = -1, weight_origin_ = -1;
  double total_usage_ = 0, total_running_ = 0, total_running_since_ = 0;
  double total_usage_at_start_ = 0, total_running_at_start_ = 0, total_running_since_at_start_ = 0;
  std::size_t users_at_start_ = 0;
  Seconds totals_changed_in_ = -1;
  Seconds usage_origin_ = 0;
  std::uint64_t share_version_ = 0;
  std::vector<std::uint16_t> free_gpus_;  // GPU-granular mode, per node
  // backfill_schedule's buffers, kept between passes and not copied by fork(): a fork plans
  // its own passes, and copying them would only cost it.
  struct BackfillScratch {
    std::vector<Ranked> order;
    std::vector<AvailabilityProfile::Holding> held;
    AvailabilityProfile profile{0, 1, 0};
    std::vector<int> least_free;  // the plan's least free nodes from now on: see backfill_schedule
    // ranked_eligible's, for the instant, share version and eligible_changes_ it was made at.
    std::vector<Ranked> ranked;
    std::vector<const EligibleJob*> fitting;  // best_cannot_fit's
    // A pass's own: the down windows ahead, the jobs to start, the jobs with room, the starts
    // per limited user, the placement of the job under test (GPU-granular).
    std::vector<DownWindow> down_ahead;
    std::vector<SimJobIndex> to_start;
    std::vector<Ranked> with_room;
    std::vector<std::pair<std::uint32_t, UserUse>> started_by;
    std::optional<Placement> placed;
    // rank_in_order's: the last pass's order (`order` the pass before), and per job 1 + its
    // place in the ranking (0: none).
    std::vector<Ranked> last_order;
    std::vector<std::uint32_t> slot_of;
    Seconds ranked_at = -1;
    std::uint64_t ranked_shares = 0, ranked_changes = 0;
    BackfillScratch() = default;
    BackfillScratch(const BackfillScratch&) {}
    BackfillScratch& operator=(const BackfillScratch&) { return *this; }
  };
  BackfillScratch bf_;
  // Whole-node mode: what each running job holds until its expected end rounded up to
  // bf_resolution, in order of those ends (kept as jobs start and end, so a pass sorts nothing).
  std::vector<AvailabilityProfile::Holding> planned_ends_;

  // down_until's cursor: the first window of spec_.down that ends after `down_asked_`, the
  // latest instant asked (an earlier one is searched for).
  mutable std::size_t down_next_ = 0;
  mutable Seconds down_asked_ = INT64_MIN;
  bool main_needed_ = false;  // something changed since the last main-scheduler pass
  // The best job of the last main pass that started nothing more (it did not fit, or would run
  // across a boundary): a hint for best_cannot_fit, checked again each time.
  SimJobIndex main_blocker_ = UINT32_MAX;
  bool dirty_ = false;  // something changed since the last backfill pass
  Seconds next_backfill_ = 0;
  Seconds last_backfill_ = INT64_MIN / 2;
  // Waits of the last QueueSnapshot::kRecentStarts started jobs (a ring), for snapshots.
  std::array<Seconds, QueueSnapshot::kRecentStarts> recent_waits_{};
  int recent_count_ = 0;
  int recent_pos_ = 0;
  Seconds recent_sum_ = 0;
  // Runtime / limit of the last QueueSnapshot::kRecentEnds jobs that ended (a ring).
  std::array<float, QueueSnapshot::kRecentEnds> recent_shares_{};
  int recent_ends_ = 0;
  int recent_end_pos_ = 0;
  bool recording_ = true;
  bool check_idle_proofs_ = false;
  bool check_kept_rankings_ = false;
  std::vector<JobOutcome> outcomes_;
  Counters counters_;
};

}  // namespace mirage

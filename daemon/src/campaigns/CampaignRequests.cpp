// What users ask of the controller: add a campaign (checked as sbatch and Slurm would check it,
// idempotent by its request key), pause, resume and cancel it.
#include <fmt/ranges.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "campaigns/CampaignEntry.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/agents/RiskFrontier.h"
#include "mirage/agents/WaitPredictor.h"
#include "mirage/core/Error.h"
#include "mirage/daemon/campaigns/CampaignController.h"
#include "mirage/daemon/campaigns/DefaultPolicy.h"
#include "mirage/daemon/campaigns/DoneFile.h"
#include "mirage/daemon/slurm/BatchScriptDirectives.h"
#include "mirage/daemon/slurm/JobEnvironment.h"
#include "mirage/daemon/slurm/SbatchSubmitter.h"
#include "store/PathChecks.h"

namespace mirage::daemon {
namespace {

// A frontier point's mean, written as every duration is for people ("1h45m").
std::string hours_text(double hours) {
  return format_short_duration(static_cast<Seconds>(std::llround(hours * kHour)));
}

// The names of the environment's sbatch input variables, in order: "SBATCH_QOS, SBATCH_GRES".
std::string sbatch_input_variables_of(const std::vector<std::string>& environment) {
  std::vector<std::string> names;
  for (const auto& e : environment)
    if (is_sbatch_input_variable(e)) names.push_back(e.substr(0, e.find('=')));
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

const CampaignRecord& CampaignController::add(CampaignRequest r, std::vector<std::string>* notes) {
  auto fail = [](const std::string& m) { throw RequestError(m); };
  // A retry of a request that was carried out (the reply was lost): the campaign it made.
  if (!r.request_key.empty())
    for (const auto& [id, e] : entries_)
      if (e->rec.request_key == r.request_key && e->rec.owner_uid == r.owner_uid) {
        if (notes)
          *notes = {"this request had already added campaign " + std::to_string(id) +
                    " (its reply was lost); nothing new was added"};
        spdlog::info("campaign {}: a retry of the request that added it; nothing added", id);
        return e->rec;
      }
  if (r.name.empty()) fail("name: a campaign needs a name");
  if (r.name.size() > 200) fail("name: longer than 200 characters");
  if (r.script.empty()) fail("script: the script is empty");
  if (r.segments < 0 || r.segments > kMaxSegments)
    fail("segments: expected 1 to " + std::to_string(kMaxSegments) +
         ", or none (until a segment creates the done file)");
  const ShapeFlags& f = r.shape;
  if (f.nodes && (*f.nodes < 1 || *f.nodes > 100000)) fail("nodes: expected 1 to 100000");
  if (f.gpus_per_node && (*f.gpus_per_node < 0 || *f.gpus_per_node > 1024))
    fail("gpus_per_node: expected 0 to 1024");
  if (f.time_limit && *f.time_limit < kMinute) fail("time_limit: expected at least one minute");
  if (r.max_retries && (*r.max_retries < 0 || *r.max_retries > 1000))
    fail("max_retries: expected 0 to 1000");
  if (r.handoff_grace && *r.handoff_grace < 0) fail("handoff_grace: expected 0 or more seconds");
  const Seconds grace = r.handoff_grace.value_or(config_.handoff_grace);
  if (r.max_hours != 0 && !(r.max_hours >= 1.0 / 60 && r.max_hours <= 24.0 * 365 * 10))
    fail("max_hours: expected 1 minute (0.0167) to 87600 hours, or 0 for no cap");
  // As sbatch reads it: a script sbatch would refuse, or a directive that does not parse, is
  // refused now rather than at the first submission.
  const std::string script_name = r.script_path.empty() ? "the script" : r.script_path;
  const BatchScriptDirectives directives = read_batch_directives(r.script, script_name);
  if (directives.error) fail(directives.error->what());
  // Each task of an array, or component of a heterogeneous job, is a job of the segment's tag:
  // all but one would be cancelled as strays; another cluster's job is never in this one's dump.
  if (const auto& d = directives.not_one_local_job)
    fail(InputError({script_name, d->line, "#SBATCH " + d->text},
                    "a campaign's segment is one job of this cluster: a job array, a "
                    "heterogeneous job or --clusters is refused (submit them on their own)")
             .what());
  // sbatch then exits 0 without a job id: the outcome is never settled, and the segment would be
  // submitted again every reconcile period.
  if (const auto& d = directives.submits_nothing)
    fail(InputError({script_name, d->line, "#SBATCH " + d->text},
                    "sbatch --" + d->value +
                        " submits no job (it only prints, and exits 0): a campaign's segment must "
                        "be a job; remove the line")
             .what());
  if (const auto& e = directives.short_option_with_equals) fail(e->what());
  // sbatch then blocks until the job ends: the daemon's call times out and the job id is lost.
  if (const auto& d = directives.waits_for_the_job)
    fail(InputError({script_name, d->line, "#SBATCH " + d->text},
                    "sbatch --wait does not return until the job ends: the daemon's sbatch call "
                    "would time out before it said the job id; remove the line")
             .what());
  // A held segment stays pending (JobHeldUser) with nothing to release it; a dependency is kept
  // on every retry and fallback, and once its job has left slurmctld sbatch refuses it.
  if (const auto& d = directives.held_or_dependent)
    fail(InputError({script_name, d->line, "#SBATCH " + d->text},
                    d->value == "hold"
                        ? "sbatch --hold submits the job held, and nothing would release it: "
                          "mirage orders the segments itself; remove the line"
                        : "sbatch --dependency would be kept on every segment and retry, and is "
                          "refused once its job has left the controller: mirage orders the "
                          "segments itself; for a job the training needs first (a preparation "
                          "job), add the campaign once that job has finished")
             .what());
  SegmentShape shape = resolve_segment_shape(f, directives, script_name);
  // sbatch is told --ignore-pbs (SbatchSubmitter::arguments): a ported script's #PBS lines would
  // otherwise make an array, a hold or a dependency of each segment. The first few are named.
  constexpr std::size_t kPbsLinesNamed = 5;
  const auto pbs = pbs_and_bsub_lines(r.script);
  for (std::size_t i = 0; i < pbs.size() && i < kPbsLinesNamed; ++i)
    shape.notes.push_back(fmt::format(
        "'{}' ({}:{}) is ignored: mirage submits with --ignore-pbs; say what the segments need "
        "in #SBATCH lines",
        escape_control(pbs[i].text.size() > 80 ? pbs[i].text.substr(0, 77) + "..." : pbs[i].text),
        script_name, pbs[i].line));
  if (pbs.size() > kPbsLinesNamed)
    shape.notes.push_back(
        fmt::format("{} more #PBS or #BSUB lines ({}:{} and after) are ignored too",
                    pbs.size() - kPbsLinesNamed, script_name, pbs[kPbsLinesNamed].line));
  // --no-export-env: nothing of the add's environment reaches sbatch or the job but the umask,
  // which sbatch passes on with --export=NONE too.
  if (!r.export_environment)
    std::erase_if(r.environment,
                  [](const std::string& e) { return e.rfind("SLURM_UMASK=", 0) != 0; });
  // Not refused: each segment is told the wait it needs (MIRAGE_HANDOFF_WAIT, make_request), at
  // each submission, so that no successor gives up before its predecessor is signalled; a script
  // that does not pass it on must wait that long of its own.
  if (const Seconds needed = handoff_wait_needed(config_.tick_interval, grace);
      r.overlap == OverlapMode::kHandoff && needed > kTrainerHandoffWait)
    shape.notes.push_back(fmt::format(
        "hand-off: a successor may wait {} for its predecessor ([poll] interval {} twice, "
        "--handoff-grace {}, a minute for Slurm's kill), over mirage-train-gpt's default "
        "--handoff-timeout of {}: each segment gets MIRAGE_HANDOFF_WAIT={}, which "
        "training_jobs/sbatch/gpt-segment.sbatch passes on; a script of your own must wait that "
        "long, or lower --handoff-grace or [poll] interval",
        format_short_duration(needed), format_short_duration(config_.tick_interval),
        format_short_duration(grace), format_short_duration(kTrainerHandoffWait), needed));
  // Refused, not dropped with a note: an account, QOS or reservation a site asks users to keep
  // in SBATCH_* would be lost silently (charged elsewhere, or every segment refused).
  if (const std::string found = sbatch_input_variables_of(r.environment); !found.empty())
    fail("environment: " + found +
         " set; sbatch reads them over the script's #SBATCH lines, so the segments would not "
         "be the job mirage plans: give them as flags or #SBATCH lines, or leave them out of "
         "this command (env -u NAME mirage campaign add ...)");
  // Added from inside a job (a segment adding the next campaign): that job's description would
  // reach each segment through --export=ALL where its own options set none, and srun there reads
  // some of it (SLURM_NTASKS, SLURM_MEM_PER_NODE, SLURM_CPUS_PER_TASK) as its own input.
  std::vector<std::string> dropped;
  const std::string outer_job = outer_job_of(r.environment);
  r.environment = without_outer_job_variables(std::move(r.environment), dropped);
  if (!dropped.empty())
    shape.notes.push_back(fmt::format(
        "environment: left out {}: Slurm set them for job {}, in which this command ran; each "
        "segment gets its own job's",
        fmt::join(dropped, ", "), outer_job));
  if (config_.time_limit_required && shape.time_limit <= 0)
    fail(
        "time_limit: the simulated cluster has no default time limit; give --time or an "
        "#SBATCH --time line");
  if (r.adopt_job < 0) fail("adopt_job: expected a job id");
  int owned = 0;
  for (const auto& [id, e] : entries_) {
    owned += e->rec.owner_uid == r.owner_uid && !is_finished(e->rec.state);
    if (r.adopt_job > 0 && !is_finished(e->rec.state))
      for (const auto& s : e->rec.segments)
        if (s.seg.slurm_job_id == r.adopt_job)
          fail("adopt_job: job " + std::to_string(r.adopt_job) + " is already segment " +
               std::to_string(s.seg.index) + " of campaign " + std::to_string(id));
  }
  if (owned >= config_.max_campaigns_per_user)
    fail("limit reached: user " + std::to_string(r.owner_uid) + " already has " +
         std::to_string(owned) + " active or paused campaigns (guard.max_campaigns_per_user = " +
         std::to_string(config_.max_campaigns_per_user) + ")");
  if (!r.done_file.empty()) {
    if (auto why = prepare_done_file(r.done_file)) fail("done_file: " + *why);
    // A campaign ends when its done file exists: two sharing one would both end when the first
    // finished, the other short of its training.
    for (const auto& [id, e] : entries_) {
      if (is_finished(e->rec.state) || e->rec.done_file.empty()) continue;
      if (r.done_file == e->rec.done_file || same_file(r.done_file, e->rec.done_file))
        fail("done_file: " + r.done_file + " is the done file of campaign " + std::to_string(id) +
             " '" + e->rec.spec.name + "', " + std::string(to_string(e->rec.state)) +
             ": the first to finish would end the other as done; name another file");
    }
  }

  if (r.max_overlap) {
    if (!r.policy.empty()) fail("give a policy or a max_overlap, not both");
    if (*r.max_overlap < 0) fail("max_overlap: expected 0 or more seconds");
    if (config_.frontier_file.empty())
      fail(
          "max_overlap: the daemon has no risk frontier to choose from ([policy] frontier in its "
          "config; `mirage eval --sweep-risk --save-frontier FILE` on the cluster's trace makes "
          "one)");
    RiskFrontier f;
    try {
      f = read_risk_frontier(config_.frontier_file);
    } catch (const InputError& ex) {
      fail(std::string("max_overlap: ") + ex.what());
    }
    const auto point = point_within(f, *r.max_overlap);
    if (!point) {
      const FrontierOperatingPoint& near = least_overlap_point(f);
      fail(fmt::format(
          "max_overlap: no point of the frontier ({}) overlaps {} or less per boundary; the "
          "closest is {} with {}",
          config_.frontier_file, format_short_duration(*r.max_overlap), near.policy,
          hours_text(near.mean_overlap_h)));
    }
    r.policy = point->policy;
    shape.notes.push_back(fmt::format(
        "policy {}: the risk frontier's least interruption within {} of overlap per boundary "
        "({} of interruption, {} of overlap on {}, {}-node chains)",
        point->policy, format_short_duration(*r.max_overlap),
        hours_text(point->mean_interruption_h), hours_text(point->mean_overlap_h), f.trace,
        f.chain_nodes));
  }

  // Neither a policy nor a budget of overlap: the default, and one line on why it is that one.
  if (r.policy.empty()) shape.notes.push_back(default_policy_note(config_.default_policy));
  auto e = std::make_unique<Entry>();
  const PolicySpec chosen(r.policy.empty() ? config_.default_policy : r.policy);
  try {
    e->policy =
        make_policy_for(chosen, shape.partition.empty() ? config_.partition : shape.partition);
  } catch (const InputError& ex) {
    fail("policy: " + ex.message());
  } catch (const std::exception& ex) {
    fail(std::string("policy: ") + ex.what());
  }
  if (waits_ && reads_wait_distribution(chosen))
    if (const auto why = waits_->chain_mismatch(shape.nodes))
      fail("policy: " + chosen.name + " reads " + config_.wait_distribution_file +
           ", which cannot serve this campaign: " + *why);
  // A second campaign under a name that one still runs is the same command run twice: it would
  // run the training beside itself, and the segments' job names (NAME-sK), by which accounting
  // finds the runs a restored store never recorded, would no longer tell the two apart.
  for (const auto& [other_id, other] : entries_)
    if (other->rec.spec.name == r.name && other->rec.owner_uid == r.owner_uid &&
        !is_finished(other->rec.state))
      fail("name: campaign " + std::to_string(other_id) + " '" + r.name + "' is " +
           std::string(to_string(other->rec.state)) +
           " under this name; cancel it first (`mirage campaign cancel " +
           std::to_string(other_id) + "`) or give another name");
  CampaignRecord& rec = e->rec;
  rec.spec.name = r.name;
  rec.spec.script = r.script;
  rec.spec.policy = r.policy.empty() ? config_.default_policy : r.policy;
  rec.spec.segment_count = r.segments;
  rec.spec.nodes = shape.nodes;
  rec.spec.gpus_per_node = shape.gpus_per_node;
  rec.spec.time_limit = shape.time_limit;
  // Neither the flags nor the script name one: the daemon's default goes with each submission.
  rec.spec.partition = shape.partition.empty() ? config_.partition : shape.partition;
  rec.account = shape.account.empty() ? config_.account : shape.account;
  rec.qos = shape.qos;
  rec.sbatch_options = std::move(shape.sbatch_options);
  // On sbatch's command line, over the script's --export line (SbatchSubmitter adds the daemon's
  // MIRAGE_* names to it).
  if (!r.export_environment) rec.sbatch_options.push_back("--export=NONE");
  rec.spec.overlap = r.overlap;
  rec.spec.handoff_grace = grace;
  rec.script_path = r.script_path;
  rec.owner_uid = r.owner_uid;
  rec.max_retries = r.max_retries.value_or(config_.max_retries);
  rec.fallback_chain = r.fallback_chain.value_or(config_.fallback_chain);
  rec.max_hours = r.max_hours;
  rec.done_file = r.done_file;
  rec.work_dir = r.work_dir;
  rec.environment = std::move(r.environment);
  rec.state = CampaignState::kActive;
  rec.created = clock_.now();
  rec.request_key = r.request_key;
  {
    CampaignStore::Batch batch(store_);
    store_.add_campaign(rec);
    if (rec.done_file.empty()) {  // named after the id: known once the row exists
      rec.done_file = default_done_file(store_.path(), store_.store_id(), rec.spec.id);
      if (auto why = prepare_done_file(rec.done_file)) fail("done_file: " + *why);
      store_.save_done_file(rec);
    }
    if (r.adopt_job > 0) adopt(rec, rec.segments.front(), r.adopt_job);
    batch.commit();
  }
  for (const auto& note : shape.notes) spdlog::info("campaign {}: {}", rec.spec.id, note);
  spdlog::info(
      "campaign {} '{}' added: {} segments of {} node(s) x {} GPU(s), limit {}, policy {}, {}",
      rec.spec.id, rec.spec.name,
      rec.open_ended() ? std::string("open-ended") : std::to_string(rec.spec.segment_count),
      rec.spec.nodes, rec.spec.gpus_per_node,
      rec.spec.time_limit > 0 ? format_short_duration(rec.spec.time_limit) : "the partition's",
      rec.spec.policy, to_string(rec.spec.overlap));
  if (notes) *notes = std::move(shape.notes);
  const std::int64_t id = rec.spec.id;
  auto& ref = *e;
  entries_[id] = std::move(e);
  return ref.rec;
}

const CampaignRecord& CampaignController::pause(std::int64_t id) {
  Entry& e = entry(id);
  if (e.rec.state == CampaignState::kPaused) return e.rec;
  if (e.rec.state != CampaignState::kActive)
    throw RequestError("campaign " + std::to_string(id) + " is " +
                       std::string(to_string(e.rec.state)) + ": only an active one can be paused");
  e.rec.state = CampaignState::kPaused;
  store_.save_campaign_state(e.rec);
  spdlog::info("campaign {} paused", id);
  return e.rec;
}

const CampaignRecord& CampaignController::resume(std::int64_t id) {
  Entry& e = entry(id);
  if (e.rec.state == CampaignState::kActive) return e.rec;
  if (e.rec.state != CampaignState::kPaused)
    throw RequestError("campaign " + std::to_string(id) + " is " +
                       std::string(to_string(e.rec.state)) + ": only a paused one can be resumed");
  e.rec.state = CampaignState::kActive;
  e.next_decision = 0;
  store_.save_campaign_state(e.rec);
  spdlog::info("campaign {} resumed", id);
  return e.rec;
}

Actions CampaignController::cancel(std::int64_t id) {
  Entry& e = entry(id);
  if (is_finished(e.rec.state))
    throw RequestError("campaign " + std::to_string(id) + " is already " +
                       std::string(to_string(e.rec.state)));
  Actions out;
  const Seconds now = clock_.now();
  CampaignStore::Batch batch(store_);
  finish(e, CampaignState::kCancelled, "cancelled by the user", now);
  sweep_cancelled(e, now, out);
  batch.commit();
  return out;
}

void CampaignController::cancel_segment(Entry& e, SegmentRecord& s, SegmentState state,
                                        const std::string& message, Seconds now, Actions& out) {
  out.cancels.push_back({e.rec.spec.id, s.seg.index, s.seg.slurm_job_id});
  // Its job still live in this dump is not a rerun of the segment it ended (cancel_strays).
  e.strays_cancelled.insert(s.seg.slurm_job_id);
  s.seg.state = state;
  s.seg.end_time = now;
  s.message = message;
  save(e, s);
}

void CampaignController::sweep_cancelled(Entry& e, Seconds now, Actions& out) {
  for (auto& s : e.rec.segments) {
    if (s.seg.slurm_job_id <= 0 || s.submitting) continue;
    if (s.seg.state != SegmentState::kPending && s.seg.state != SegmentState::kRunning) continue;
    cancel_segment(e, s, SegmentState::kFailed, "cancelled with the campaign", now, out);
  }
}

// The job becomes segment 0 as if submitted now: followed by the tag it carries (read from the
// first dump that shows it), its fate asked as any segment's should it be gone.
void CampaignController::adopt(CampaignRecord& rec, SegmentRecord& s, JobId job) {
  s.seg.attempts = 1;
  s.submitting = true;
  s.intent_time = clock_.now();
  const JobTag tag = attempt_tag(store_.store_id(), rec, s);
  store_.begin_submission(
      rec.spec.id, s, tag,
      "adopted: job " + std::to_string(job) + " was in the queue already (campaign add --adopt)");
  s.submitting = false;
  s.seg.slurm_job_id = job;
  s.seg.state = SegmentState::kPending;
  s.seg.submit_time = clock_.now();
  s.adopted_tag = SegmentRecord::kTagUnread;
  store_.finish_submission(rec.spec.id, s, job);
}

}  // namespace mirage::daemon

#include "mirage/agents/Episode.h"

#include <algorithm>
#include <cstdlib>

namespace mirage {

bool EpisodeResult::truncated() const {
  return std::any_of(boundaries.begin(), boundaries.end(),
                     [](const BoundaryOutcome& b) { return b.truncated; });
}

SimJobSpec segment_job(const ChainSpec& chain) {
  SimJobSpec s;
  s.nodes = chain.nodes;
  s.gpus_per_node = chain.gpus_per_node;
  s.time_limit = chain.time_limit;
  s.runtime = chain.runtime;
  s.user = kCampaignUser;  // its user's limits and fairshare hold it as they hold anyone's
  return s;
}

namespace {

// Advances `e` until `job` starts or `until`, taking a snapshot at every grid instant passed
// (`observed`: a later decision reads them). Returns true if the job started.
bool wait_for_start(EpisodeStart& e, SimJobIndex job, Seconds until, Seconds interval,
                    bool observed = true) {
  if (!observed) return e.sim.run_until_started(job, until);
  while (true) {
    const Seconds stop = std::min(e.next_snapshot, until);
    if (e.sim.run_until_started(job, stop)) return true;
    if (e.sim.now() < stop) e.sim.run_until(stop);
    if (stop == e.next_snapshot) {
      e.history.add(e.sim.snapshot());
      e.next_snapshot += interval;
    }
    if (stop >= until) return false;
  }
}

// Advances `e` to `until`, taking a snapshot at every grid instant before it: what a segment
// starting at `until` in the logged world leaves the next decision to read.
void observe_until(EpisodeStart& e, Seconds until, Seconds interval) {
  while (e.next_snapshot < until) {
    e.sim.run_until(e.next_snapshot);
    e.history.add(e.sim.snapshot());
    e.next_snapshot += interval;
  }
  if (e.sim.now() < until) e.sim.run_until(until);
}

// A segment submitted at `submit` starts, in the logged world, when the log's real jobs of its
// shape say; none where too few were near.
std::optional<Seconds> logged_start(const LoggedWaits& waits, Seconds submit) {
  const auto wait = waits.wait_at(submit);
  if (!wait) return std::nullopt;
  return submit + *wait;
}

}  // namespace

bool PolicyDecider::submit_now(const Simulator& sim, const Observation& obs, SimJobIndex, Seconds) {
  if (!policy_.reads_slurm_estimate()) return policy_.decide(obs).action == Action::kSubmitNow;
  Observation with = obs;
  CampaignView& c = with.campaign;
  SimJobSpec s;
  s.nodes = c.successor_nodes;
  s.gpus_per_node = c.successor_gpus_per_node;
  s.time_limit = c.successor_limit;
  const Seconds start = sim.planned_start(s);
  c.slurm_estimated_wait = start == kUnknownTime ? -1 : start - sim.now();
  return policy_.decide(with).action == Action::kSubmitNow;
}

bool OracleDecider::submit_now(const Simulator& sim, const Observation&, SimJobIndex,
                               Seconds fallback_time) {
  if (chosen_ < 0) {
    // Try each decision instant from now on, plus the fallback, each on its own fork (or, in the
    // logged world, against the log's waits).
    const SimJobSpec succ = segment_job(config_.chain);
    std::optional<Simulator> probe;
    if (!config_.logged_waits) probe.emplace(sim.fork());
    Seconds best_abs = -1;
    Seconds predecessor_end = fallback_time + config_.reactive_lead;
    const Seconds deadline = fallback_time + config_.max_wait + config_.reactive_lead;
    std::vector<Seconds> candidates;
    for (Seconds c = sim.now(); c < fallback_time; c += config_.decision_interval)
      candidates.push_back(c);
    candidates.push_back(fallback_time);
    for (Seconds c : candidates) {
      Seconds start = deadline;
      if (config_.logged_waits) {
        // The logged world's wait function needs no fork; an instant it has no figure for is no
        // candidate.
        const auto logged = logged_start(*config_.logged_waits, c);
        if (!logged) continue;
        start = std::min(*logged, deadline);
      } else {
        probe->run_until(c);
        Simulator what_if = probe->fork();
        const SimJobIndex s = what_if.submit(succ);
        what_if.run_until_started(s, deadline);
        if (what_if.state(s) != SimJobState::kPending) start = what_if.start_time(s);
      }
      const Seconds gap = start - predecessor_end;
      tried_.push_back({boundary_, c, gap});
      // Ties go to the later submission: the same gap for less time in the queue.
      if (best_abs < 0 || std::llabs(gap) <= best_abs) {
        best_abs = std::llabs(gap);
        chosen_ = c;
      }
    }
    if (chosen_ < 0) chosen_ = fallback_time;  // no instant had a logged wait
  }
  return sim.now() >= chosen_;
}

EpisodeResult run_episode(EpisodeStart e, Decider& decider, const EpisodeConfig& config) {
  EpisodeResult result;
  result.sample_time = e.sample_time;
  const ChainSpec& chain = config.chain;
  const Seconds interval = config.decision_interval;
  const SimJobSpec seg = segment_job(chain);
  if (!decider.reads_window()) e.history.drop_window();
  // The campaign has held its nodes for days already: fairshare ranks it as the heavy user it is.
  e.sim.add_steady_usage(
      kCampaignUser,
      static_cast<double>(seg.nodes) *
          (e.sim.spec().allocation == AllocationMode::kGpuGranular
               ? (seg.gpus_per_node > 0 ? seg.gpus_per_node : e.sim.spec().gpus_per_node)
               : 1));

  std::optional<CampaignLedger> ledger;
  if (config.campaign.active())
    ledger.emplace(config.campaign, std::min(seg.runtime, seg.time_limit));
  // A whole campaign goes on until its work is done; twice the segments it needs at the least
  // is a bound for one that keeps losing its segments to overlap (it ends incomplete).
  const int segments = ledger ? 2 * config.campaign.segments_needed(chain) + 1 : chain.segments;
  const auto finish = [&] {
    if (ledger) result.campaign = ledger->outcome();
    return result;
  };

  // In the logged world the chain's segments are no jobs of the simulator: the log's waits start
  // them, and the replay goes on as the log's own jobs make it.
  const LoggedWaits* logged = config.logged_waits;
  SimJobIndex pred = 0;
  Seconds pred_submit = e.sim.now();
  std::optional<Seconds> pred_start;
  if (logged) {
    const auto start = logged_start(*logged, pred_submit);
    if (!start) {
      result.lacks_logged_wait = true;
      return finish();
    }
    if (*start <= e.deadline) {
      observe_until(e, *start, interval);
      pred_start = *start;
    }
  } else {
    pred = e.sim.submit(seg);
    if (wait_for_start(e, pred, e.deadline, interval)) pred_start = e.sim.start_time(pred);
  }
  if (!pred_start) {
    // Censored before its first boundary: no successor was submitted; every instant is the
    // cut-off, so no row has a start before its submission.
    BoundaryOutcome b;
    b.predecessor_submit = pred_submit;
    b.truncated = true;
    b.predecessor_waiting = true;
    b.predecessor_start = b.predecessor_end = e.deadline;
    b.successor_submit = b.successor_start = std::max(e.deadline, pred_submit);
    result.boundaries.push_back(b);
    return finish();
  }
  std::optional<Seconds> pred_stopped_previous;  // when the segment before `pred` stopped
  for (int k = 0; k + 1 < segments; ++k) {
    BoundaryOutcome b;
    b.predecessor_submit = pred_submit;
    b.predecessor_start = *pred_start;
    b.predecessor_end = b.predecessor_start + std::min(seg.runtime, seg.time_limit);
    if (ledger) {
      if (const auto done = ledger->started(b.predecessor_start, pred_stopped_previous)) {
        // This segment finishes the work: it ends then, and no boundary follows.
        if (!logged) e.sim.end_early(pred, *done);
        ledger->finished(*done);
        break;
      }
    }
    const Seconds fallback =
        std::max(b.predecessor_start, b.predecessor_end - config.reactive_lead);
    decider.begin_boundary();

    CampaignView view = CampaignView::running_chain(seg.nodes, seg.gpus_per_node, seg.time_limit,
                                                    b.predecessor_start - pred_submit, 0);
    view.predecessor_priority = logged ? kUnknownPriority : e.sim.started_priority(pred);

    bool submitted = false;
    while (e.next_snapshot < fallback) {
      e.sim.run_until(e.next_snapshot);
      e.history.add(e.sim.snapshot());
      e.next_snapshot += interval;
      view.predecessor_run = e.sim.now() - b.predecessor_start;
      const Observation obs = e.history.build(view);
      if (decider.submit_now(e.sim, obs, pred, fallback)) {
        submitted = true;
        break;
      }
    }
    // The loop leaves next_snapshot at the first decision instant at or after the fallback.
    if (!submitted)
      e.sim.run_until(config.fallback_at_decision ? std::max(fallback, e.next_snapshot) : fallback);
    b.successor_submit = e.sim.now();
    // A whole campaign waits as long as it takes (its user cannot give up on a segment); only the
    // end of the log cuts it off. max_wait then only sizes the trace a start time needs.
    const Seconds cutoff =
        ledger ? e.deadline : std::min(e.deadline, b.predecessor_end + config.max_wait);
    // After the last boundary no decision follows: its wait needs no snapshots (on a congested
    // cluster, a day of them was most of an episode's time).
    const bool observed = ledger || k + 2 < segments;
    SimJobIndex succ = 0;
    std::optional<Seconds> succ_start;
    if (logged) {
      const auto start = logged_start(*logged, b.successor_submit);
      if (!start) {
        result.lacks_logged_wait = true;
        break;
      }
      if (*start <= cutoff) {
        if (observed) observe_until(e, *start, interval);
        succ_start = *start;
      }
    } else {
      succ = e.sim.submit(seg);
      if (wait_for_start(e, succ, cutoff, interval, observed)) succ_start = e.sim.start_time(succ);
    }
    if (succ_start) {
      b.successor_start = *succ_start;
    } else {
      // Censored: waiting still at the cut-off, which a successor submitted past the log's end
      // (its predecessor started late) already passed.
      b.successor_start = std::max(cutoff, b.successor_submit);
      b.truncated = true;
    }
    const bool cut = chain.overlap == OverlapMode::kHandoff &&
                     b.successor_start + chain.handoff_grace < b.predecessor_end && !b.truncated;
    if (cut && !logged) e.sim.end_early(pred, b.successor_start + chain.handoff_grace);
    if (ledger) {
      const Seconds stop = cut ? b.successor_start + chain.handoff_grace : b.predecessor_end;
      ledger->stopped(stop, cut);
      ledger->add_boundary(b.interruption(), b.overlap(chain));
      pred_stopped_previous = stop;
    }
    result.boundaries.push_back(b);
    if (b.truncated) break;
    pred = succ;
    pred_start = b.successor_start;
    pred_submit = b.successor_submit;
  }
  return finish();
}

}  // namespace mirage

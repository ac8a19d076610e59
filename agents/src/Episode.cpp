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
      e.history.add(e.take_snapshot());
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
    e.history.add(e.take_snapshot());
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

namespace {

// An episode under way, as its steps leave it: copied where deciders that shared its start part.
struct EpisodeRun {
  explicit EpisodeRun(EpisodeStart start) : e(std::move(start)) {}
  EpisodeStart e;
  EpisodeResult result;
  std::optional<CampaignLedger> ledger;
  int segments = 0;
  SimJobIndex pred = 0;
  Seconds pred_submit = 0;
  std::optional<Seconds> pred_start;
  std::optional<Seconds> pred_stopped_previous;  // when the segment before `pred` stopped
  int k = 0;                                     // the boundary under way
  BoundaryOutcome b;
  Seconds fallback = 0;
  CampaignView view;

  EpisodeResult finish() {
    if (ledger) result.campaign = ledger->outcome();
    return std::move(result);
  }
};

// Up to the predecessor's start. False where the episode ends there (censored, or no logged
// wait).
bool begin_episode(EpisodeRun& r, const EpisodeConfig& config) {
  EpisodeStart& e = r.e;
  r.result.sample_time = e.sample_time;
  const ChainSpec& chain = config.chain;
  const SimJobSpec seg = segment_job(chain);
  // The campaign has held its nodes for days already: fairshare ranks it as the heavy user it is.
  e.sim.add_steady_usage(
      kCampaignUser,
      static_cast<double>(seg.nodes) *
          (e.sim.spec().allocation == AllocationMode::kGpuGranular
               ? (seg.gpus_per_node > 0 ? seg.gpus_per_node : e.sim.spec().gpus_per_node)
               : 1));
  if (config.campaign.active())
    r.ledger.emplace(config.campaign, std::min(seg.runtime, seg.time_limit));
  // A whole campaign goes on until its work is done; twice the segments it needs at the least
  // is a bound for one that keeps losing its segments to overlap (it ends incomplete).
  r.segments = r.ledger ? 2 * config.campaign.segments_needed(chain) + 1 : chain.segments;

  // In the logged world the chain's segments are no jobs of the simulator: the log's waits start
  // them, and the replay goes on as the log's own jobs make it.
  const LoggedWaits* logged = config.logged_waits;
  r.pred_submit = e.sim.now();
  if (logged) {
    const auto start = logged_start(*logged, r.pred_submit);
    if (!start) {
      r.result.lacks_logged_wait = true;
      return false;
    }
    if (*start <= e.deadline) {
      observe_until(e, *start, config.decision_interval);
      r.pred_start = *start;
    }
  } else {
    r.pred = e.sim.submit(seg);
    if (wait_for_start(e, r.pred, e.deadline, config.decision_interval))
      r.pred_start = e.sim.start_time(r.pred);
  }
  if (!r.pred_start) {
    // Censored before its first boundary: no successor was submitted; every instant is the
    // cut-off, so no row has a start before its submission.
    BoundaryOutcome b;
    b.predecessor_submit = r.pred_submit;
    b.truncated = true;
    b.predecessor_waiting = true;
    b.predecessor_start = b.predecessor_end = e.deadline;
    b.successor_submit = b.successor_start = std::max(e.deadline, r.pred_submit);
    r.result.boundaries.push_back(b);
    return false;
  }
  return true;
}

// The boundary r.k, up to its first decision. False where the episode ends (no boundary left,
// or the campaign's work is done).
bool open_boundary(EpisodeRun& r, const EpisodeConfig& config) {
  if (r.k + 1 >= r.segments) return false;
  const SimJobSpec seg = segment_job(config.chain);
  BoundaryOutcome& b = r.b;
  b = BoundaryOutcome{};
  b.predecessor_submit = r.pred_submit;
  b.predecessor_start = *r.pred_start;
  b.predecessor_end = b.predecessor_start + std::min(seg.runtime, seg.time_limit);
  if (r.ledger) {
    if (const auto done = r.ledger->started(b.predecessor_start, r.pred_stopped_previous)) {
      // This segment finishes the work: it ends then, and no boundary follows.
      if (!config.logged_waits) r.e.sim.end_early(r.pred, *done);
      r.ledger->finished(*done);
      return false;
    }
  }
  r.fallback = std::max(b.predecessor_start, b.predecessor_end - config.reactive_lead);
  r.view = CampaignView::running_chain(seg.nodes, seg.gpus_per_node, seg.time_limit,
                                       b.predecessor_start - r.pred_submit, 0);
  r.view.predecessor_priority =
      config.logged_waits ? kUnknownPriority : r.e.sim.started_priority(r.pred);
  return true;
}

// The next decision instant before the fallback, with what it shows; none when there is none.
std::optional<Observation> next_decision(EpisodeRun& r, const EpisodeConfig& config) {
  EpisodeStart& e = r.e;
  if (e.next_snapshot >= r.fallback) return std::nullopt;
  e.sim.run_until(e.next_snapshot);
  e.history.add(e.take_snapshot());
  e.next_snapshot += config.decision_interval;
  r.view.predecessor_run = e.sim.now() - r.b.predecessor_start;
  return e.history.build(r.view);
}

// The boundary's successor, submitted now (`submitted`: a decision said so) or at the fallback,
// until it starts. False where the episode ends (censored).
bool close_boundary(EpisodeRun& r, bool submitted, const EpisodeConfig& config) {
  EpisodeStart& e = r.e;
  BoundaryOutcome& b = r.b;
  const ChainSpec& chain = config.chain;
  const Seconds interval = config.decision_interval;
  const LoggedWaits* logged = config.logged_waits;
  // The decisions leave next_snapshot at the first decision instant at or after the fallback.
  if (!submitted)
    e.sim.run_until(config.fallback_at_decision ? std::max(r.fallback, e.next_snapshot)
                                                : r.fallback);
  b.successor_submit = e.sim.now();
  // A whole campaign waits as long as it takes (its user cannot give up on a segment); only the
  // end of the log cuts it off. max_wait then only sizes the trace a start time needs.
  const Seconds cutoff =
      r.ledger ? e.deadline : std::min(e.deadline, b.predecessor_end + config.max_wait);
  // After the last boundary no decision follows: its wait needs no snapshots (on a congested
  // cluster, a day of them was most of an episode's time).
  const bool observed = r.ledger || r.k + 2 < r.segments;
  SimJobIndex succ = 0;
  std::optional<Seconds> succ_start;
  if (logged) {
    const auto start = logged_start(*logged, b.successor_submit);
    if (!start) {
      r.result.lacks_logged_wait = true;
      return false;
    }
    if (*start <= cutoff) {
      if (observed) observe_until(e, *start, interval);
      succ_start = *start;
    }
  } else {
    succ = e.sim.submit(segment_job(chain));
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
  if (cut && !logged) e.sim.end_early(r.pred, b.successor_start + chain.handoff_grace);
  if (r.ledger) {
    const Seconds stop = cut ? b.successor_start + chain.handoff_grace : b.predecessor_end;
    r.ledger->stopped(stop, cut);
    r.ledger->add_boundary(b.interruption(), b.overlap(chain));
    r.pred_stopped_previous = stop;
  }
  r.result.boundaries.push_back(b);
  if (b.truncated) return false;
  r.pred = succ;
  r.pred_start = b.successor_start;
  r.pred_submit = b.successor_submit;
  ++r.k;
  return true;
}

// Asks `decider` at every decision instant of the boundary under way, then closes it.
bool decide_boundary(EpisodeRun& r, Decider& decider, const EpisodeConfig& config) {
  bool submitted = false;
  while (const auto obs = next_decision(r, config))
    if (decider.submit_now(r.e.sim, *obs, r.pred, r.fallback)) {
      submitted = true;
      break;
    }
  return close_boundary(r, submitted, config);
}

// The episode from the boundary under way on, with `decider` alone.
EpisodeResult finish_alone(EpisodeRun& r, Decider& decider, const EpisodeConfig& config) {
  while (open_boundary(r, config)) {
    decider.begin_boundary();
    if (!decide_boundary(r, decider, config)) break;
  }
  return r.finish();
}

}  // namespace

EpisodeResult run_episode(EpisodeStart e, Decider& decider, const EpisodeConfig& config) {
  if (!decider.reads_window()) e.history.drop_window();
  e.lists_queue = decider.reads_queue();
  EpisodeRun r{std::move(e)};
  if (!begin_episode(r, config)) return r.finish();
  return finish_alone(r, decider, config);
}

std::vector<EpisodeResult> run_episodes(EpisodeStart e, const std::vector<Decider*>& deciders,
                                        const EpisodeConfig& config) {
  std::vector<EpisodeResult> results(deciders.size());
  if (deciders.empty()) return results;
  const bool any_reads_window = std::any_of(deciders.begin(), deciders.end(),
                                            [](const Decider* d) { return d->reads_window(); });
  if (!any_reads_window) e.history.drop_window();
  e.lists_queue = std::any_of(deciders.begin(), deciders.end(),
                              [](const Decider* d) { return d->reads_queue(); });
  EpisodeRun shared{std::move(e)};
  // Where the deciders part: a copy of the shared run, the window dropped where this decider
  // does not read it (as run_episode drops it: the same observations from here on), and the
  // queue's jobs no longer listed where it does not read them.
  const auto own_copy = [&](std::size_t i) {
    EpisodeRun r = shared;
    if (!deciders[i]->reads_window()) r.e.history.drop_window();
    r.e.lists_queue = deciders[i]->reads_queue();
    return r;
  };
  if (!begin_episode(shared, config) || !open_boundary(shared, config)) {
    const EpisodeResult ended = shared.finish();
    std::fill(results.begin(), results.end(), ended);
    return results;
  }
  // The first boundary's decisions, each asked of every decider still waiting; one that submits
  // goes on alone from a copy.
  std::vector<std::size_t> waiting;
  for (std::size_t i = 0; i < deciders.size(); ++i) {
    deciders[i]->begin_boundary();
    waiting.push_back(i);
  }
  while (!waiting.empty()) {
    const auto obs = next_decision(shared, config);
    if (!obs) break;
    std::optional<Observation> without_window;
    std::erase_if(waiting, [&](std::size_t i) {
      Decider& d = *deciders[i];
      const Observation* seen = &*obs;
      if (any_reads_window && !d.reads_window()) {
        if (!without_window) {
          without_window = *obs;
          without_window->window.clear();
        }
        seen = &*without_window;
      }
      if (!d.submit_now(shared.e.sim, *seen, shared.pred, shared.fallback)) return false;
      EpisodeRun r = own_copy(i);
      if (close_boundary(r, true, config))
        results[i] = finish_alone(r, d, config);
      else
        results[i] = r.finish();
      return true;
    });
  }
  // The rest reached the fallback without submitting: each goes on alone from there.
  for (std::size_t n = 0; n < waiting.size(); ++n) {
    const std::size_t i = waiting[n];
    EpisodeRun r = n + 1 < waiting.size() ? own_copy(i) : std::move(shared);
    if (n + 1 == waiting.size() && !deciders[i]->reads_window()) r.e.history.drop_window();
    if (n + 1 == waiting.size()) r.e.lists_queue = deciders[i]->reads_queue();
    results[i] =
        close_boundary(r, false, config) ? finish_alone(r, *deciders[i], config) : r.finish();
  }
  return results;
}

}  // namespace mirage

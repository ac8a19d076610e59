#include "mirage/agents/ReactiveWhatIf.h"

#include <algorithm>
#include <limits>
#include <map>

#include "SampleTasks.h"
#include "mirage/agents/Evaluation.h"
#include "mirage/simulator/Fidelity.h"
#include "mirage/simulator/SimulationSummary.h"

namespace mirage {
namespace {

struct WaitStats {
  double mean = 0, median = 0, over_1h = 0;
};

WaitStats stats_of(std::vector<double> waits) {
  WaitStats s;
  if (waits.empty()) return s;
  double sum = 0, over = 0;
  for (double w : waits) {
    sum += w;
    over += w > kHour ? 1 : 0;
  }
  const auto n = static_cast<double>(waits.size());
  s.mean = sum / n;
  s.over_1h = over / n;
  s.median = quantile(waits, 0.5);
  return s;
}

bool in_window(const Job& j, Seconds from, Seconds to) {
  return (from <= 0 || j.submit >= from) && (to <= 0 || j.submit < to);
}

// A real job like a successor of `config`: its size, a time limit at least half the segment's (a
// short job backfills where a segment cannot), and a recorded start.
bool of_its_kind(const Job& j, const ReactiveWhatIfConfig& config) {
  return j.nodes == config.nodes && j.started() && 2 * j.time_limit >= config.time_limit;
}

// A successor's submission and its simulated wait.
struct SimulatedWait {
  Seconds submit = 0;
  double wait = 0;
};

// The real jobs of a successor's kind, by submission, and the lone ones among them (`behind`:
// queued_behind_own).
struct RealJobs {
  std::vector<std::pair<Seconds, double>> all, lone;  // (submit, wait), by submit
};
RealJobs real_jobs_of_kind(const Trace& trace, const ReactiveWhatIfConfig& config,
                           const std::vector<char>& behind) {
  RealJobs r;
  for (std::size_t i = 0; i < trace.jobs.size(); ++i) {
    const Job& j = trace.jobs[i];
    if (!of_its_kind(j, config)) continue;
    r.all.emplace_back(j.submit, static_cast<double>(j.wait()));
    if (!j.user.empty() && !behind[i]) r.lone.emplace_back(j.submit, static_cast<double>(j.wait()));
  }
  std::sort(r.all.begin(), r.all.end());
  std::sort(r.lone.begin(), r.lone.end());
  return r;
}

// Each successor held against the real jobs submitted within `near` of it, every successor
// weighing the same: over months, the real jobs crowd into the busy weeks while the successors
// are spread evenly, and the pooled real waits would answer for a mix of moments the successors
// were not submitted at. Successors with no real job near them are left out of both sides.
struct MatchedWaits {
  WaitStats sim, real;
  std::size_t successors = 0;  // those with real jobs near them
  std::size_t real_jobs = 0;   // the real jobs near any of them
};
MatchedWaits match_near(const std::vector<SimulatedWait>& successors,
                        const std::vector<std::pair<Seconds, double>>& real, Seconds near) {
  MatchedWaits m;
  std::vector<double> sim;
  std::vector<std::pair<double, double>> weighted;  // (real wait, weight)
  std::size_t counted_to = 0;                       // real[0, counted_to) already counted
  std::vector<SimulatedWait> by_submit = successors;
  std::sort(by_submit.begin(), by_submit.end(),
            [](const SimulatedWait& a, const SimulatedWait& b) { return a.submit < b.submit; });
  for (const SimulatedWait& s : by_submit) {
    const auto lo = std::lower_bound(real.begin(), real.end(),
                                     std::pair<Seconds, double>{s.submit - near, -1.0});
    const auto hi = std::upper_bound(
        real.begin(), real.end(),
        std::pair<Seconds, double>{s.submit + near, std::numeric_limits<double>::max()});
    if (lo == hi) continue;
    sim.push_back(s.wait);
    const double w = 1.0 / static_cast<double>(hi - lo);
    for (auto it = lo; it != hi; ++it) weighted.emplace_back(it->second, w);
    const auto first = static_cast<std::size_t>(lo - real.begin());
    const auto end = static_cast<std::size_t>(hi - real.begin());
    m.real_jobs += end - std::max(first, std::min(counted_to, end));
    counted_to = std::max(counted_to, end);
  }
  m.successors = sim.size();
  if (sim.empty()) return m;
  m.sim = stats_of(std::move(sim));
  const auto n = static_cast<double>(m.successors);
  std::sort(weighted.begin(), weighted.end());
  // The weighted median, halfway between two waits where the weight splits evenly between them,
  // as the simulated side's median is between its two middle waits.
  const double half = n / 2, tolerance = 1e-9 * n;
  double cumulative = 0;
  bool median_found = false;
  for (std::size_t k = 0; k < weighted.size(); ++k) {
    const auto [wait, w] = weighted[k];
    m.real.mean += w * wait / n;
    m.real.over_1h += wait > kHour ? w / n : 0;
    cumulative += w;
    if (!median_found && cumulative >= half - tolerance) {
      const bool even_split = cumulative <= half + tolerance && k + 1 < weighted.size();
      m.real.median = even_split ? (wait + weighted[k + 1].first) / 2 : wait;
      median_found = true;
    }
  }
  return m;
}

struct Successor {
  bool ran = false;
  bool truncated = false;
  Seconds submit = 0, wait = 0;
};

struct ChainedLog {
  std::vector<Successor> successors;
  std::size_t dropped = 0;  // too near the log's end for a successor's whole allowance
};

// The log's own jobs of the what-if's size (those the log saw start: load it had), each followed
// by a reactive successor of its user. A successor the log's end would cut short is left out,
// not counted at the cut: the longest waits are the ones the end would cut.
ChainedLog chain_log_jobs(const Trace& trace, const ClusterSpec& cluster,
                          const ReactiveWhatIfConfig& config, const EpisodeConfig& episode) {
  EpisodeStarts starts(trace, cluster, episode, EpisodeStartMode::kForkReplay);
  ChainedLog chained;
  std::vector<std::size_t> candidates;
  for (std::size_t i = 0; i < trace.jobs.size(); ++i) {
    const Job& j = trace.jobs[i];
    if (!of_its_kind(j, config) || !in_window(j, config.from, config.to)) continue;
    if (j.submit + j.time_limit + episode.max_wait > starts.trace_end())
      ++chained.dropped;
    else
      candidates.push_back(i);
  }
  std::vector<std::size_t> picked;
  const std::size_t n = candidates.size(), m = std::min(n, config.log_predecessors);
  for (std::size_t k = 0; k < m; ++k) picked.push_back(candidates[k * n / m]);
  std::vector<Seconds> times;
  for (std::size_t i : picked) times.push_back(trace.jobs[i].submit);
  std::vector<Successor> out(picked.size());
  for_each_sample_task(
      starts, times, 1, config.threads,
      [&](std::size_t s, std::size_t, const EpisodeStart& start) {
        const auto pred = starts.replayed(picked[s]);
        if (!pred) return;
        Simulator sim = start.sim.fork();
        if (!sim.run_until_started(*pred, start.deadline)) return;
        const SimJobSpec& p = sim.job(*pred);
        const Seconds end = sim.start_time(*pred) + std::min(p.runtime, p.time_limit);
        const Seconds submit = std::max(sim.now(), end - episode.reactive_lead);
        if (submit >= start.deadline) return;
        sim.run_until(submit);
        SimJobSpec successor = segment_job(episode.chain);
        successor.user = p.user;  // its user's limits and fairshare standing hold it
        const SimJobIndex k = sim.submit(successor);
        const Seconds cutoff = std::min(start.deadline, end + episode.max_wait);
        Successor& o = out[s];
        o.submit = sim.now();
        o.truncated = !sim.run_until_started(k, cutoff);
        if (o.truncated && cutoff < end + episode.max_wait) return;  // the log ended first
        o.ran = true;
        o.wait = (o.truncated ? cutoff : sim.start_time(k)) - o.submit;
      },
      {});
  for (const Successor& o : out) {
    if (o.ran)
      chained.successors.push_back(o);
    else
      ++chained.dropped;
  }
  return chained;
}

}  // namespace

std::vector<int> typical_chain_sizes(const std::vector<Job>& jobs, Seconds from, Seconds to) {
  std::map<int, std::size_t> count;
  for (const Job& j : jobs)
    if (in_window(j, from, to)) ++count[j.nodes];
  std::map<int, std::pair<std::size_t, int>> best;  // class -> (jobs, nodes)
  for (const auto& [nodes, n] : count) {
    const int cls = nodes == 1 ? 1 : nodes < 8 ? 2 : 8;
    auto& b = best[cls];
    if (n > b.first) b = {n, nodes};
  }
  std::vector<int> sizes;
  for (const auto& [cls, b] : best) sizes.push_back(b.second);
  return sizes;
}

Seconds long_time_limit(const std::vector<Job>& jobs, int nodes, Seconds from, Seconds to) {
  std::vector<double> limits;
  for (const Job& j : jobs)
    if (j.nodes == nodes && j.time_limit > 0 && in_window(j, from, to))
      limits.push_back(static_cast<double>(j.time_limit));
  return static_cast<Seconds>(quantile(limits, 0.9));
}

ReactiveWhatIf check_reactive_what_if(const Trace& trace, const ClusterSpec& cluster,
                                      const ReactiveWhatIfConfig& config) {
  EvalConfig eval;
  eval.cluster = cluster;
  eval.episode.chain.nodes = config.nodes;
  eval.episode.chain.gpus_per_node = config.gpus_per_node;
  eval.episode.chain.segments = 2;
  eval.episode.chain.time_limit = eval.episode.chain.runtime = config.time_limit;
  eval.from = config.from;
  eval.to = config.to;
  eval.every = config.every;
  eval.threads = config.threads;
  const EvalReport report = evaluate(trace, eval);

  ReactiveWhatIf r;
  r.nodes = config.nodes;
  r.time_limit = config.time_limit;
  std::vector<SimulatedWait> successors;
  for (const SampleOutcome& s : report.outcomes.at("reactive"))
    for (const BoundaryOutcome& b : s.episode.boundaries) {
      successors.push_back(
          {b.successor_submit, static_cast<double>(b.successor_start - b.successor_submit)});
      r.truncated += b.truncated ? 1 : 0;
    }
  r.successors = successors.size();
  if (successors.empty()) return r;

  const RealJobs real = real_jobs_of_kind(trace, config, queued_behind_own(trace.jobs));
  const MatchedWaits all = match_near(successors, real.all, config.near);
  r.compared = all.successors;
  r.real_jobs = all.real_jobs;
  r.sim_mean_wait_s = all.sim.mean;
  r.sim_median_wait_s = all.sim.median;
  r.sim_over_1h = all.sim.over_1h;
  r.real_mean_wait_s = all.real.mean;
  r.real_median_wait_s = all.real.median;
  r.real_over_1h = all.real.over_1h;
  r.ratio = r.real_jobs > 0 && all.real.mean > 0 ? all.sim.mean / all.real.mean : 0;
  const MatchedWaits lone = match_near(successors, real.lone, config.near);
  r.lone_jobs = lone.real_jobs;
  r.lone_mean_wait_s = lone.real.mean;
  r.lone_median_wait_s = lone.real.median;
  r.lone_ratio = r.lone_jobs > 0 && lone.real.mean > 0 ? lone.sim.mean / lone.real.mean : 0;

  if (config.log_predecessors == 0) return r;
  const ChainedLog chained = chain_log_jobs(trace, cluster, config, eval.episode);
  r.log_successors = chained.successors.size();
  r.log_dropped = chained.dropped;
  if (chained.successors.empty()) return r;
  std::vector<SimulatedWait> log_successors;
  for (const Successor& o : chained.successors) {
    log_successors.push_back({o.submit, static_cast<double>(o.wait)});
    r.log_truncated += o.truncated ? 1 : 0;
  }
  const MatchedWaits log = match_near(log_successors, real.all, config.near);
  r.log_compared = log.successors;
  r.log_real_jobs = log.real_jobs;
  r.log_sim_mean_wait_s = log.sim.mean;
  r.log_sim_median_wait_s = log.sim.median;
  r.log_sim_over_1h = log.sim.over_1h;
  r.log_real_mean_wait_s = log.real.mean;
  r.log_ratio = r.log_real_jobs > 0 && log.real.mean > 0 ? log.sim.mean / log.real.mean : 0;
  return r;
}

}  // namespace mirage

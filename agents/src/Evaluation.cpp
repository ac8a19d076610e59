#include "mirage/agents/Evaluation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>

#include "SampleTasks.h"
#include "mirage/agents/EpisodeStarts.h"
#include "mirage/agents/PolicyRegistry.h"

namespace mirage {
namespace {

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// A sample's load, by reactive's interruption on the boundaries it finished. A chain whose first
// segment had not started by the cut-off met the heaviest load; one cut off later is heavy when
// what it had waited by then says so, else of unknown load (counted overall only).
std::string sample_bucket(const EpisodeResult& e) {
  double finished = 0, bound = 0;
  std::size_t n = 0;
  for (const auto& b : e.boundaries) {
    if (b.predecessor_waiting) return "heavy";
    if (b.truncated) {
      bound = std::max(bound, static_cast<double>(b.interruption()));
      continue;
    }
    finished += static_cast<double>(b.interruption());
    ++n;
  }
  if (n > 0) return load_bucket(static_cast<Seconds>(finished / static_cast<double>(n)));
  if (bound > 12 * kHour) return "heavy";
  return "unknown";
}

// The policies evaluated, in order: reactive first (it sets the buckets), then the others once.
std::vector<std::string> evaluated_policies(const EvalConfig& config) {
  std::vector<std::string> policies = {"reactive"};
  for (const auto& p : config.policies)
    if (std::find(policies.begin(), policies.end(), p) == policies.end()) policies.push_back(p);
  return policies;
}

// Buckets, censored count, metrics, same-decision notes and campaign costs from the outcomes.
void summarise(EvalReport& report, const EvalConfig& config) {
  const std::vector<std::string> policies = evaluated_policies(config);
  report.truncated = 0;
  report.metrics.clear();
  report.decides_as.clear();
  // Buckets come from reactive's interruption on the same sample.
  const auto& reactive = report.outcomes.at("reactive");
  for (auto& [name, outs] : report.outcomes)
    for (std::size_t i = 0; i < outs.size(); ++i) {
      outs[i].bucket = sample_bucket(reactive[i].episode);
      if (name == "reactive" && outs[i].episode.truncated()) ++report.truncated;
    }
  for (const auto& [name, outs] : report.outcomes)
    report.metrics[name] = compute_metrics(outs, reactive, config.episode.chain);
  for (std::size_t i = 1; i < policies.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (same_decisions(report.outcomes.at(policies[i]), report.outcomes.at(policies[j]))) {
        report.decides_as[policies[i]] = policies[j];
        break;
      }
  if (config.episode.campaign.active()) {
    const ChainSpec& chain = config.episode.chain;
    const int per_node =
        chain.gpus_per_node > 0 ? chain.gpus_per_node : config.cluster.gpus_per_node;
    report.gpus_known = per_node > 0;
    report.gpus_per_segment = chain.nodes * std::max(1, per_node);
    report.campaign = compute_campaign_metrics(report.outcomes, config.episode.campaign.work,
                                               report.gpus_per_segment);
  }
}

// Leaves out the samples where `drop` says so, from every policy's outcomes alike.
void drop_samples(EvalReport& report, const std::vector<char>& drop) {
  std::vector<Seconds> times;
  for (std::size_t i = 0; i < report.sample_times.size(); ++i)
    if (!drop[i]) times.push_back(report.sample_times[i]);
  for (auto& [name, outs] : report.outcomes) {
    std::vector<SampleOutcome> kept;
    for (std::size_t i = 0; i < outs.size(); ++i)
      if (!drop[i]) kept.push_back(std::move(outs[i]));
    outs = std::move(kept);
  }
  report.sample_times = std::move(times);
}

}  // namespace

void keep_samples(EvalReport& report, const std::vector<Seconds>& times, const EvalConfig& config) {
  std::vector<char> drop(report.sample_times.size(), 0);
  for (std::size_t i = 0; i < drop.size(); ++i)
    drop[i] = !std::binary_search(times.begin(), times.end(), report.sample_times[i]);
  drop_samples(report, drop);
  summarise(report, config);
}

std::string_view to_string(SuccessorWait world) {
  return world == SuccessorWait::kLogged ? "logged" : "replay";
}

std::string load_bucket(Seconds reactive_interruption) {
  if (reactive_interruption <= 2 * kHour) return "low";
  if (reactive_interruption <= 12 * kHour) return "medium";
  return "heavy";
}

PolicyMetrics compute_metrics(const std::vector<SampleOutcome>& policy,
                              const std::vector<SampleOutcome>& reactive, const ChainSpec& chain) {
  struct Acc {
    std::vector<double> interruptions, overlaps;
    double reactive_sum = 0;
    std::size_t reactive_finished = 0;
    std::size_t samples = 0, censored = 0;
    double censored_sum = 0;
  };
  std::map<std::string, Acc> acc;
  for (std::size_t i = 0; i < policy.size(); ++i) {
    for (const std::string& key : {std::string("overall"), policy[i].bucket}) {
      Acc& a = acc[key];
      ++a.samples;
      for (const auto& b : policy[i].episode.boundaries) {
        if (b.truncated) {
          ++a.censored;
          a.censored_sum += static_cast<double>(b.interruption()) / kHour;
          continue;
        }
        a.interruptions.push_back(static_cast<double>(b.interruption()) / kHour);
        a.overlaps.push_back(static_cast<double>(b.overlap(chain)) / kHour);
      }
      for (const auto& b : reactive[i].episode.boundaries) {
        if (b.truncated) continue;
        a.reactive_sum += static_cast<double>(b.interruption()) / kHour;
        ++a.reactive_finished;
      }
    }
  }
  auto finish = [](const Acc& a) {
    BucketMetrics m;
    m.samples = a.samples;
    m.censored = a.censored;
    if (a.censored > 0)
      m.censored_min_interruption_h = a.censored_sum / static_cast<double>(a.censored);
    const double n = static_cast<double>(a.interruptions.size());
    m.boundaries = a.interruptions.size();
    if (n == 0) return m;
    double sum = 0, zero = 0, over = 0;
    for (double x : a.interruptions) {
      sum += x;
      zero += x <= 0 ? 1 : 0;
    }
    for (double x : a.overlaps) over += x;
    m.mean_interruption_h = sum / n;
    m.zero_interruption_share = zero / n;
    m.mean_overlap_h = over / n;
    m.p90_interruption_h = quantile(a.interruptions, 0.9);
    const double reactive_mean =
        a.reactive_finished ? a.reactive_sum / static_cast<double>(a.reactive_finished) : 0;
    m.interruption_reduction = reactive_mean > 0 ? 1.0 - m.mean_interruption_h / reactive_mean : 0;
    return m;
  };
  PolicyMetrics pm;
  for (const auto& [key, a] : acc) {
    if (key == "overall")
      pm.overall = finish(a);
    else
      pm.buckets[key] = finish(a);
  }
  return pm;
}

bool same_decisions(const std::vector<SampleOutcome>& a, const std::vector<SampleOutcome>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& x = a[i].episode.boundaries;
    const auto& y = b[i].episode.boundaries;
    if (x.size() != y.size()) return false;
    for (std::size_t k = 0; k < x.size(); ++k)
      if (x[k].successor_submit != y[k].successor_submit) return false;
  }
  return true;
}

std::map<std::string, CampaignMetrics> compute_campaign_metrics(
    const std::map<std::string, std::vector<SampleOutcome>>& outcomes, Seconds work,
    int gpus_per_segment) {
  std::map<std::string, CampaignMetrics> out;
  if (outcomes.empty()) return out;
  const std::size_t n = outcomes.begin()->second.size();
  const auto complete = [](const SampleOutcome& o) {
    return o.episode.campaign && o.episode.campaign->complete;
  };
  std::vector<char> compared(n, 1);
  for (const auto& [name, outs] : outcomes)
    for (std::size_t i = 0; i < n; ++i)
      if (!complete(outs[i])) compared[i] = 0;
  const double gpu_h = static_cast<double>(gpus_per_segment) / kHour;
  for (const auto& [name, outs] : outcomes) {
    CampaignMetrics& m = out[name];
    for (std::size_t i = 0; i < n; ++i) {
      if (!complete(outs[i])) ++m.incomplete;
      if (!compared[i]) continue;
      const CampaignOutcome& c = *outs[i].episode.campaign;
      ++m.compared;
      const double makespan_h = static_cast<double>(c.finish - outs[i].sample_time) / kHour;
      m.makespan_h += makespan_h;
      m.stretch += makespan_h * kHour / static_cast<double>(work);
      m.segments += c.segments;
      m.idle_gpu_h += static_cast<double>(c.interruption) * gpu_h;
      m.overlap_gpu_h += static_cast<double>(c.overlap) * gpu_h;
      m.restart_gpu_h += static_cast<double>(c.restart + c.redo) * gpu_h;
      m.redo_gpu_h += static_cast<double>(c.redo) * gpu_h;
      m.charged_gpu_h += static_cast<double>(c.charged) * gpu_h;
    }
    if (m.compared == 0) continue;
    const double k = static_cast<double>(m.compared);
    for (double* v : {&m.makespan_h, &m.stretch, &m.segments, &m.idle_gpu_h, &m.overlap_gpu_h,
                      &m.restart_gpu_h, &m.redo_gpu_h, &m.charged_gpu_h})
      *v /= k;
  }
  return out;
}

EvalReport evaluate(const Trace& trace, const EvalConfig& config, const EvalProgress& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  if (config.every <= 0) throw std::invalid_argument("the sample spacing must be positive");
  if (config.episode.chain.segments < 2) throw std::invalid_argument("a chain needs 2+ segments");
  if (config.episode.campaign.active() &&
      config.episode.campaign.segments_needed(config.episode.chain) < 2)
    throw std::invalid_argument("a whole campaign needs more work than one segment does");
  const std::vector<std::string> policies = evaluated_policies(config);
  const std::vector<PolicySpec> specs(policies.begin(), policies.end());
  bool window_read = false;  // by any policy: else the starts need none
  for (const PolicySpec& p : specs)
    if (p.name != kOracleName)  // fails early on a bad name
      window_read |= make_policy(p, config.context)->reads_window();

  EvalReport report;
  report.world = config.world;
  EpisodeConfig episode = config.episode;
  std::optional<LoggedWaits> logged;
  if (config.world == SuccessorWait::kLogged) {
    logged.emplace(config.yardstick_log ? *config.yardstick_log : trace,
                   LoggedWaitsSpec{episode.chain.nodes, episode.chain.time_limit,
                                   config.logged_window, config.logged_jobs});
    episode.logged_waits = &*logged;
    report.logged_shape_jobs = logged->shape_jobs();
    report.log_has_starts = logged->log_has_starts();
    report.logged_description = logged->describe();
    report.logged_limit_floor = logged->limit_floor();
    report.logged_pooling = logged->pooling();
  }
  EpisodeStarts starts(trace, config.cluster, episode, config.start_mode);
  if (!window_read) starts.drop_window();
  report.sample_times =
      starts.sample_times(config.from, config.to, config.every, &report.dropped_past_horizon);
  for (const auto& p : policies) report.outcomes[p].resize(report.sample_times.size());

  // Every policy of a sample in one task: they share one replay up to the first decision that
  // parts them (run_episodes), and each outcome is what its own episode gives.
  for_each_sample_task(
      starts, report.sample_times, 1, config.threads,
      [&](std::size_t sample, std::size_t, EpisodeStart& start) {
        std::vector<std::unique_ptr<Policy>> owned;
        std::vector<std::unique_ptr<Decider>> deciders;
        OracleDecider* oracle = nullptr;
        for (const PolicySpec& spec : specs) {
          if (spec.name == kOracleName) {
            auto o = std::make_unique<OracleDecider>(episode);
            oracle = o.get();
            deciders.push_back(std::move(o));
          } else {
            owned.push_back(make_policy(spec, config.context));
            deciders.push_back(std::make_unique<PolicyDecider>(*owned.back()));
          }
        }
        std::vector<Decider*> each;
        for (const auto& d : deciders) each.push_back(d.get());
        std::vector<EpisodeResult> results = run_episodes(std::move(start), each, episode);
        for (std::size_t i = 0; i < policies.size(); ++i) {
          // Each (sample, policy) slot is written by exactly one task.
          SampleOutcome& out = report.outcomes.at(policies[i])[sample];
          out.sample_time = results[i].sample_time;
          out.episode = std::move(results[i]);
          if (deciders[i].get() == oracle) out.what_ifs = oracle->tried();
        }
      },
      progress, policies.size());

  if (logged) {
    // A sample speaks in the logged world only if every policy's segments had a logged wait:
    // the policies are compared on the same samples.
    std::vector<char> drop(report.sample_times.size(), 0);
    for (const auto& [name, outs] : report.outcomes)
      for (std::size_t i = 0; i < outs.size(); ++i)
        if (outs[i].episode.lacks_logged_wait) drop[i] = 1;
    report.dropped_few_logged_jobs =
        static_cast<std::size_t>(std::count(drop.begin(), drop.end(), 1));
    drop_samples(report, drop);
  }
  summarise(report, config);
  report.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace mirage

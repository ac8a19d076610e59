#include "mirage/agents/WaitDistribution.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <span>

#include "mirage/core/DurableFile.h"
#include "mirage/core/Error.h"
#include "mirage/core/QueueForecast.h"
#include "mirage/core/TomlFile.h"
#include "mirage/simulator/Fidelity.h"
#include "mirage/traces/LoggedQueue.h"

namespace mirage {
namespace {

constexpr std::size_t kMaxBins = 8;

struct Sample {
  Seconds planned = 0;  // what QueueForecast planned in the queue the job met
  Seconds wait = 0;     // what it really waited
};

// The jobs `spec` speaks for, submitted in its window, each with its planned and real wait.
std::vector<Sample> samples(const Trace& trace, const ClusterSpec& cluster,
                            const WaitDistributionSpec& spec) {
  std::vector<std::size_t> picked;
  std::vector<Seconds> times;
  for (std::size_t i = 0; i < trace.jobs.size(); ++i) {
    const Job& job = trace.jobs[i];
    if (!fitted_in(job, spec) || !speaks_for(job, spec)) continue;
    picked.push_back(i);
    times.push_back(job.submit);
  }
  std::vector<Sample> out(picked.size());
  for_each_logged_queue(
      trace.jobs, times, cluster.nodes, cluster.gpus_per_node, cluster.priority,
      [&](std::size_t i, const QueueSnapshot& queue) {
        const Job& job = trace.jobs[picked[i]];
        out[i] = {QueueForecast::plan(queue, job.nodes, job.gpus_per_node, job.time_limit).wait,
                  job.wait()};
      });
  return out;
}

// Linear interpolation between order statistics (sorted `v`, not empty; q in [0, 1]): the fit's
// levels from a bin's waits, and a quantile between the stored levels. Not the nearest rank the
// printed reports use (SimulationSummary.h): a policy's level moves its submission smoothly.
Seconds level(std::span<const Seconds> v, double q) {
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + static_cast<Seconds>(std::llround((pos - static_cast<double>(lo)) *
                                                   static_cast<double>(v[hi] - v[lo])));
}

}  // namespace

bool speaks_for(const Job& job, const WaitDistributionSpec& spec) {
  return job.started() && size_class(job.nodes) == size_class(spec.nodes) &&
         job.time_limit >= spec.min_job_limit;
}

bool fitted_in(const Job& job, const WaitDistributionSpec& spec) {
  return job.submit >= spec.from && job.submit < spec.to &&
         !(job.submit >= spec.skip_from && job.submit < spec.skip_to);
}

std::optional<std::string> chain_mismatch(const WaitDistribution& d, int nodes) {
  if (size_class(d.spec.nodes) == size_class(nodes)) return std::nullopt;
  return fmt::format(
      "it was fitted on jobs of {}, and a chain of {} node(s) waits as jobs of {} do (fit one "
      "with `mirage trace waits --nodes {}`)",
      size_class(d.spec.nodes), nodes, size_class(nodes), nodes);
}

std::size_t WaitDistribution::jobs() const {
  std::size_t n = 0;
  for (const Bin& b : bins) n += b.jobs;
  return n;
}

Seconds WaitDistribution::quantile(Seconds planned, double q) const {
  if (bins.empty()) return 0;
  auto bin = std::find_if(bins.begin(), bins.end(),
                          [&](const Bin& b) { return planned <= b.planned_up_to; });
  if (bin == bins.end()) bin = std::prev(bins.end());
  return level(bin->waits, std::clamp(q, 0.0, 1.0));
}

std::string describe(const WaitDistribution& d) {
  return fmt::format(
      "{} real jobs of {} with a limit of {} or more, submitted {} .. {}, in {} groups by "
      "planned wait",
      d.jobs(), size_class(d.spec.nodes), format_short_duration(d.spec.min_job_limit),
      format_iso_time(d.spec.from).substr(0, 10), format_iso_time(d.spec.to).substr(0, 10),
      d.bins.size());
}

WaitQuantiles BinnedWaitPredictor::predict(const QueueSnapshot& queue,
                                           const ForecastJob& job) const {
  const Seconds planned = QueueForecast::plan(queue, job).wait;
  WaitQuantiles w{};
  for (std::size_t k = 0; k < w.size(); ++k) w[k] = d_.quantile(planned, kWaitLevels[k]);
  return w;
}

Seconds BinnedWaitPredictor::quantile(const QueueSnapshot& queue, const ForecastJob& job,
                                      double q) const {
  return d_.quantile(QueueForecast::plan(queue, job).wait, q);
}

WaitDistribution fit_wait_distribution(const Trace& trace, const ClusterSpec& cluster,
                                       WaitDistributionSpec spec) {
  std::vector<Seconds> limits;
  for (const Job& job : trace.jobs)
    if (fitted_in(job, spec) && job.started() && size_class(job.nodes) == size_class(spec.nodes))
      limits.push_back(job.time_limit);
  spec.min_job_limit = spec.time_limit / 2;
  if (!limits.empty()) {
    const auto p90 = limits.begin() + static_cast<std::ptrdiff_t>(limits.size() * 9 / 10);
    std::nth_element(limits.begin(), p90, limits.end());
    spec.min_job_limit = std::min(spec.min_job_limit, *p90);
  }
  std::vector<Sample> s = samples(trace, cluster, spec);
  if (s.size() < WaitDistribution::kMinJobs)
    throw InputError(
        {trace.source, 0, "wait distribution"},
        fmt::format("only {} jobs of {} with a limit of {} or more started in {} .. {} "
                    "(at least {} are needed to fit the successor's wait)",
                    s.size(), size_class(spec.nodes), format_short_duration(spec.min_job_limit),
                    format_iso_time(spec.from).substr(0, 10),
                    format_iso_time(spec.to).substr(0, 10), WaitDistribution::kMinJobs));
  std::sort(s.begin(), s.end(), [](const Sample& a, const Sample& b) {
    return a.planned != b.planned ? a.planned < b.planned : a.wait < b.wait;
  });
  WaitDistribution d;
  d.trace = trace.source;
  d.spec = spec;
  // Bins of equal counts (at least kMinJobs each, at most kMaxBins), cut only between different
  // planned waits, so that one planned wait always reads one bin.
  const std::size_t n = s.size();
  const std::size_t target = std::max(WaitDistribution::kMinJobs, (n + kMaxBins - 1) / kMaxBins);
  for (std::size_t begin = 0; begin < n;) {
    std::size_t end = std::min(n, begin + target);
    while (end < n && s[end].planned == s[end - 1].planned) ++end;
    if (n - end < WaitDistribution::kMinJobs) end = n;  // too few left for a bin of their own
    std::vector<Seconds> waits;
    for (std::size_t i = begin; i < end; ++i) waits.push_back(s[i].wait);
    std::sort(waits.begin(), waits.end());
    WaitDistribution::Bin bin;
    bin.planned_up_to = s[end - 1].planned;
    bin.jobs = end - begin;
    for (int k = 0; k < WaitDistribution::kLevels; ++k)
      bin.waits[static_cast<std::size_t>(k)] =
          level(waits, static_cast<double>(k) / (WaitDistribution::kLevels - 1));
    d.bins.push_back(bin);
    begin = end;
  }
  return d;
}

void write_wait_distribution(const std::string& path, const WaitDistribution& d) {
  std::string text = fmt::format(
      "# How long a chain's successor waits: the real waits of the log's jobs of its size class\n"
      "# asking job_limit_s seconds or more, grouped by the wait the queue forecast planned for\n"
      "# each in the queue it met (`mirage trace waits`). Each [[bin]] holds planned waits up to\n"
      "# planned_up_to_s (the last: any) and its real waits' quantiles at 0, 5%, ..., 100%, in\n"
      "# seconds.\n"
      "trace = {}\nchain_nodes = {}\ngpus_per_node = {}\nlimit_min = {}\njob_limit_s = {}\n"
      "fitted_from = {}\nfitted_to = {}\n",
      toml_quoted(d.trace), d.spec.nodes, d.spec.gpus_per_node, d.spec.time_limit / kMinute,
      d.spec.min_job_limit, toml_quoted(format_iso_time(d.spec.from)),
      toml_quoted(format_iso_time(d.spec.to)));
  for (const WaitDistribution::Bin& b : d.bins)
    text += fmt::format("\n[[bin]]\nplanned_up_to_s = {}\njobs = {}\nwaits_s = [{}]\n",
                        b.planned_up_to, b.jobs, fmt::join(b.waits, ", "));
  write_file_durably(path, text);
}

WaitDistribution read_wait_distribution(const std::string& path) {
  const toml::table root = read_toml_file(path, "the wait distribution");
  const auto bad = [&](long line, const std::string& key, const std::string& what) {
    return InputError({path, line, key}, what);
  };
  // An integer within [lo, hi], else nothing.
  const auto within = [](const toml::node& n, std::int64_t lo, std::int64_t hi) {
    const auto v = n.value<std::int64_t>();
    return v && *v >= lo && *v <= hi ? v : std::nullopt;
  };
  constexpr std::int64_t kYear = 365 * kDay;
  const auto positive = [&](const toml::node& n) { return within(n, 1, kYear); };
  WaitDistribution d;
  for (const auto& [key, node] : root) {
    const std::string k(key.str());
    if (k == "trace" && node.is_string()) {
      d.trace = *node.value<std::string>();
    } else if (k == "chain_nodes" && within(node, 1, 1'000'000)) {
      d.spec.nodes = static_cast<int>(*within(node, 1, 1'000'000));
    } else if (k == "gpus_per_node" && within(node, 0, 1024)) {
      d.spec.gpus_per_node = static_cast<int>(*within(node, 0, 1024));
    } else if (k == "limit_min" && within(node, 1, kYear / kMinute)) {
      d.spec.time_limit = *within(node, 1, kYear / kMinute) * kMinute;
    } else if (k == "job_limit_s" && within(node, 0, kYear)) {
      d.spec.min_job_limit = *within(node, 0, kYear);
    } else if ((k == "fitted_from" || k == "fitted_to") && node.is_string() &&
               parse_iso_time(*node.value<std::string>())) {
      (k == "fitted_from" ? d.spec.from : d.spec.to) = *parse_iso_time(*node.value<std::string>());
    } else if (k == "bin" && node.is_array_of_tables()) {
      for (const auto& entry : *node.as_array()) {
        WaitDistribution::Bin b;
        bool planned = false, jobs = false, waits = false;
        for (const auto& [bk, bv] : *entry.as_table()) {
          const std::string name(bk.str());
          if (name == "planned_up_to_s" && within(bv, 0, kYear)) {
            b.planned_up_to = *within(bv, 0, kYear);
            planned = true;
          } else if (name == "jobs" && positive(bv)) {
            b.jobs = static_cast<std::size_t>(*positive(bv));  // a year's worth at most
            jobs = true;
          } else if (name == "waits_s" && bv.is_array() &&
                     bv.as_array()->size() == WaitDistribution::kLevels) {
            Seconds previous = 0;
            std::size_t k = 0;
            for (const auto& w : *bv.as_array()) {
              const auto v = within(w, previous, 10 * kYear);
              if (!v)
                throw bad(toml_line(w), "bin.waits_s",
                          "expected 21 waits in seconds, 0 or more, never decreasing");
              b.waits[k++] = previous = *v;
            }
            waits = true;
          } else {
            throw bad(toml_line(bv), "bin." + name,
                      "expected planned_up_to_s (seconds, 0 or more), jobs (1 or more) and "
                      "waits_s (21 waits in seconds, never decreasing)");
          }
        }
        if (!planned || !jobs || !waits)
          throw bad(toml_line(entry), "bin", "a bin needs planned_up_to_s, jobs and waits_s");
        if (!d.bins.empty() && b.planned_up_to <= d.bins.back().planned_up_to)
          throw bad(toml_line(entry), "bin.planned_up_to_s",
                    "the bins' planned_up_to_s must grow from one bin to the next");
        d.bins.push_back(b);
      }
    } else {
      throw bad(toml_line(node), k,
                "unknown key or bad value (expected trace, chain_nodes (1 or more), gpus_per_node, "
                "limit_min (minutes), job_limit_s (seconds), fitted_from, fitted_to (dates) and "
                "[[bin]] tables)");
    }
  }
  for (const char* key : {"chain_nodes", "limit_min", "fitted_from", "fitted_to"})
    if (!root.contains(key))
      throw bad(0, key, "missing: it says which chain and which months the waits speak for");
  if (d.spec.from >= d.spec.to)
    throw bad(toml_line(*root.get("fitted_to")), "fitted_to", "must be after fitted_from");
  if (!root.contains("job_limit_s")) d.spec.min_job_limit = d.spec.time_limit / 2;
  if (d.bins.empty()) throw bad(0, "bin", "the wait distribution has no [[bin]]");
  return d;
}

}  // namespace mirage

#include "mirage/simulator/PriorityFit.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "mirage/core/Time.h"

namespace mirage {
namespace {

// What a job holds of the machine, in the units fairshare and the size factor count, as the
// simulator counts them: nodes, or GPUs on a GPU-granular machine.
double units_of(const Job& j, const ClusterSpec& spec) {
  return spec.allocation == AllocationMode::kGpuGranular
             ? static_cast<double>(j.nodes) *
                   (j.gpus_per_node > 0 ? j.gpus_per_node : spec.gpus_per_node)
             : static_cast<double>(j.nodes);
}

constexpr std::size_t kMaxFactors = 4;  // constant, fairshare, size, age
enum Factor : std::size_t { kConstant, kFairshare, kSize, kAge };

struct Sample {
  std::array<double, kMaxFactors> x{};  // the factors, x[kConstant] = 1
  double priority = 0;
};

// Least squares over the factors in `use`: the coefficients (0 for those left out) and R^2.
struct Solution {
  std::array<double, kMaxFactors> coef{};
  double r2 = 0, rms = 0;
};

Solution solve(const std::vector<Sample>& samples, const std::vector<char>& keep,
               const std::array<bool, kMaxFactors>& use) {
  std::vector<std::size_t> idx;
  for (std::size_t f = 0; f < kMaxFactors; ++f)
    if (use[f]) idx.push_back(f);
  const std::size_t k = idx.size();
  std::vector<std::vector<double>> a(k, std::vector<double>(k + 1, 0.0));  // normal equations
  double n = 0, sum = 0, sum2 = 0;
  for (std::size_t s = 0; s < samples.size(); ++s) {
    if (!keep[s]) continue;
    const Sample& m = samples[s];
    for (std::size_t r = 0; r < k; ++r) {
      for (std::size_t c = 0; c < k; ++c) a[r][c] += m.x[idx[r]] * m.x[idx[c]];
      a[r][k] += m.x[idx[r]] * m.priority;
    }
    n += 1;
    sum += m.priority;
    sum2 += m.priority * m.priority;
  }
  // Gauss-Jordan with partial pivoting; a factor that never varies gets coefficient 0.
  Solution out;
  std::array<double, kMaxFactors> beta{};
  for (std::size_t c = 0; c < k; ++c) {
    std::size_t p = c;
    for (std::size_t r = c + 1; r < k; ++r)
      if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
    std::swap(a[c], a[p]);
    if (std::abs(a[c][c]) < 1e-9 * std::max(1.0, n)) continue;
    for (std::size_t r = 0; r < k; ++r) {
      if (r == c || a[r][c] == 0) continue;
      const double f = a[r][c] / a[c][c];
      for (std::size_t j = c; j <= k; ++j) a[r][j] -= f * a[c][j];
    }
  }
  for (std::size_t c = 0; c < k; ++c)
    beta[c] = std::abs(a[c][c]) < 1e-9 * std::max(1.0, n) ? 0.0 : a[c][k] / a[c][c];
  for (std::size_t c = 0; c < k; ++c) out.coef[idx[c]] = beta[c];
  double sse = 0;
  for (std::size_t s = 0; s < samples.size(); ++s) {
    if (!keep[s]) continue;
    double pred = 0;
    for (std::size_t f = 0; f < kMaxFactors; ++f) pred += out.coef[f] * samples[s].x[f];
    sse += (samples[s].priority - pred) * (samples[s].priority - pred);
  }
  const double sst = sum2 - sum * sum / std::max(1.0, n);
  out.r2 = sst > 0 ? 1.0 - sse / sst : 0.0;
  out.rms = n > 0 ? std::sqrt(sse / n) : 0.0;
  return out;
}

double residual(const Sample& m, const Solution& s) {
  double pred = 0;
  for (std::size_t f = 0; f < kMaxFactors; ++f) pred += s.coef[f] * m.x[f];
  return m.priority - pred;
}

// Each fitted job's fairshare factor at its submission, as the simulator would compute it from
// the usage the log shows (Simulator::fairshare_factor): 2^(-users seen x usage share).
std::vector<double> fairshare_at_submit(const std::vector<Job>& jobs,
                                        const std::vector<std::size_t>& fitted,
                                        const ClusterSpec& spec, Seconds half_life) {
  enum Kind { kEnd, kStart, kSubmit };  // this order at one instant
  struct Event {
    Seconds t;
    Kind kind;
    std::size_t job;
  };
  std::vector<Event> events;
  std::vector<std::size_t> slot(jobs.size(), SIZE_MAX);
  for (std::size_t i = 0; i < fitted.size(); ++i) slot[fitted[i]] = i;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    events.push_back({jobs[j].submit, kSubmit, j});
    if (jobs[j].started() && jobs[j].end >= jobs[j].start) {
      events.push_back({jobs[j].start, kStart, j});
      events.push_back({jobs[j].end, kEnd, j});
    }
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.t != b.t ? a.t < b.t : a.kind < b.kind;
  });
  struct Usage {
    double used = 0, running = 0, running_since = 0;
  };
  std::unordered_map<std::string, Usage> users;
  std::unordered_set<std::string> seen;
  Usage total;
  Seconds origin = events.empty() ? 0 : events.front().t;
  auto weight = [&](double t) {
    return std::exp2((t - static_cast<double>(origin)) / static_cast<double>(half_life));
  };
  std::vector<double> factor(fitted.size(), 1.0);
  for (const Event& e : events) {
    const Job& j = jobs[e.job];
    Usage& u = users[j.user];
    const double t = static_cast<double>(e.t);
    if (e.kind == kSubmit) {
      seen.insert(j.user);
      if (slot[e.job] == SIZE_MAX) continue;
      const double w = weight(t);
      const double mine = u.used + w * (u.running * t - u.running_since);
      const double all = total.used + w * (total.running * t - total.running_since);
      factor[slot[e.job]] =
          all > 0 ? std::exp2(-static_cast<double>(seen.size()) * mine / all) : 1.0;
      continue;
    }
    const double sign = e.kind == kStart ? 1.0 : -1.0;
    const double n = units_of(j, spec), start = static_cast<double>(j.start);
    for (Usage* x : {&u, &total}) {
      x->running += sign * n;
      x->running_since += sign * n * start;
    }
    if (e.kind == kEnd) {
      const double used = n * (t - start) * weight((t + start) / 2);
      u.used += used;
      total.used += used;
      if (t - static_cast<double>(origin) > 200.0 * static_cast<double>(half_life)) {
        const double w = weight(t);
        for (auto& [name, x] : users) x.used /= w;
        total.used /= w;
        origin = e.t;
      }
    }
  }
  return factor;
}

}  // namespace

std::string describe_weights(const PriorityFit& fit) {
  const PriorityParameters& w = fit.weights;
  return fmt::format("age {:.0f}, fairshare {:.0f} (half-life {}), job size {:.0f}{}", w.weight_age,
                     w.weight_fairshare, format_short_duration(w.decay_half_life),
                     w.weight_job_size, w.favor_small ? " favoring small jobs" : "");
}

std::string describe_evidence(const PriorityFit& fit) {
  const auto share_gap = [](const WaitFidelity& f) { return f.sim_over_1h - f.real_over_1h; };
  if (fit.candidates > 0 && fit.like_fcfs && fit.closest_rank < fit.fcfs_rank - kRankMargin)
    return fmt::format(
        "the log records no priority, and cannot tell weights apart from first-come-first-served: "
        "of {} weightings replayed, the one waiting most like the log ranks its waits {:.2f}, more "
        "than {:.2f} below first-come-first-served's {:.2f} (its replay, with all the calibration "
        "chose: mean wait ratio {:.2f}, share over 1 h {:+.0f} points, rank correlation {:.2f})",
        fit.candidates, fit.closest_rank, kRankMargin, fit.fcfs_rank, fit.replay.mean_ratio,
        100 * share_gap(fit.replay), fit.replay.rank_correlation);
  if (fit.candidates > 0)
    return fmt::format(
        "the log records no priority: of {} weightings replayed, this one waits most like the log "
        "(the replay kept, with all the calibration chose: mean wait ratio {:.2f}, share over 1 h "
        "{:+.0f} points, rank correlation {:.2f})",
        fit.candidates, fit.replay.mean_ratio, 100 * share_gap(fit.replay),
        fit.replay.rank_correlation);
  if (fit.jobs > 0 && fit.age_candidates > 0)
    return fmt::format(
        "fitted to the log's Priority column: they explain {:.0f}% of its variance over {} jobs "
        "({} set aside); the column cannot tell the age weight, so of {} replayed this one waits "
        "most like the log (the replay kept, with all the calibration chose: mean wait ratio "
        "{:.2f}, share over 1 h {:+.0f} points, rank correlation {:.2f})",
        100 * fit.r2, fit.jobs, fit.outliers, fit.age_candidates, fit.replay.mean_ratio,
        100 * share_gap(fit.replay), fit.replay.rank_correlation);
  if (fit.jobs > 0)
    return fmt::format(
        "fitted to the log's Priority column: they explain {:.0f}% of its variance over {} jobs "
        "({} set aside)",
        100 * fit.r2, fit.jobs, fit.outliers);
  return "as the calibration file gives them";
}

std::optional<PriorityFit> fit_priority(const std::vector<Job>& jobs, const ClusterSpec& spec,
                                        std::size_t min_jobs) {
  std::vector<std::size_t> fitted;
  for (std::size_t j = 0; j < jobs.size(); ++j)
    if (jobs[j].priority >= 0 && jobs[j].started()) fitted.push_back(j);
  if (fitted.size() < min_jobs) return std::nullopt;

  const double capacity = static_cast<double>(spec.capacity_units());
  const double max_age = static_cast<double>(std::max<Seconds>(1, spec.priority.max_age));
  std::vector<Sample> samples(fitted.size());
  for (std::size_t i = 0; i < fitted.size(); ++i) {
    const Job& j = jobs[fitted[i]];
    const double units = units_of(j, spec);
    samples[i].x[kConstant] = 1;
    samples[i].x[kSize] = units / capacity;
    samples[i].x[kAge] = std::min(static_cast<double>(j.wait()), max_age) / max_age;
    samples[i].priority = static_cast<double>(j.priority);
  }

  std::optional<PriorityFit> best;
  for (const Seconds half_life : {1 * kDay, 2 * kDay, 4 * kDay, 7 * kDay, 14 * kDay, 28 * kDay}) {
    const std::vector<double> f = fairshare_at_submit(jobs, fitted, spec, half_life);
    for (std::size_t i = 0; i < samples.size(); ++i) samples[i].x[kFairshare] = f[i];
    std::vector<char> keep(samples.size(), 1);
    std::array<bool, kMaxFactors> use{true, true, true, true};
    Solution s = solve(samples, keep, use);
    // Set aside what no factor explains (a QOS boost, a held job), then fit again.
    std::size_t outliers = 0;
    for (std::size_t i = 0; i < samples.size(); ++i)
      if (std::abs(residual(samples[i], s)) > 3 * s.rms) {
        keep[i] = 0;
        ++outliers;
      }
    s = solve(samples, keep, use);
    // A negative weight is no preference the scheduler could have had: drop the factor.
    for (const Factor factor : {kFairshare, kAge})
      if (s.coef[factor] <= 0) {
        use[factor] = false;
        s = solve(samples, keep, use);
      }
    if (best && s.r2 <= best->r2) continue;
    PriorityFit fit;
    fit.weights = spec.priority;
    fit.weights.weight_age = s.coef[kAge];
    fit.weights.weight_fairshare = s.coef[kFairshare];
    fit.weights.decay_half_life = half_life;
    fit.weights.favor_small = s.coef[kSize] < 0;
    fit.weights.weight_job_size = std::abs(s.coef[kSize]);
    fit.r2 = s.r2;
    fit.jobs = samples.size() - outliers;
    fit.outliers = outliers;
    best = fit;
  }
  if (!best || best->r2 < 0.1) return std::nullopt;
  return best;
}

}  // namespace mirage

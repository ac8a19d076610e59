#include "mirage/simulator/Fidelity.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/sort/spreadsort/integer_sort.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "mirage/simulator/SimulationSummary.h"

namespace mirage {
namespace {

// A double's bits as an unsigned key in the same order (negatives' bits flipped, positives'
// sign bit set): Boost's float_sort subtracts signed keys and overflows on negative values.
std::uint64_t order_key(double d) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &d, sizeof bits);
  return (bits >> 63) != 0 ? ~bits : bits | (std::uint64_t{1} << 63);
}

// Ranks 1..n, ties given the mean of the ranks they span.
std::vector<double> ranks(const std::vector<double>& v) {
  // Values sorted beside their positions (not positions by their values: one array to sort, read
  // in order); the order among equal values does not matter, their ranks are averaged. Boost's
  // radix-based integer_sort on the values' order keys: a third of std::sort's time on a log's
  // waits, which every replay of the calibration's inference ranks.
  using Entry = std::pair<double, std::size_t>;
  std::vector<Entry> order(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) order[i] = {v[i], i};
  boost::sort::spreadsort::integer_sort(
      order.begin(), order.end(),
      [](const Entry& e, unsigned offset) { return order_key(e.first) >> offset; },
      [](const Entry& a, const Entry& b) { return order_key(a.first) < order_key(b.first); });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && order[j + 1].first == order[i].first) ++j;
    const double mean_rank = (static_cast<double>(i + j) / 2.0) + 1.0;
    for (std::size_t k = i; k <= j; ++k) r[order[k].second] = mean_rank;
    i = j + 1;
  }
  return r;
}

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n;
  const double mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

// The figures of the jobs whose real and simulated waits are real[i] and sim[i], from each
// side's own (side_figures).
WaitFidelity figures(std::string group, const WaitSideFigures& real, const WaitSideFigures& sim) {
  WaitFidelity f;
  f.group = std::move(group);
  f.jobs = real.jobs;
  f.real_mean_s = real.mean_s;
  f.sim_mean_s = sim.mean_s;
  f.real_over_1h = real.over_1h;
  f.sim_over_1h = sim.over_1h;
  f.rank_correlation = real.jobs < 2 ? 0.0 : pearson(real.ranks, sim.ranks);
  f.mean_ratio = f.real_mean_s > 0 ? f.sim_mean_s / f.real_mean_s : 0.0;
  f.real_median_s = real.median_s;
  f.sim_median_s = sim.median_s;
  f.real_p90_s = real.p90_s;
  f.sim_p90_s = sim.p90_s;
  return f;
}

WaitFidelity figures(std::string group, std::vector<double> real, std::vector<double> sim) {
  return figures(std::move(group), side_figures(std::move(real)), side_figures(std::move(sim)));
}

WaitFidelity figures(std::string group, const std::vector<const WaitPair*>& pairs) {
  std::vector<double> real, sim;
  real.reserve(pairs.size());
  sim.reserve(pairs.size());
  for (const WaitPair* p : pairs) {
    real.push_back(static_cast<double>(p->real_wait));
    sim.push_back(static_cast<double>(p->sim_wait));
  }
  return figures(std::move(group), std::move(real), std::move(sim));
}

std::string month_of(Seconds t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m", &tm);
  return buf;
}

}  // namespace

std::string size_class(int nodes) {
  if (nodes <= 1) return "1 node";
  if (nodes < 8) return "2-7 nodes";
  return "8+ nodes";
}

WaitSideFigures side_figures(std::vector<double> waits) {
  WaitSideFigures s;
  s.jobs = waits.size();
  const double n = static_cast<double>(waits.size());
  s.mean_s = std::accumulate(waits.begin(), waits.end(), 0.0) / n;
  s.over_1h = static_cast<double>(
                  std::count_if(waits.begin(), waits.end(), [](double w) { return w > kHour; })) /
              n;
  if (waits.size() >= 2) s.ranks = ranks(waits);
  // Last: quantile reorders the sample, and the ranks above are by position.
  s.median_s = quantile(waits, 0.5);
  s.p90_s = quantile(waits, 0.9);
  return s;
}

double rank_correlation(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw std::invalid_argument("rank_correlation: samples differ in size");
  if (a.size() < 2) return 0.0;
  return pearson(ranks(a), ranks(b));
}

namespace {
using T = FidelityTargets;
constexpr double kRankWidth = 0.1;  // the rank correlation's unit of miss
constexpr double kNoRatio = 10;     // target widths a replay without a real mean misses by

double rank_shortfall(const WaitFidelity& f) {
  return std::max(0.0, T::kRank - f.rank_correlation) / kRankWidth;
}
}  // namespace

double WaitFidelity::target_miss() const {
  double ratio = 0;
  if (mean_ratio <= 0)
    ratio = kNoRatio;
  else if (mean_ratio < T::kRatioLow)
    ratio = std::log(T::kRatioLow / mean_ratio) / std::log(T::kRatioHigh);
  else if (mean_ratio > T::kRatioHigh)
    ratio = std::log(mean_ratio / T::kRatioHigh) / std::log(T::kRatioHigh);
  const double share =
      std::max(0.0, std::abs(sim_over_1h - real_over_1h) - T::kShareGap) / T::kShareGap;
  return ratio + share + rank_shortfall(*this);
}

double WaitFidelity::centre_distance() const {
  const double ratio =
      mean_ratio > 0 ? std::abs(std::log(mean_ratio)) / std::log(T::kRatioHigh) : kNoRatio;
  return ratio + std::abs(sim_over_1h - real_over_1h) / T::kShareGap + rank_shortfall(*this);
}

bool closer_to_targets(const WaitFidelity& a, const WaitFidelity& b) {
  constexpr double kAsFar = 1e-9;
  const double miss_a = a.target_miss(), miss_b = b.target_miss();
  if (std::abs(miss_a - miss_b) > kAsFar) return miss_a < miss_b;
  return a.centre_distance() < b.centre_distance();
}

std::vector<char> queued_behind_own(const std::vector<Job>& jobs) {
  std::vector<std::size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return jobs[a].submit < jobs[b].submit; });
  // Per user, the latest start among the jobs submitted so far: while it lies ahead, one of them
  // is still pending.
  std::unordered_map<std::string, Seconds> latest_start;
  std::vector<char> behind(jobs.size(), 0);
  for (const std::size_t i : order) {
    const Job& j = jobs[i];
    if (j.user.empty()) continue;
    const auto [it, fresh] = latest_start.try_emplace(j.user, kUnknownTime);
    behind[i] = !fresh && it->second != kUnknownTime && it->second > j.submit;
    if (j.started() && (it->second == kUnknownTime || j.start > it->second)) it->second = j.start;
  }
  return behind;
}

std::vector<WaitPair> pair_waits(const std::vector<Job>& jobs, const Simulator& sim, Seconds from,
                                 Seconds to, std::size_t& without_real_start) {
  return pair_waits(jobs, sim.waits(jobs.size()), from, to, without_real_start);
}

std::vector<WaitPair> pair_waits(const std::vector<Job>& jobs, const std::vector<Seconds>& waits,
                                 Seconds from, Seconds to, std::size_t& without_real_start) {
  std::vector<WaitPair> out;
  out.reserve(jobs.size());
  without_real_start = 0;
  std::unordered_map<std::string, std::uint32_t> users;
  const std::vector<char> behind = queued_behind_own(jobs);  // the whole log: earlier jobs count
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    if ((from > 0 && j.submit < from) || (to > 0 && j.submit >= to)) continue;
    if (!j.started()) {
      ++without_real_start;
      continue;
    }
    const Seconds wait = waits.at(i);
    if (wait == kUnknownTime) continue;  // never started in the replay (it ran out first)
    const std::uint32_t user =
        j.user.empty() ? 0 : users.try_emplace(j.user, users.size() + 1).first->second;
    out.push_back({j.submit, j.nodes, j.wait(), wait, j.time_limit, user, behind[i] != 0});
  }
  return out;
}

TwinAgreement twin_agreement(const std::vector<WaitPair>& pairs) {
  constexpr Seconds kNear = 10 * kMinute;
  const auto alike = [](const WaitPair& a, const WaitPair& b) {
    const bool other_user = a.user == 0 || b.user == 0 || a.user != b.user;
    const double la = static_cast<double>(std::max<Seconds>(a.time_limit, 1));
    const double lb = static_cast<double>(std::max<Seconds>(b.time_limit, 1));
    return a.nodes == b.nodes && other_user && std::max(la, lb) <= 1.25 * std::min(la, lb);
  };
  std::vector<bool> taken(pairs.size(), false);
  // Each pair both ways round, so that neither twin is the "first".
  std::vector<double> real_a, real_b, real, sim;
  std::size_t unnamed = 0;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    if (taken[i]) continue;
    for (std::size_t k = i + 1; k < pairs.size() && pairs[k].submit - pairs[i].submit <= kNear;
         ++k) {
      if (taken[k] || !alike(pairs[i], pairs[k])) continue;
      taken[i] = taken[k] = true;
      unnamed += pairs[i].user == 0 || pairs[k].user == 0;
      const auto wi = static_cast<double>(pairs[i].real_wait);
      const auto wk = static_cast<double>(pairs[k].real_wait);
      real_a.insert(real_a.end(), {wi, wk});
      real_b.insert(real_b.end(), {wk, wi});
      real.insert(real.end(), {wi, wk});
      sim.insert(sim.end(),
                 {static_cast<double>(pairs[i].sim_wait), static_cast<double>(pairs[k].sim_wait)});
      break;
    }
  }
  TwinAgreement t;
  t.pairs = real_a.size() / 2;
  t.unnamed_pairs = unnamed;
  t.real_with_twin = rank_correlation(real_a, real_b);
  t.sim_with_real = rank_correlation(real, sim);
  return t;
}

WaitFidelity measure_overall_fidelity(const std::vector<Job>& jobs,
                                      const std::vector<Seconds>& waits) {
  // The jobs pair_waits keeps, in its order, without the users and queues it pairs them with.
  std::vector<double> real, sim;
  real.reserve(jobs.size());
  sim.reserve(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].started() || waits.at(i) == kUnknownTime) continue;
    real.push_back(static_cast<double>(jobs[i].wait()));
    sim.push_back(static_cast<double>(waits[i]));
  }
  if (real.empty()) throw std::invalid_argument("no jobs to compare");
  return figures("all", std::move(real), std::move(sim));
}

WaitSideFigures logged_wait_figures(const std::vector<Job>& jobs) {
  std::vector<double> real;
  real.reserve(jobs.size());
  for (const Job& j : jobs)
    if (j.started()) real.push_back(static_cast<double>(j.wait()));
  return side_figures(std::move(real));
}

WaitFidelity measure_overall_fidelity(const std::vector<Job>& jobs, const WaitSideFigures& logged,
                                      const std::vector<Seconds>& waits) {
  std::vector<double> sim;
  sim.reserve(logged.jobs);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].started()) continue;
    // A job the log started and the replay did not: the jobs compared are fewer than those
    // `logged` was worked out on.
    if (waits.at(i) == kUnknownTime) return measure_overall_fidelity(jobs, waits);
    sim.push_back(static_cast<double>(waits[i]));
  }
  if (sim.size() != logged.jobs)
    throw std::invalid_argument(fmt::format(
        "measure_overall_fidelity: the log's figures are of {} started jobs, these jobs have {}",
        logged.jobs, sim.size()));
  if (sim.empty()) throw std::invalid_argument("no jobs to compare");
  return figures("all", logged, side_figures(std::move(sim)));
}

FidelityReport measure_fidelity(const std::vector<WaitPair>& pairs) {
  if (pairs.empty()) throw std::invalid_argument("no jobs to compare");
  FidelityReport r;
  std::vector<const WaitPair*> all;
  std::map<int, std::vector<const WaitPair*>> by_size;  // keyed by the class's smallest size
  std::map<std::string, std::vector<const WaitPair*>> by_month;
  std::vector<const WaitPair*> lone, behind_own;
  for (const WaitPair& p : pairs) {
    all.push_back(&p);
    if (p.user != 0) (p.behind_own ? behind_own : lone).push_back(&p);
    by_size[p.nodes <= 1 ? 1 : p.nodes < 8 ? 2 : 8].push_back(&p);
    by_month[month_of(p.submit)].push_back(&p);
  }
  r.overall = figures("all", all);
  r.twins = twin_agreement(pairs);
  for (const auto& [smallest, group] : by_size)
    r.by_size.push_back(figures(size_class(smallest), group));
  for (const auto& [month, group] : by_month) r.by_month.push_back(figures(month, group));
  if (!lone.empty()) r.by_user_queue.push_back(figures("lone", lone));
  if (!behind_own.empty()) r.by_user_queue.push_back(figures("behind own", behind_own));
  return r;
}

}  // namespace mirage

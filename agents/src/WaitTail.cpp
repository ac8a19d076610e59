#include "mirage/agents/WaitTail.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "mirage/agents/WaitCheck.h"
#include "mirage/core/Error.h"
#include "mirage/simulator/Fidelity.h"

namespace mirage {
namespace {

constexpr int kWeightSteps = 10;

WaitQuantiles blend(const WaitQuantiles& network, const WaitQuantiles& binned, double weight) {
  WaitQuantiles out{};
  for (std::size_t k = 0; k < out.size(); ++k)
    out[k] = static_cast<Seconds>(std::llround(weight * static_cast<double>(network[k]) +
                                               (1 - weight) * static_cast<double>(binned[k])));
  return out;  // an average of two non-decreasing vectors: non-decreasing
}

WaitQuantiles binned_levels(const WaitDistribution& d, Seconds planned) {
  WaitQuantiles w{};
  for (std::size_t k = 0; k < w.size(); ++k) w[k] = d.quantile(planned, kWaitLevels[k]);
  return w;
}

double pinball_of(const WaitQuantiles& stated, Seconds wait) {
  double sum = 0;
  for (std::size_t k = 0; k < kWaitLevels.size(); ++k)
    sum += pinball_loss(kWaitLevels[k], wait, stated[k]);
  return sum;
}

double pinball_sum(const std::vector<WaitOutcome>& outcomes) {
  double sum = 0;
  for (const WaitOutcome& o : outcomes) sum += pinball_of(o.predicted, o.wait);
  return sum;
}

// Whether `chosen` (the blend as recalibrated) beats each row's own binned distribution alone on
// `rows` by more than kSelectionStandardErrors of the paired differences' mean.
bool beats_binned(const std::vector<WaitOutcome>& chosen, const std::vector<const TailRow*>& rows,
                  const std::array<std::optional<WaitDistribution>, kSizeClasses>& binned) {
  std::vector<double> diff;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& own = binned[size_class_index(rows[i]->nodes)];
    if (!own) return true;  // nothing to fall back to
    diff.push_back(pinball_of(chosen[i].predicted, rows[i]->wait) -
                   pinball_of(binned_levels(*own, rows[i]->planned), rows[i]->wait));
  }
  if (diff.size() < 2) return true;
  const auto n = static_cast<double>(diff.size());
  double mean = 0, var = 0;
  for (double d : diff) mean += d / n;
  for (double d : diff) var += (d - mean) * (d - mean) / (n - 1);
  return mean + kSelectionStandardErrors * std::sqrt(var / n) < 0;
}

}  // namespace

std::size_t size_class_index(int nodes) {
  return nodes <= 1 ? 0 : nodes < 8 ? 1 : 2;
}

ClassDistributions fit_class_distributions(const Trace& trace, const ClusterSpec& cluster,
                                           Seconds from, Seconds to) {
  return fit_class_distributions(trace, cluster, from, {to, to, to});
}

ClassDistributions fit_class_distributions(const Trace& trace, const ClusterSpec& cluster,
                                           Seconds from,
                                           const std::array<Seconds, kSizeClasses>& to) {
  ClassDistributions out;
  for (std::size_t c = 0; c < kSizeClasses; ++c) {
    WaitDistributionSpec w;
    w.nodes = kSizeClassNodes[c];
    w.time_limit = 0;  // every limit: the jobs judged ask any
    w.from = from;
    w.to = to[c];
    try {
      out.classes[c] = fit_wait_distribution(trace, cluster, w);
    } catch (const InputError& e) {
      out.notes += fmt::format("{}binned, {}: {}", out.notes.empty() ? "" : "\n",
                               size_class(kSizeClassNodes[c]), e.message());
    }
  }
  return out;
}

bool WaitTail::blends(std::size_t cls) const {
  return classes[cls].binned && (classes[cls].model_weight < 1 || classes[cls].binned_only);
}

void WaitTail::refit_binned_only(
    const std::array<std::optional<WaitDistribution>, kSizeClasses>& whole) {
  for (std::size_t c = 0; c < kSizeClasses; ++c)
    if (classes[c].binned_only && whole[c]) classes[c].binned = whole[c];
}

WaitQuantiles WaitTail::apply(std::size_t cls, const WaitQuantiles& network,
                              Seconds planned) const {
  const WaitClassTail& t = classes[cls];
  if (t.binned_only && t.binned) return binned_levels(*t.binned, planned);
  const WaitQuantiles mixed =
      blends(cls) ? blend(network, binned_levels(*t.binned, planned), t.model_weight) : network;
  return shift_levels(mixed, t.shifts);
}

WaitTail fit_wait_tail(const std::vector<TailRow>& rows,
                       const std::array<std::optional<WaitDistribution>, kSizeClasses>& binned,
                       bool with_blend, bool with_shifts, bool with_selection,
                       const TailRule& rule) {
  std::vector<const TailRow*> all;
  for (const TailRow& r : rows) all.push_back(&r);
  // `of` blended at `weight`, each job with its own class's binned distribution.
  const auto blended = [&](const std::vector<const TailRow*>& of, double weight) {
    std::vector<WaitOutcome> outcomes;
    for (const TailRow* r : of) {
      const auto& own = binned[size_class_index(r->nodes)];
      outcomes.push_back({weight < 1 && own
                              ? blend(r->network, binned_levels(*own, r->planned), weight)
                              : r->network,
                          r->wait});
    }
    return outcomes;
  };
  WaitTail tail;
  for (std::size_t c = 0; c < kSizeClasses; ++c) {
    WaitClassTail& t = tail.classes[c];
    t.binned = binned[c];
    std::vector<const TailRow*> mine;
    for (const TailRow* r : all)
      if (size_class_index(r->nodes) == c) mine.push_back(r);
    t.tail_jobs = mine.size();
    if (rule.recent_jobs > 0 && mine.size() > rule.recent_jobs)
      mine.erase(mine.begin(), mine.end() - static_cast<std::ptrdiff_t>(rule.recent_jobs));
    // A class with too few tail jobs of its own is set on the whole tail, each job blended with
    // its own class's distribution.
    const bool own_jobs = mine.size() >= kMinTailJobs;
    if (!own_jobs) mine = all;
    if (mine.empty()) continue;
    // The offsets `outcomes` call for, shrunk toward the whole tail's at the same weight.
    const auto recalibrate = [&](std::vector<WaitOutcome>& outcomes, double weight) {
      if (!with_shifts) return LevelShifts{};
      LevelShifts shifts = conformal_shifts(outcomes);
      if (own_jobs && rule.shrink_jobs > 0) {
        const LevelShifts pooled = conformal_shifts(blended(all, weight));
        const auto n = static_cast<double>(mine.size());
        const auto k = static_cast<double>(rule.shrink_jobs);
        for (std::size_t l = 0; l < shifts.size(); ++l)
          shifts[l] = (n * shifts[l] + k * pooled[l]) / (n + k);
      }
      for (WaitOutcome& o : outcomes) o.predicted = shift_levels(o.predicted, shifts);
      return shifts;
    };
    std::vector<double> weights{1.0};
    if (with_blend && t.binned) {
      if (rule.inverse_pinball) {
        auto network = blended(mine, 1), alone = blended(mine, 0);
        recalibrate(network, 1);
        recalibrate(alone, 0);
        const double ln = pinball_sum(network), lb = pinball_sum(alone);
        weights = {ln + lb > 0 ? lb / (ln + lb) : 1.0};
      } else {
        for (int s = 1; s <= kWeightSteps; ++s)
          weights.push_back(1 - static_cast<double>(s) / kWeightSteps);
      }
    }
    double best = std::numeric_limits<double>::infinity();
    std::vector<WaitOutcome> chosen;
    for (const double weight : weights) {
      std::vector<WaitOutcome> outcomes = blended(mine, weight);
      const LevelShifts shifts = recalibrate(outcomes, weight);
      const double loss = pinball_sum(outcomes);
      if (loss < best) {
        best = loss;
        t.model_weight = weight;
        t.shifts = shifts;
        chosen = std::move(outcomes);
      }
    }
    t.binned_only = with_selection && t.binned && !beats_binned(chosen, mine, binned);
    if (t.binned_only) {
      t.model_weight = 0;
      t.shifts = {};
    }
  }
  return tail;
}

}  // namespace mirage

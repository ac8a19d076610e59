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

// What the blend is chosen with for `row`: its own out-of-fold levels, else its class's.
std::optional<WaitQuantiles> row_binned(
    const TailRow& row, const std::array<std::optional<WaitDistribution>, kSizeClasses>& binned) {
  if (row.binned) return row.binned;
  const auto& own = binned[size_class_index(row.nodes)];
  if (!own) return std::nullopt;
  return binned_levels(*own, row.planned);
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

}  // namespace

WaitQuantiles binned_levels(const WaitDistribution& d, Seconds planned) {
  WaitQuantiles w{};
  for (std::size_t k = 0; k < w.size(); ++k) w[k] = d.quantile(planned, kWaitLevels[k]);
  return w;
}

std::size_t size_class_index(int nodes) {
  return nodes <= 1 ? 0 : nodes < 8 ? 1 : 2;
}

ClassDistributions fit_class_distributions(const Trace& trace, const ClusterSpec& cluster,
                                           Seconds from, Seconds to, Seconds skip_from,
                                           Seconds skip_to) {
  ClassDistributions out;
  for (std::size_t c = 0; c < kSizeClasses; ++c) {
    WaitDistributionSpec w;
    w.nodes = kSizeClassNodes[c];
    w.time_limit = 0;  // every limit: the jobs judged ask any
    w.from = from;
    w.to = to;
    w.skip_from = skip_from;
    w.skip_to = skip_to;
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
  return classes[cls].binned && classes[cls].model_weight < 1;
}

WaitQuantiles WaitTail::apply(std::size_t cls, const WaitQuantiles& network,
                              Seconds planned) const {
  const WaitClassTail& t = classes[cls];
  const WaitQuantiles mixed =
      blends(cls) ? blend(network, binned_levels(*t.binned, planned), t.model_weight) : network;
  return shift_levels(mixed, t.shifts);
}

WaitTail fit_wait_tail(const std::vector<TailRow>& rows,
                       const std::array<std::optional<WaitDistribution>, kSizeClasses>& binned,
                       bool with_blend, bool with_shifts) {
  WaitTail tail;
  for (std::size_t c = 0; c < kSizeClasses; ++c) {
    WaitClassTail& t = tail.classes[c];
    t.binned = binned[c];
    std::vector<const TailRow*> mine;
    for (const TailRow& r : rows)
      if (size_class_index(r.nodes) == c) mine.push_back(&r);
    t.tail_jobs = mine.size();
    // A class with too few tail jobs of its own is set on the whole tail, each job blended with
    // its own class's distribution.
    if (mine.size() < kMinTailJobs) {
      mine.clear();
      for (const TailRow& r : rows) mine.push_back(&r);
    }
    if (mine.empty()) continue;
    double best = std::numeric_limits<double>::infinity();
    const int steps = with_blend && t.binned ? kWeightSteps : 0;
    for (int s = 0; s <= steps; ++s) {
      const double weight = 1 - static_cast<double>(s) / kWeightSteps;
      std::vector<WaitOutcome> outcomes;
      for (const TailRow* r : mine) {
        const auto own = weight < 1 ? row_binned(*r, binned) : std::nullopt;
        outcomes.push_back({own ? blend(r->network, *own, weight) : r->network, r->wait});
      }
      const LevelShifts shifts = with_shifts ? conformal_shifts(outcomes) : LevelShifts{};
      for (WaitOutcome& o : outcomes) o.predicted = shift_levels(o.predicted, shifts);
      const double loss = pinball_sum(outcomes);
      if (loss < best) {
        best = loss;
        t.model_weight = weight;
        t.shifts = shifts;
      }
    }
  }
  return tail;
}

}  // namespace mirage

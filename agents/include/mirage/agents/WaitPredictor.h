#pragma once
// How long a job submitted now will wait, as quantiles, given the queue it meets and its shape:
// what `quantile` submits by, what `mirage trace waits --check` judges, and what the daemon reads
// from `[policy] wait_distribution`. Two kinds answer: the binned distribution of one size class
// (WaitDistribution.h, a TOML file) and the learned wait model of every size (WaitModel.h, a JSON
// file); read_wait_predictor() tells them apart by the file's first character.
#include <array>
#include <memory>
#include <optional>
#include <string>

#include "mirage/core/ClusterSpec.h"
#include "mirage/core/QueueForecast.h"
#include "mirage/core/QueueSnapshot.h"
#include "mirage/traces/Trace.h"

namespace mirage {

// The levels every predictor states and every check scores.
inline constexpr std::array<double, 7> kWaitLevels{0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95};
using WaitQuantiles = std::array<Seconds, kWaitLevels.size()>;  // never decreasing

class WaitPredictor {
 public:
  virtual ~WaitPredictor() = default;
  // The wait of `job` submitted into `queue` (at its time) at kWaitLevels.
  virtual WaitQuantiles predict(const QueueSnapshot& queue, const ForecastJob& job) const = 0;
  // At any level in (0, 1): between the stated levels, interpolated (beyond them, the nearest).
  virtual Seconds quantile(const QueueSnapshot& queue, const ForecastJob& job, double q) const;
  // Why it cannot speak for a chain of `nodes` nodes, if it cannot (a binned distribution of
  // another size class).
  virtual std::optional<std::string> chain_mismatch(int nodes) const = 0;
  // The window of the log it was fitted on, for the warning when it overlaps the judged one.
  virtual Seconds fitted_from() const = 0;
  virtual Seconds fitted_to() const = 0;
  // How many real jobs it was fitted on.
  virtual std::size_t fitted_jobs() const = 0;
  // One line for people: what it is and what it was fitted on.
  virtual std::string describe() const = 0;
  // Whether a logged job is one whose wait it states for a chain of `chain_nodes` nodes: its
  // intervals are checked on those.
  virtual bool speaks_for(const Job& job, int chain_nodes) const = 0;
  // The wait of a logged job in the queue it met, what the checks on a log ask: as predict() for
  // its shape, unless the predictor reads more of the job (the wait model, its partition or
  // queue).
  virtual WaitQuantiles predict_logged(const QueueSnapshot& queue, const Job& job) const;
  // The wait of a successor submitted to `partition` ("": the cluster's default), what the daemon
  // asks with its campaign's partition: as predict() unless the predictor reads the job's
  // partition (the wait model fitted on a log that gives one).
  virtual WaitQuantiles predict_in_partition(const QueueSnapshot& queue, const ForecastJob& job,
                                             const std::string& partition) const;
  // Why it cannot judge the jobs of `trace`, if it cannot (a model that reads a field the log
  // does not give).
  virtual std::optional<std::string> trace_mismatch(const Trace&) const { return std::nullopt; }
};

// The q-quantile between the stated levels of `w` (linear, clamped to the outer levels).
Seconds interpolate_quantile(const WaitQuantiles& w, double q);

// How often the real wait of the jobs `p` speaks for (a chain of `chain_nodes`), submitted in
// [from, to), fell in its central 50% and 90% intervals (quantiles 25-75% and 5-95%, ends
// included), in the queue the log shows at each submission, ranked by `cluster`'s weights.
struct IntervalCoverage {
  Seconds from = 0, to = 0;
  std::size_t jobs = 0;
  double in_50 = 0;  // shares, 0..1
  double in_90 = 0;
};
IntervalCoverage check_wait_intervals(const WaitPredictor& p, const Trace& trace,
                                      const ClusterSpec& cluster, int chain_nodes, Seconds from,
                                      Seconds to);

// The predictor in the file `path`: a wait model (JSON, `mirage train --agent wait-model`) or a
// binned distribution (TOML, `mirage trace waits`). Throws InputError naming the file, the field
// and what was expected.
std::shared_ptr<const WaitPredictor> read_wait_predictor(const std::string& path);

}  // namespace mirage

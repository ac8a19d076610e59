#pragma once
// How long a chain's successor will wait, as a distribution conditioned on the queue it meets: the
// real waits of the log's jobs of its size class (1 node, 2-7, 8+) asking for a long limit,
// grouped by the wait QueueForecast planned for each in the queue it met (rebuilt from the log at
// its submission: LoggedQueue). The forecast says where in the queue a job stands; the log says how
// long jobs standing there really waited (fair share, limits, reservations and all). The
// `quantile` policy reads it; `mirage eval` checks its intervals on months it was not fitted on.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "mirage/agents/WaitPredictor.h"
#include "mirage/core/ClusterSpec.h"
#include "mirage/core/Job.h"
#include "mirage/traces/Trace.h"

namespace mirage {

// What to fit: the jobs a chain of `nodes` x `gpus_per_node`, `time_limit` a segment, would wait
// like, submitted in [from, to).
struct WaitDistributionSpec {
  int nodes = 1;
  int gpus_per_node = 0;
  Seconds time_limit = 2 * kDay;
  Seconds from = 0;
  Seconds to = 0;
  // The jobs submitted in [skip_from, skip_to) are left out: a cross-fitted fold's own jobs,
  // which the distribution is then judged on (WaitModel.h's out_of_fold_rows). Empty by default.
  Seconds skip_from = 0;
  Seconds skip_to = 0;
  // The jobs fitted ask at least this (set by the fit): half the segment's limit (a short job
  // backfills where a segment cannot), or, where the log's jobs of the size class never ask that
  // much (limits capped below it), their 90th percentile: its longest jobs.
  Seconds min_job_limit = 0;
};

// The jobs a distribution speaks for: the chain's size class, a limit of min_job_limit or more,
// and a real start.
bool speaks_for(const Job& job, const WaitDistributionSpec& spec);
// Whether `job` was submitted in the spec's window and outside its skipped span.
bool fitted_in(const Job& job, const WaitDistributionSpec& spec);

struct WaitDistribution {
  static constexpr int kLevels = 21;  // the waits' quantiles at 0, 5%, ..., 100%
  static constexpr std::size_t kMinJobs = 30;
  struct Bin {
    Seconds planned_up_to = 0;  // for planned waits up to this; the last bin takes any
    std::size_t jobs = 0;
    std::array<Seconds, kLevels> waits{};
  };
  std::string trace;  // where it was fitted, for people
  WaitDistributionSpec spec;
  std::vector<Bin> bins;  // by planned wait, ascending

  std::size_t jobs() const;
  // The q-quantile (q in [0, 1]) of the wait of a job whose planned wait is `planned`,
  // interpolated between the stored levels.
  Seconds quantile(Seconds planned, double q) const;
};

// Why `d` cannot speak for a chain of `nodes` nodes, if it cannot: it was fitted on another size
// class.
std::optional<std::string> chain_mismatch(const WaitDistribution& d, int nodes);

// Fits on the trace's jobs `spec` speaks for, with the queue each met ranked by `cluster`'s
// priority weights. Throws InputError when fewer than kMinJobs are there.
WaitDistribution fit_wait_distribution(const Trace& trace, const ClusterSpec& cluster,
                                       WaitDistributionSpec spec);

// A small TOML a person can read; written atomically. read_ throws InputError naming the file,
// line and key of what is missing or wrong.
void write_wait_distribution(const std::string& path, const WaitDistribution& d);
WaitDistribution read_wait_distribution(const std::string& path);

// "412 real jobs of 8+ nodes with a limit of 24h or more, submitted 2022-11-01 .. 2023-02-01, in
// 8 groups by planned wait": for messages.
std::string describe(const WaitDistribution& d);

// The distribution as a WaitPredictor: the queue read through the forecast's planned wait of the
// job (to the limits), the bin of that planned wait answering.
class BinnedWaitPredictor final : public WaitPredictor {
 public:
  explicit BinnedWaitPredictor(WaitDistribution d) : d_(std::move(d)) {}
  WaitQuantiles predict(const QueueSnapshot& queue, const ForecastJob& job) const override;
  Seconds quantile(const QueueSnapshot& queue, const ForecastJob& job, double q) const override;
  std::optional<std::string> chain_mismatch(int nodes) const override {
    return mirage::chain_mismatch(d_, nodes);
  }
  Seconds fitted_from() const override { return d_.spec.from; }
  Seconds fitted_to() const override { return d_.spec.to; }
  std::size_t fitted_jobs() const override { return d_.jobs(); }
  std::string describe() const override { return mirage::describe(d_); }
  bool speaks_for(const Job& job, int) const override { return mirage::speaks_for(job, d_.spec); }
  const WaitDistribution& distribution() const { return d_; }

 private:
  WaitDistribution d_;
};

}  // namespace mirage

#pragma once
// The baseline policies every learned agent is measured against. Each but `reactive` has one risk
// knob, a lead (POLICY@LEAD, e.g. average@2h): how much earlier than its own rule it submits.
// More lead, less interruption and more overlap; a negative lead submits later.
#include <memory>
#include <string>

#include "mirage/agents/WaitPredictor.h"
#include "mirage/core/Policy.h"
#include "mirage/core/QueueForecast.h"

namespace mirage {

// Submits only when the predecessor ends (the episode's fallback does it): what chaining with
// `sbatch` at the end of the job script, or --dependency=afterany, amounts to.
class ReactivePolicy final : public Policy {
 public:
  std::string name() const override { return "reactive"; }
  Decision decide(const Observation&) override { return Decision::wait(); }
  bool reads_window() const override { return false; }
  bool reads_queue() const override { return false; }
};

// Submits once the predecessor's remaining time falls below the mean queue wait of the last
// 100 started jobs (Mirage's `average` baseline), plus the lead.
class AveragePolicy final : public Policy {
 public:
  explicit AveragePolicy(Seconds lead = 0) : lead_(lead) {}
  std::string name() const override;
  Decision decide(const Observation& obs) override;
  bool reads_window() const override { return false; }
  bool reads_queue() const override { return false; }

 private:
  Seconds lead_;
};

// Submits once the predecessor's remaining time falls to a fixed lead: what chains built with
// `sbatch --dependency=after:<pred>+<limit - lead>` do today, whatever the queue.
class StaticPolicy final : public Policy {
 public:
  explicit StaticPolicy(Seconds lead) : lead_(lead) {}
  std::string name() const override;
  Decision decide(const Observation& obs) override;
  bool reads_window() const override { return false; }
  bool reads_queue() const override { return false; }

 private:
  Seconds lead_;
};

// Submits once the successor's planned start (QueueForecast: the queue planned as backfill
// plans it, behind every pending job) reaches the predecessor's end: a queue-aware `average`.
// `forecast-recent`: the same with the other jobs running as the recently ended ones ran. The lead
// is a margin on the planned wait.
class ForecastPolicy final : public Policy {
 public:
  explicit ForecastPolicy(RuntimeGuess runtimes = RuntimeGuess::limits(), Seconds lead = 0)
      : runtimes_(runtimes), lead_(lead) {}
  std::string name() const override;
  Decision decide(const Observation& obs) override;
  bool reads_window() const override { return false; }

 private:
  RuntimeGuess runtimes_;
  Seconds lead_;
};

// Submits once Slurm's own estimate of the successor's wait (its will-run test, what `sbatch
// --test-only` prints; in simulation the simulator's plan of the same) reaches the predecessor's
// remaining time less the lead. Slurm plans that test among the running jobs alone, so the
// estimate is a floor on the wait (docs/results/slurm-estimate.md). Without an estimate it waits
// (the fallback submits).
class SlurmEstimatePolicy final : public Policy {
 public:
  explicit SlurmEstimatePolicy(Seconds lead = 0) : lead_(lead) {}
  std::string name() const override;
  Decision decide(const Observation& obs) override;
  bool reads_window() const override { return false; }
  bool reads_queue() const override { return false; }
  bool reads_slurm_estimate() const override { return true; }

 private:
  Seconds lead_;
};

// Submits once the predecessor's remaining time falls to the q-quantile of the successor's wait,
// read from a WaitPredictor (the binned distribution: the log's real waits of jobs that stood in
// the queue where the forecast places the successor now; or the learned wait model): the
// newsvendor rule. With an hour of interruption costing
// c_i and an hour of overlap c_o, q = c_i / (c_i + c_o) minimises the expected cost of a
// boundary; q is the risk knob (quantile@0.8: submit earlier, less interruption, more overlap).
class QuantilePolicy final : public Policy {
 public:
  static constexpr double kDefaultLevel = 0.5;  // interruption and overlap cost alike
  explicit QuantilePolicy(std::shared_ptr<const WaitPredictor> waits, double level = kDefaultLevel);
  std::string name() const override;
  Decision decide(const Observation& obs) override;
  bool reads_window() const override { return false; }

 private:
  std::shared_ptr<const WaitPredictor> waits_;
  double level_;
};

// A lead as POLICY@LEAD writes it: "2h", "-30m", "0".
std::string lead_text(Seconds lead);
// "average", "average@2h", "average@-30m": a family's name with its lead (none when 0).
std::string with_lead(std::string_view family, Seconds lead);

}  // namespace mirage

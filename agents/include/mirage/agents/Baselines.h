#pragma once
// The baseline policies every learned agent is measured against.
#include "mirage/core/Policy.h"
#include "mirage/core/QueueForecast.h"

namespace mirage {

// Submits only when the predecessor ends (the episode's fallback does it): what chaining with
// `sbatch` at the end of the job script, or --dependency=afterany, amounts to.
class ReactivePolicy final : public Policy {
 public:
  std::string name() const override { return "reactive"; }
  Decision decide(const Observation&) override { return Decision::wait(); }
};

// Submits once the predecessor's remaining time falls below the mean queue wait of the last
// 100 started jobs (Mirage's `average` baseline).
class AveragePolicy final : public Policy {
 public:
  std::string name() const override { return "average"; }
  Decision decide(const Observation& obs) override;
};

// Submits once the successor's planned start (QueueForecast: the queue planned as backfill
// plans it, behind every pending job) reaches the predecessor's end: a queue-aware `average`.
// `forecast-recent`: the same with the other jobs running as the recently ended ones ran.
class ForecastPolicy final : public Policy {
 public:
  explicit ForecastPolicy(RuntimeGuess runtimes = RuntimeGuess::limits()) : runtimes_(runtimes) {}
  std::string name() const override { return runtimes_.recent ? "forecast-recent" : "forecast"; }
  Decision decide(const Observation& obs) override;

 private:
  RuntimeGuess runtimes_;
};

}  // namespace mirage

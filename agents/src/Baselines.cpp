#include "mirage/agents/Baselines.h"

#include "mirage/core/QueueForecast.h"

namespace mirage {

Decision AveragePolicy::decide(const Observation& obs) {
  if (!obs.campaign.predecessor_running || obs.latest.recent_starts == 0) return Decision::wait();
  const double remaining = static_cast<double>(obs.campaign.predecessor_remaining());
  return remaining <= obs.latest.recent_mean_wait_s ? Decision::submit() : Decision::wait();
}

Decision ForecastPolicy::decide(const Observation& obs) {
  if (!obs.campaign.predecessor_running) return Decision::wait();
  return QueueForecast::plan_successor(obs, runtimes_).wait >= obs.campaign.predecessor_remaining()
             ? Decision::submit()
             : Decision::wait();
}

}  // namespace mirage

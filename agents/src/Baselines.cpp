#include "mirage/agents/Baselines.h"

#include <string>

#include "mirage/core/QueueForecast.h"
#include "mirage/core/Time.h"

namespace mirage {

Decision AveragePolicy::decide(const Observation& obs) {
  if (!obs.campaign.predecessor_running || obs.latest.recent_starts == 0) return Decision::wait();
  const Seconds remaining = obs.campaign.predecessor_remaining();
  if (static_cast<double>(remaining) > obs.latest.recent_mean_wait_s) return Decision::wait();
  Decision d = Decision::submit();
  d.reason = "predecessor ends in " + format_short_duration(remaining) + "; the last " +
             std::to_string(obs.latest.recent_starts) + " jobs to start waited " +
             format_short_duration(static_cast<Seconds>(obs.latest.recent_mean_wait_s)) +
             " on average";
  return d;
}

Decision ForecastPolicy::decide(const Observation& obs) {
  if (!obs.campaign.predecessor_running) return Decision::wait();
  const Seconds remaining = obs.campaign.predecessor_remaining();
  const Seconds wait = QueueForecast::plan_successor(obs, runtimes_).wait;
  if (wait < remaining) return Decision::wait();
  Decision d = Decision::submit();
  d.reason = "predecessor ends in " + format_short_duration(remaining) + "; " +
             std::to_string(obs.campaign.successor_nodes) + "-node wait estimated " +
             format_short_duration(wait);
  return d;
}

}  // namespace mirage

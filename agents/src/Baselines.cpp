#include "mirage/agents/Baselines.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "mirage/core/QueueForecast.h"
#include "mirage/core/Time.h"

namespace mirage {

std::string lead_text(Seconds lead) {
  return lead == 0 ? std::string("0") : format_short_duration(lead);
}

std::string with_lead(std::string_view family, Seconds lead) {
  return lead == 0 ? std::string(family) : std::string(family) + "@" + lead_text(lead);
}

std::string AveragePolicy::name() const {
  return with_lead("average", lead_);
}

Decision AveragePolicy::decide(const Observation& obs) {
  if (!obs.campaign.predecessor_running || obs.latest.recent_starts == 0) return Decision::wait();
  const Seconds remaining = obs.campaign.predecessor_remaining();
  if (static_cast<double>(remaining) > obs.latest.recent_mean_wait_s + static_cast<double>(lead_))
    return Decision::wait();
  Decision d = Decision::submit();
  d.reason = "predecessor ends in " + format_short_duration(remaining) + "; the last " +
             std::to_string(obs.latest.recent_starts) + " jobs to start waited " +
             format_short_duration(static_cast<Seconds>(obs.latest.recent_mean_wait_s)) +
             " on average" + (lead_ != 0 ? ", lead " + format_short_duration(lead_) : "");
  return d;
}

std::string StaticPolicy::name() const {
  return "static@" + lead_text(lead_);  // "static" alone is another lead (an hour)
}

Decision StaticPolicy::decide(const Observation& obs) {
  if (!obs.campaign.predecessor_running) return Decision::wait();
  const Seconds remaining = obs.campaign.predecessor_remaining();
  if (remaining > lead_) return Decision::wait();
  Decision d = Decision::submit();
  d.reason = "predecessor ends in " + format_short_duration(remaining) + ", within the lead of " +
             format_short_duration(lead_);
  return d;
}

std::string ForecastPolicy::name() const {
  return with_lead(runtimes_.recent ? "forecast-recent" : "forecast", lead_);
}

Decision ForecastPolicy::decide(const Observation& obs) {
  if (!obs.campaign.predecessor_running) return Decision::wait();
  const Seconds remaining = obs.campaign.predecessor_remaining();
  const Seconds wait = QueueForecast::plan_successor(obs, runtimes_).wait;
  if (wait + lead_ < remaining) return Decision::wait();
  Decision d = Decision::submit();
  d.reason = "predecessor ends in " + format_short_duration(remaining) + "; " +
             std::to_string(obs.campaign.successor_nodes) + "-node wait estimated " +
             format_short_duration(wait);
  return d;
}

std::string SlurmEstimatePolicy::name() const {
  return with_lead("slurm-estimate", lead_);
}

Decision SlurmEstimatePolicy::decide(const Observation& obs) {
  const CampaignView& c = obs.campaign;
  if (!c.predecessor_running || c.slurm_estimated_wait < 0) return Decision::wait();
  const Seconds remaining = c.predecessor_remaining();
  if (c.slurm_estimated_wait + lead_ < remaining) return Decision::wait();
  Decision d = Decision::submit();
  d.reason = "predecessor ends in " + format_short_duration(remaining) + "; Slurm estimates a " +
             std::to_string(c.successor_nodes) + "-node wait of " +
             format_short_duration(c.slurm_estimated_wait);
  return d;
}

QuantilePolicy::QuantilePolicy(std::shared_ptr<const WaitPredictor> waits, double level)
    : waits_(std::move(waits)), level_(level) {
  if (!waits_) throw std::invalid_argument("QuantilePolicy needs a wait distribution");
  if (!(level_ > 0 && level_ < 1))
    throw std::invalid_argument("QuantilePolicy: the level must lie between 0 and 1");
}

std::string QuantilePolicy::name() const {
  return level_ == kDefaultLevel ? std::string("quantile") : fmt::format("quantile@{:g}", level_);
}

Decision QuantilePolicy::decide(const Observation& obs) {
  if (!obs.campaign.predecessor_running) return Decision::wait();
  const Seconds remaining = obs.campaign.predecessor_remaining();
  const Seconds wait = waits_->quantile(obs.latest, QueueForecast::successor(obs), level_);
  if (wait < remaining) return Decision::wait();
  Decision d = Decision::submit();
  d.reason = fmt::format(
      "predecessor ends in {}; the successor waits {} or less in {:g}% of cases, as the log's "
      "jobs in a queue like this one did",
      format_short_duration(remaining), format_short_duration(wait), level_ * 100);
  return d;
}

}  // namespace mirage

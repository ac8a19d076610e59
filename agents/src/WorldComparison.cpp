#include "mirage/agents/WorldComparison.h"

#include <fmt/format.h>

#include <algorithm>

namespace mirage {

bool worlds_disagree(double replay, double logged, double floor) {
  const double a = std::max(replay, floor), b = std::max(logged, floor);
  return std::max(a, b) > kWorldsDisagreeFactor * std::min(a, b);
}

std::optional<std::string> why_no_figures(const EvalReport& r) {
  if (r.world == SuccessorWait::kLogged && !r.log_has_starts)
    return "the log records no start times, so it has no real waits";
  if (r.world == SuccessorWait::kLogged && r.logged_shape_jobs == 0)
    return "the log has no real job of the chain's shape (" + r.logged_description + ")";
  if (r.sample_times.empty())
    return fmt::format(
        "no sample left{}",
        r.dropped_few_logged_jobs > 0
            ? fmt::format(" ({} dropped: too few real jobs of the chain's shape near a segment's "
                          "submission; {} such jobs in the whole log)",
                          r.dropped_few_logged_jobs, r.logged_shape_jobs)
            : std::string());
  return std::nullopt;
}

std::optional<std::string> world_lacks_data(const EvalReport& r) {
  const auto why = why_no_figures(r);
  if (!why) return std::nullopt;
  return fmt::format("{} world: no figures: {}", to_string(r.world), *why);
}

std::vector<WorldRow> compare_worlds(const EvalReport& replay, const EvalReport& logged,
                                     const std::vector<std::string>& order) {
  std::vector<WorldRow> rows;
  for (const auto& name : order) {
    WorldRow row;
    row.policy = name;
    row.replay = replay.metrics.at(name).overall;
    row.logged = logged.metrics.at(name).overall;
    if (const auto it = replay.campaign.find(name); it != replay.campaign.end())
      row.replay_campaign = &it->second;
    if (const auto it = logged.campaign.find(name); it != logged.campaign.end())
      row.logged_campaign = &it->second;
    if (row.replay_campaign && row.logged_campaign && row.replay_campaign->compared > 0 &&
        row.logged_campaign->compared > 0)
      row.disagree =
          worlds_disagree(row.replay_campaign->idle_gpu_h, row.logged_campaign->idle_gpu_h) ||
          worlds_disagree(row.replay_campaign->overlap_gpu_h, row.logged_campaign->overlap_gpu_h);
    else
      row.disagree =
          worlds_disagree(row.replay.mean_interruption_h, row.logged.mean_interruption_h) ||
          worlds_disagree(row.replay.mean_overlap_h, row.logged.mean_overlap_h);
    rows.push_back(row);
  }
  return rows;
}

std::string format_world_table(const EvalReport& replay, const EvalReport& logged,
                               const std::vector<std::string>& order, std::size_t width,
                               const std::map<std::string, std::pair<bool, bool>>& frontier) {
  std::string out = fmt::format("\nboth worlds: successor waits from the replay and from the log ");
  for (const EvalReport* r : {&replay, &logged})
    if (const auto lacks = world_lacks_data(*r)) return out + "\n  " + *lacks + "\n";
  const std::vector<WorldRow> rows = compare_worlds(replay, logged, order);
  const bool campaign =
      !rows.empty() && rows.front().replay_campaign && rows.front().logged_campaign &&
      rows.front().replay_campaign->compared > 0 && rows.front().logged_campaign->compared > 0;
  out += fmt::format(
      "({} samples; finished r/l: boundaries scored in each, the others censored; ! : they "
      "differ by more than {}x on {}{})\n",
      logged.sample_times.size(), kWorldsDisagreeFactor,
      campaign ? "idle or overlap GPU-h per campaign" : "mean interruption or overlap",
      frontier.empty() ? "" : "; * : on that world's frontier");
  if (!logged.logged_pooling.empty()) out += "  " + logged.logged_pooling + "\n";
  if (!campaign && !rows.empty() && rows.front().replay_campaign)
    out +=
        "  (whole campaigns: no start time where every policy finished its campaign in both "
        "worlds; the figures are per boundary)\n";
  out += fmt::format("  {:<{}} {:>15} {:>12} {:>12} {:>12} {:>12}", "policy", width, "finished r/l",
                     "replay int.", "logged int.", "replay ovl.", "logged ovl.");
  if (campaign)
    out += fmt::format(" {:>12} {:>12} {:>12} {:>12}", "replay idle", "logged idle", "replay ovl.",
                       "logged ovl.");
  out += frontier.empty() ? "\n" : fmt::format(" {:>8}\n", "frontier");
  for (const WorldRow& r : rows) {
    out += fmt::format("  {:<{}} {:>15} {:>10.2f} h {:>10.2f} h {:>10.2f} h {:>10.2f} h", r.policy,
                       width, fmt::format("{}/{}", r.replay.boundaries, r.logged.boundaries),
                       r.replay.mean_interruption_h, r.logged.mean_interruption_h,
                       r.replay.mean_overlap_h, r.logged.mean_overlap_h);
    if (campaign)
      out += fmt::format(" {:>12.1f} {:>12.1f} {:>12.1f} {:>12.1f}", r.replay_campaign->idle_gpu_h,
                         r.logged_campaign->idle_gpu_h, r.replay_campaign->overlap_gpu_h,
                         r.logged_campaign->overlap_gpu_h);
    if (!frontier.empty()) {
      const auto it = frontier.find(r.policy);
      const auto [on_replay, on_logged] =
          it == frontier.end() ? std::pair<bool, bool>{false, false} : it->second;
      out +=
          fmt::format(" {:>8}", fmt::format("{}/{}", on_replay ? "*" : "-", on_logged ? "*" : "-"));
    }
    out += r.disagree ? "  !\n" : "\n";
  }
  return out;
}

}  // namespace mirage

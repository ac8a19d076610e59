#pragma once
// The same policies scored in two worlds side by side: the calibrated replay, and the log's real
// waits (LoggedWaits). Where the two disagree, a ranking rests on the instrument, not the cluster.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mirage/agents/Evaluation.h"

namespace mirage {

// Two figures disagree when the larger is more than this times the smaller.
inline constexpr double kWorldsDisagreeFactor = 1.5;
// Figures below this many hours count as this much: 0.01 h against 0.03 h is no disagreement.
inline constexpr double kWorldsFloorH = 0.1;

bool worlds_disagree(double replay, double logged, double floor = kWorldsFloorH);

// Why a world's report has no figure to print, in one line ("WORLD world: no figures: WHY");
// none when it has. why_no_figures gives the WHY alone.
std::optional<std::string> world_lacks_data(const EvalReport& r);
std::optional<std::string> why_no_figures(const EvalReport& r);

struct WorldRow {
  std::string policy;
  BucketMetrics replay, logged;                      // overall
  const CampaignMetrics* replay_campaign = nullptr;  // with --work
  const CampaignMetrics* logged_campaign = nullptr;
  bool disagree = false;  // on mean interruption or overlap (with --work: idle or overlap GPU-h)
};

// One row per policy of `order`, both reports over the same samples (keep_samples).
std::vector<WorldRow> compare_worlds(const EvalReport& replay, const EvalReport& logged,
                                     const std::vector<std::string>& order);

// The side-by-side table; `frontier` marks (policy -> on the replay's, on the logged world's
// Pareto frontier) add a column. Where a world lacks data, one line says so instead.
std::string format_world_table(const EvalReport& replay, const EvalReport& logged,
                               const std::vector<std::string>& order, std::size_t width,
                               const std::map<std::string, std::pair<bool, bool>>& frontier = {});

}  // namespace mirage

// User limits: the per-user limit a log shows (Calibration.h).

#include <algorithm>
#include <vector>

#include "CalibrationParts.h"

namespace mirage::calibration {

namespace {

// The limit a log shows: the most any user reached, when at least `min_users` reached it.
int limit_signature(const std::vector<int>& per_user_max, int min_users, int& at_limit) {
  const int most =
      per_user_max.empty() ? 0 : *std::max_element(per_user_max.begin(), per_user_max.end());
  at_limit = static_cast<int>(std::count(per_user_max.begin(), per_user_max.end(), most));
  return most >= 1 && at_limit >= min_users ? most : 0;
}

}  // namespace

void infer_limits(const LogView& log, const CalibrationSettings& settings, Calibration& c) {
  std::vector<int> most_jobs, most_nodes;
  for (const auto& [user, steps] : log.user_jobs) most_jobs.push_back(steps.most());
  for (const auto& [user, steps] : log.user_nodes) most_nodes.push_back(steps.most());
  c.users = static_cast<int>(log.user_jobs.size());
  c.user_limits.max_running_jobs =
      limit_signature(most_jobs, settings.limit_min_users, c.users_at_job_limit);
  c.user_limits.max_running_nodes =
      limit_signature(most_nodes, settings.limit_min_users, c.users_at_node_limit);
}

}  // namespace mirage::calibration

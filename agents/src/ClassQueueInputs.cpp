#include "mirage/agents/ClassQueueInputs.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "mirage/agents/WaitTail.h"
#include "mirage/core/FeatureEncoder.h"

namespace mirage {
namespace {

// The nearest-rank `share` quantile of `v` (reordered), through time_feature; 0 if empty.
float waited_quantile(std::vector<Seconds>& v, double share) {
  if (v.empty()) return 0.f;
  const auto rank = static_cast<std::size_t>(std::ceil(share * static_cast<double>(v.size())));
  const auto at = v.begin() + static_cast<std::ptrdiff_t>(std::max<std::size_t>(rank, 1) - 1);
  std::nth_element(v.begin(), at, v.end());
  return FeatureEncoder::time_feature(*at);
}

// Median, 90th percentile and count (a share of `machine` nodes) of `waited`.
void describe(std::vector<Seconds>& waited, double machine, float* out) {
  out[0] = waited_quantile(waited, 0.5);
  out[1] = waited_quantile(waited, 0.9);
  out[2] = static_cast<float>(static_cast<double>(waited.size()) / machine);
}

}  // namespace

std::array<float, kClassQueueInputs> class_queue_inputs(const QueueSnapshot& queue,
                                                        int job_nodes) {
  const std::size_t own = size_class_index(job_nodes);
  const double machine = std::max(1, queue.total_nodes);
  std::array<float, kClassQueueInputs> x{};
  std::vector<Seconds> waited;
  for (const RunningJobView& r : queue.running)
    if (size_class_index(r.nodes) == own) waited.push_back(r.waited);
  describe(waited, machine, x.data());
  waited.clear();
  for (const PendingJobView& p : queue.pending)
    if (size_class_index(p.nodes) == own) waited.push_back(p.waited);
  describe(waited, machine, x.data() + 3);
  return x;
}

}  // namespace mirage

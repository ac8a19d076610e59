#include "mirage/simulator/HiddenWork.h"

#include <algorithm>
#include <utility>

namespace mirage {

std::vector<SimJobSpec> hidden_work(const std::vector<CapacityStep>& steps) {
  std::vector<SimJobSpec> jobs;
  auto emit = [&](int nodes, Seconds from, Seconds to) {
    SimJobSpec s;
    s.submit = from;
    s.runtime = s.time_limit = to - from;
    s.nodes = nodes;
    jobs.push_back(s);
  };
  std::vector<std::pair<int, Seconds>> open;  // nodes, since: a stack, latest on top
  int level = 0;
  for (const CapacityStep& step : steps) {
    if (step.unavailable_nodes > level) {
      open.emplace_back(step.unavailable_nodes - level, step.from);
    } else {
      for (int ending = level - step.unavailable_nodes; ending > 0;) {
        auto& [nodes, since] = open.back();
        const int n = std::min(ending, nodes);
        if (step.from > since) emit(n, since, step.from);
        nodes -= n;
        ending -= n;
        if (nodes == 0) open.pop_back();
      }
    }
    level = step.unavailable_nodes;
  }
  for (const auto& [nodes, since] : open) emit(nodes, since, since + kHiddenWorkOpenEnded);
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const SimJobSpec& a, const SimJobSpec& b) { return a.submit < b.submit; });
  return jobs;
}

}  // namespace mirage

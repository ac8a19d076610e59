// Throttled arrays: jobs submitted together that the log never ran all at once (Calibration.h).

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "CalibrationParts.h"

namespace mirage::calibration {

namespace {

// The most of `members` the log ran at once (a member that ran no time running for a second).
int most_running_at_once(const std::vector<const Job*>& members) {
  std::vector<std::pair<Seconds, int>> events;
  for (const Job* j : members) {
    events.emplace_back(j->start, 1);
    events.emplace_back(std::max(j->end, j->start + 1), -1);
  }
  return Steps::from_events(std::move(events)).most();
}

}  // namespace

// Throttled arrays (Calibration.h): each member that waited, after the first K the log started,
// with the member whose end freed its slot: of the earlier-started members that had ended by its
// start and freed no other's slot, the one that ended last (with equal runs, the member started
// K before it). Never one still running when it started: the log would contradict the replay.
// Added to `out` in place of any other candidate of the member's.
void add_throttled_array_members(const LogView& log, const CalibrationSettings& settings,
                                 DependencyCandidates& out) {
  const Seconds step = std::max<Seconds>(1, settings.sample_every);
  using Request = std::tuple<std::string, Seconds, int, int, Seconds>;
  std::map<Request, std::vector<const Job*>> together;
  for (const Job* j : log.jobs)
    if (!j->user.empty())
      together[{j->user, j->submit, j->nodes, j->gpus_per_node, j->time_limit}].push_back(j);
  for (auto& [request, members] : together) {
    if (members.size() < std::max<std::size_t>(2, settings.array_min_members)) continue;
    const auto throttle = static_cast<std::size_t>(most_running_at_once(members));
    if (throttle >= members.size()) continue;
    // In the order the log started them: every dependency then points to an earlier start, as
    // the other candidates' do, and none can close a cycle.
    std::sort(members.begin(), members.end(), [](const Job* a, const Job* b) {
      return a->start != b->start ? a->start < b->start : a->id < b->id;
    });
    std::vector<const Job*> by_end = members;
    std::sort(by_end.begin(), by_end.end(), [](const Job* a, const Job* b) {
      return a->end != b->end ? a->end < b->end : a->id < b->id;
    });
    const auto later_end = [](const Job* a, const Job* b) { return a->end < b->end; };
    std::vector<const Job*> freed;  // a max-heap by end: ended, and no slot taken over yet
    std::size_t ended = 0;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const Job* b = members[i];
      while (ended < by_end.size() && by_end[ended]->end <= b->start) {
        if (by_end[ended]->start < b->start) {
          freed.push_back(by_end[ended]);
          std::push_heap(freed.begin(), freed.end(), later_end);
        }
        ++ended;
      }
      if (i < throttle || freed.empty() || b->start - b->submit < step) continue;
      std::pop_heap(freed.begin(), freed.end(), later_end);
      out[b] = WaitedFor{freed.back(), true};
      freed.pop_back();
    }
  }
}

}  // namespace mirage::calibration

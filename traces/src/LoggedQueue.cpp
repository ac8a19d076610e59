#include "mirage/traces/LoggedQueue.h"

#include <algorithm>
#include <cstddef>
#include <deque>
#include <stdexcept>

namespace mirage {
namespace {

// Members of a set of job indices, each removable in O(1) by swapping with the last.
class IndexSet {
 public:
  explicit IndexSet(std::size_t capacity) : position_(capacity, kAbsent) {}
  void insert(std::size_t j) {
    position_[j] = members_.size();
    members_.push_back(j);
  }
  void erase(std::size_t j) {
    const std::size_t at = position_[j];
    if (at == kAbsent) return;
    members_[at] = members_.back();
    position_[members_[at]] = at;
    members_.pop_back();
    position_[j] = kAbsent;
  }
  const std::vector<std::size_t>& members() const { return members_; }

 private:
  static constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);
  std::vector<std::size_t> members_;
  std::vector<std::size_t> position_;
};

// One job's events at one instant come in its own order (a job may be submitted, start and end in
// the same second); snapshots are taken after every event before their moment, so the order
// between jobs does not matter.
enum class EventKind { kSubmit, kStart, kEnd };

struct Event {
  Seconds time;
  EventKind kind;
  std::size_t job;
};

}  // namespace

void for_each_logged_queue(const std::vector<Job>& jobs, const std::vector<Seconds>& times,
                           int total_nodes, int gpus_per_node, const PriorityParameters& priority,
                           const std::function<void(std::size_t, const QueueSnapshot&)>& visit) {
  if (!std::is_sorted(times.begin(), times.end()))
    throw std::invalid_argument("for_each_logged_queue: the moments must be ascending");
  std::vector<Event> events;
  events.reserve(jobs.size() * 3);
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const Job& job = jobs[j];
    if (!job.started()) continue;
    events.push_back({job.submit, EventKind::kSubmit, j});
    events.push_back({job.start, EventKind::kStart, j});
    if (job.end != kUnknownTime) events.push_back({job.end, EventKind::kEnd, j});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.time != b.time ? a.time < b.time : a.kind < b.kind;
  });

  IndexSet pending(jobs.size()), running(jobs.size());
  std::deque<Seconds> recent_waits;  // of the last kRecentStarts starts
  Seconds recent_sum = 0;
  std::deque<float> recent_shares;  // of the last kRecentEnds ends, oldest first
  std::size_t next = 0;
  for (std::size_t i = 0; i < times.size(); ++i) {
    const Seconds t = times[i];
    for (; next < events.size() && events[next].time < t; ++next) {
      const Event& e = events[next];
      const Job& job = jobs[e.job];
      switch (e.kind) {
        case EventKind::kSubmit: pending.insert(e.job); break;
        case EventKind::kStart:
          pending.erase(e.job);
          running.insert(e.job);
          recent_waits.push_back(job.wait());
          recent_sum += job.wait();
          if (recent_waits.size() > static_cast<std::size_t>(QueueSnapshot::kRecentStarts)) {
            recent_sum -= recent_waits.front();
            recent_waits.pop_front();
          }
          break;
        case EventKind::kEnd:
          running.erase(e.job);
          recent_shares.push_back(
              QueueSnapshot::runtime_share(job.end - job.start, job.time_limit));
          if (recent_shares.size() > static_cast<std::size_t>(QueueSnapshot::kRecentEnds))
            recent_shares.pop_front();
          break;
      }
    }
    QueueSnapshot q;
    q.time = t;
    q.total_nodes = total_nodes;
    q.gpus_per_node = gpus_per_node;
    q.priority = priority;
    for (const std::size_t j : pending.members())
      q.pending.push_back(
          {jobs[j].time_limit, jobs[j].nodes, jobs[j].gpus_per_node, t - jobs[j].submit});
    for (const std::size_t j : running.members())
      q.running.push_back({jobs[j].time_limit, jobs[j].nodes, jobs[j].gpus_per_node, jobs[j].wait(),
                           t - jobs[j].start});
    q.recent_starts = static_cast<int>(recent_waits.size());
    q.recent_mean_wait_s =
        recent_waits.empty() ? 0.0 : static_cast<double>(recent_sum) / recent_waits.size();
    q.recent_runtime_shares.assign(recent_shares.begin(), recent_shares.end());
    visit(i, q);
  }
}

}  // namespace mirage

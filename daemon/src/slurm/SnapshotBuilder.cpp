#include "mirage/daemon/slurm/SnapshotBuilder.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace mirage::daemon {
namespace {

// The jobs with an event (`time_of`: its time, kUnknownTime for none) at or past `watermark`,
// less those at it that were `counted` already; in order of that time, then of id.
template <typename TimeOf, typename Counted>
std::vector<const SlurmJob*> unseen(const std::vector<SlurmJob>& jobs, Seconds watermark,
                                    TimeOf time_of, Counted counted) {
  std::vector<std::pair<Seconds, const SlurmJob*>> timed;  // each event's time read once
  for (const auto& j : jobs) {
    const Seconds t = time_of(j);
    if (t == kUnknownTime || t < watermark || (t == watermark && counted(j.id))) continue;
    timed.emplace_back(t, &j);
  }
  std::sort(timed.begin(), timed.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second->id < b.second->id;
  });
  std::vector<const SlurmJob*> fresh;
  fresh.reserve(timed.size());
  for (const auto& [t, j] : timed) fresh.push_back(j);
  return fresh;
}

}  // namespace

bool SnapshotBuilder::in_partition(const SlurmJob& job) const {
  if (partition_.empty()) return true;
  // A pending job may name several partitions: "gpu,debug".
  std::string_view list = job.partition;
  while (!list.empty()) {
    const auto cut = list.find(',');
    if (list.substr(0, cut) == partition_) return true;
    if (cut == std::string_view::npos) break;
    list.remove_prefix(cut + 1);
  }
  return false;
}

bool SnapshotBuilder::observe(const std::vector<SlurmJob>& jobs) {
  const bool started = observe_starts(jobs);
  return observe_ends(jobs) || started;
}

bool SnapshotBuilder::observe_ends(const std::vector<SlurmJob>& jobs) {
  const auto fresh = unseen(
      jobs, end_watermark_,
      [&](const SlurmJob& j) {
        // A job cancelled before it started has no runtime to learn from (Slurm gives it a
        // start equal to its end).
        return is_finished(j.state) && j.start != kUnknownTime && j.end != kUnknownTime &&
                       j.end > j.start && in_partition(j)
                   ? j.end
                   : kUnknownTime;
      },
      [&](JobId id) {
        return std::any_of(ended_.begin(), ended_.end(),
                           [&](const RecentEnd& r) { return r.id == id; });
      });
  for (const SlurmJob* j : fresh) {
    ended_.push_back(
        {j->id, j->end, QueueSnapshot::runtime_share(j->end - j->start, j->time_limit)});
    if (ended_.size() > static_cast<std::size_t>(QueueSnapshot::kRecentEnds)) ended_.pop_front();
    end_watermark_ = std::max(end_watermark_, j->end);
  }
  return !fresh.empty();
}

std::vector<float> SnapshotBuilder::recent_runtime_shares() const {
  std::vector<float> out;
  out.reserve(ended_.size());
  for (const auto& e : ended_) out.push_back(e.share);
  return out;
}

bool SnapshotBuilder::observe_starts(const std::vector<SlurmJob>& jobs) {
  const auto fresh = unseen(
      jobs, watermark_,
      [&](const SlurmJob& j) {
        return j.submit != kUnknownTime && in_partition(j) ? j.start : kUnknownTime;
      },
      [&](JobId id) {
        return std::any_of(recent_.begin(), recent_.end(),
                           [&](const RecentStart& r) { return r.id == id; });
      });
  if (fresh.empty()) return false;
  for (const SlurmJob* j : fresh) {
    const Seconds wait = std::max<Seconds>(0, j->start - j->submit);
    recent_.push_back({j->id, j->start, wait});
    wait_sum_ += wait;
    if (recent_.size() > static_cast<std::size_t>(QueueSnapshot::kRecentStarts)) {
      wait_sum_ -= recent_.front().wait;
      recent_.pop_front();
    }
    watermark_ = std::max(watermark_, j->start);
  }
  return true;
}

double SnapshotBuilder::recent_mean_wait() const {
  return recent_.empty() ? 0.0
                         : static_cast<double>(wait_sum_) / static_cast<double>(recent_.size());
}

QueueSnapshot SnapshotBuilder::build(const std::vector<SlurmJob>& jobs, Seconds now) const {
  QueueSnapshot q;
  q.time = now;
  q.total_nodes = total_nodes_;
  q.gpus_per_node = gpus_per_node_;
  q.priority = priority_;
  q.unavailable_nodes = unavailable_nodes_;
  q.user_limits = user_limits_;
  q.user_limits_by_qos = limits_by_qos_;
  for (const NodeReservation& r : reservations_)
    if (r.start > now) q.reservations.push_back(r);
  for (const auto& j : jobs) {
    if (!in_partition(j)) continue;
    if (j.state == SlurmJobState::kPending) {
      PendingJobView p;
      p.time_limit = j.time_limit;
      p.nodes = j.nodes;
      p.gpus_per_node = j.gpus_per_node;
      p.waited = std::max<Seconds>(0, now - j.submit);
      p.priority = j.priority;
      p.qos = j.qos;
      const bool reported = j.priority != kUnknownPriority;
      p.state =
          classify_pending_reason(j.reason, reported ? std::optional(j.priority) : std::nullopt);
      // Age accrues from accrue_time where Slurm reports it; a source that reports nothing
      // (an older controller, a test) ages the job from its submission.
      const Seconds since = j.accrue != kUnknownTime ? j.accrue
                            : reported               ? kUnknownTime
                                                     : j.submit;
      p.accrued = since == kUnknownTime ? 0 : std::max<Seconds>(0, now - since);
      q.pending.push_back(p);
    } else if (j.state == SlurmJobState::kRunning || j.state == SlurmJobState::kSuspended) {
      const Seconds start = j.start == kUnknownTime ? now : j.start;
      RunningJobView r;
      r.time_limit = j.time_limit;
      r.nodes = j.nodes;
      r.gpus_per_node = j.gpus_per_node;
      r.waited = std::max<Seconds>(0, start - j.submit);
      r.run = std::max<Seconds>(0, now - start);
      r.priority = j.priority;
      r.own = owner_ && j.user_id == *owner_;
      r.qos = j.qos;
      q.running.push_back(r);
    }
  }
  q.recent_starts = recent_count();
  q.recent_mean_wait_s = recent_mean_wait();
  q.recent_runtime_shares = recent_runtime_shares();
  return q;
}

std::string SnapshotBuilder::save_recent() const {
  nlohmann::json j;
  j["watermark"] = watermark_;
  auto& arr = j["starts"] = nlohmann::json::array();
  for (const auto& r : recent_) arr.push_back({r.id, r.start, r.wait});
  j["end_watermark"] = end_watermark_;
  auto& ends = j["ends"] = nlohmann::json::array();
  for (const auto& e : ended_) ends.push_back({e.id, e.end, e.share});
  return j.dump();
}

void SnapshotBuilder::restore_recent(const std::string& text) {
  recent_.clear();
  wait_sum_ = 0;
  watermark_ = kUnknownTime;
  ended_.clear();
  end_watermark_ = kUnknownTime;
  if (text.empty()) return;
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("starts") || !j["starts"].is_array()) return;
  watermark_ = j.value("watermark", kUnknownTime);
  for (const auto& r : j["starts"]) {
    if (!r.is_array() || r.size() != 3) continue;
    recent_.push_back({r[0].get<JobId>(), r[1].get<Seconds>(), r[2].get<Seconds>()});
    wait_sum_ += recent_.back().wait;
  }
  while (recent_.size() > static_cast<std::size_t>(QueueSnapshot::kRecentStarts)) {
    wait_sum_ -= recent_.front().wait;
    recent_.pop_front();
  }
  // Saved before the recent ends were kept: none.
  if (!j.contains("ends") || !j["ends"].is_array()) return;
  end_watermark_ = j.value("end_watermark", kUnknownTime);
  for (const auto& e : j["ends"]) {
    if (!e.is_array() || e.size() != 3 || !e[2].is_number()) continue;
    ended_.push_back({e[0].get<JobId>(), e[1].get<Seconds>(), e[2].get<float>()});
  }
  while (ended_.size() > static_cast<std::size_t>(QueueSnapshot::kRecentEnds)) ended_.pop_front();
}

}  // namespace mirage::daemon

#include "mirage/daemon/SnapshotBuilder.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace mirage::daemon {

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

bool SnapshotBuilder::observe_starts(const std::vector<SlurmJob>& jobs) {
  std::vector<const SlurmJob*> fresh;
  for (const auto& j : jobs) {
    if (j.start == kUnknownTime || j.submit == kUnknownTime || !in_partition(j)) continue;
    if (j.start < watermark_) continue;
    if (j.start == watermark_ && std::any_of(recent_.begin(), recent_.end(),
                                             [&](const RecentStart& r) { return r.id == j.id; }))
      continue;
    fresh.push_back(&j);
  }
  if (fresh.empty()) return false;
  std::sort(fresh.begin(), fresh.end(), [](const SlurmJob* a, const SlurmJob* b) {
    return a->start != b->start ? a->start < b->start : a->id < b->id;
  });
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
  for (const auto& j : jobs) {
    if (!in_partition(j)) continue;
    if (j.state == SlurmJobState::kPending) {
      q.pending.push_back(
          {j.time_limit, j.nodes, j.gpus_per_node, std::max<Seconds>(0, now - j.submit)});
    } else if (j.state == SlurmJobState::kRunning || j.state == SlurmJobState::kSuspended) {
      const Seconds start = j.start == kUnknownTime ? now : j.start;
      q.running.push_back({j.time_limit, j.nodes, j.gpus_per_node,
                           std::max<Seconds>(0, start - j.submit),
                           std::max<Seconds>(0, now - start)});
    }
  }
  q.recent_starts = recent_count();
  q.recent_mean_wait_s = recent_mean_wait();
  return q;
}

std::string SnapshotBuilder::save_recent() const {
  nlohmann::json j;
  j["watermark"] = watermark_;
  auto& arr = j["starts"] = nlohmann::json::array();
  for (const auto& r : recent_) arr.push_back({r.id, r.start, r.wait});
  return j.dump();
}

void SnapshotBuilder::restore_recent(const std::string& text) {
  recent_.clear();
  wait_sum_ = 0;
  watermark_ = kUnknownTime;
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
}

}  // namespace mirage::daemon

#include "mirage/daemon/service/CampaignPass.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "mirage/daemon/control/ControlProtocol.h"
#include "mirage/daemon/store/StoreHome.h"
#include "store/Sqlite.h"

namespace mirage::daemon {

using json = nlohmann::json;

namespace {

// The recent starts and ends (SnapshotBuilder::save_recent); named before the ends were kept.
constexpr const char* kRecentJobsKey = "recent_starts";

// The priority weights kept with the machine, so a restart ranks the queue before the first
// cluster load.
json priority_to_json(const PriorityParameters& p) {
  return {{"weight_age", p.weight_age},
          {"weight_job_size", p.weight_job_size},
          {"max_age", p.max_age},
          {"favor_small", p.favor_small}};
}

PriorityParameters priority_from_json(const json& j) {
  PriorityParameters p = PriorityParameters::unweighted();
  if (!j.is_object()) return p;
  p.weight_age = j.value("weight_age", 0.0);
  p.weight_job_size = j.value("weight_job_size", 0.0);
  p.max_age = j.value("max_age", p.max_age);
  p.favor_small = j.value("favor_small", false);
  return p;
}

}  // namespace

void make_private_dir(const std::filesystem::path& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) return;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir.string() + ": " + ec.message());
  ::chmod(dir.c_str(), 0700);
}

CampaignPass::CampaignPass(const DaemonConfig& config, const Clock& clock)
    : clock_(clock), configured_partition_(config.partition), snapshots_(config.partition) {
  make_private_dir(std::filesystem::path(config.store_path).parent_path());
  store_ = std::make_unique<CampaignStore>(config.store_path);
  check_store_home(*store_, config.store_path, config.store_moved);
  ::chmod(config.store_path.c_str(), 0600);
  controller_ = std::make_unique<CampaignController>(*store_, clock_, config.controller_config());
  controller_->load();
  snapshots_.set_owner(static_cast<std::uint32_t>(::getuid()));
  restore();
}

// The history the encoder needs, so a restart does not start blind.
void CampaignPass::restore() {
  snapshots_.restore_recent(store_->value(kRecentJobsKey));
  const Seconds now = clock_.now();
  const Seconds window = FeatureEncoder::kWindow * FeatureEncoder::kSpacing;
  const auto kept = store_->load_snapshots(now - window);
  for (const auto& q : kept) history_.add(q);
  if (!kept.empty()) {
    last_queue_ = kept.back();
    next_snapshot_ = (kept.back().time / FeatureEncoder::kSpacing + 1) * FeatureEncoder::kSpacing;
  }
  const std::string machine = store_->value(kMachineKey);
  if (!machine.empty()) {
    const auto m = json::parse(machine, nullptr, false);
    if (m.is_object()) {
      snapshots_.set_machine(m.value("nodes", 0), m.value("gpus_per_node", 0));
      snapshots_.set_priority(priority_from_json(m.value("priority", json::object())));
      snapshots_.set_unavailable_nodes(m.value("unavailable_nodes", 0));
      snapshots_.set_user_limits(
          {m.value("max_running_jobs_per_user", 0), m.value("max_running_nodes_per_user", 0)});
      if (configured_partition_.empty()) snapshots_.set_partition(m.value("partition", ""));
    }
  }
  spdlog::info("store {}: {} snapshots of history, {} recent starts (mean wait {})", store_->path(),
               kept.size(), snapshots_.recent_count(),
               format_short_duration(static_cast<Seconds>(snapshots_.recent_mean_wait())));
}

void CampaignPass::apply_partitions(const std::vector<PartitionInfo>& parts) {
  const PartitionInfo* chosen = choose_partition(parts, configured_partition_);
  if (!chosen) {
    spdlog::warn(
        "partition '{}' not found on the cluster (it has {} partitions); queue "
        "snapshots will be empty",
        configured_partition_.empty() ? "(default)" : configured_partition_, parts.size());
    return;
  }
  const PriorityParameters& w = chosen->priority;
  const UserLimits& l = chosen->user_limits;
  if (snapshots_.partition() != chosen->name || machine_nodes_ != chosen->total_nodes ||
      machine_gpus_ != chosen->gpus_per_node || snapshots_.priority() != w ||
      snapshots_.user_limits() != l)
    spdlog::info(
        "partition {}: {} nodes, {} GPUs per node; priority weights: age {} (max age {}), job "
        "size {}{}; per-user limits: {} running jobs, {} nodes (0: none known)",
        chosen->name, chosen->total_nodes, chosen->gpus_per_node, w.weight_age,
        format_short_duration(w.max_age), w.weight_job_size, w.favor_small ? ", small first" : "",
        l.max_running_jobs, l.max_running_nodes);
  snapshots_.use_partition(*chosen);
  machine_nodes_ = chosen->total_nodes;
  machine_gpus_ = chosen->gpus_per_node;
  json machine = partition_knowledge_json(*chosen);
  machine.update({{"nodes", chosen->total_nodes},
                  {"gpus_per_node", chosen->gpus_per_node},
                  {"priority", priority_to_json(chosen->priority)},
                  {"as_of", clock_.now()}});
  // Kept for the next start only: a store that cannot take it loses nothing a campaign needs.
  try {
    store_->set_value(kMachineKey, machine.dump());
  } catch (const sql::StoreError& e) {
    spdlog::warn("store {}: the partition's figures were not kept: {}", store_->path(), e.what());
  }
}

void CampaignPass::set_jobs(std::vector<SlurmJob> jobs) {
  jobs_ = std::move(jobs);
  have_jobs_ = true;
}

Actions CampaignPass::decide(Seconds dump_time, bool changed) {
  const Seconds now = clock_.now();
  // What is observed is kept for a restart and for trace export, not for the campaigns: a store
  // that cannot take it does not keep the controller's pass from running.
  try {
    CampaignStore::Batch batch(*store_);
    if (changed) {
      if (snapshots_.observe(jobs_)) store_->set_value(kRecentJobsKey, snapshots_.save_recent());
      record_observed();
    }
    // Seen at slurmctld's now: the jobs' submit, start and end times are on its clock.
    last_queue_ = snapshots_.build(jobs_, controller_->on_controller_clock(now));
    if (now >= next_snapshot_) {
      history_.add(last_queue_);
      next_snapshot_ = (now / FeatureEncoder::kSpacing + 1) * FeatureEncoder::kSpacing;
      store_->save_snapshot(last_queue_);
      store_->prune_snapshots(now - FeatureEncoder::kWindow * FeatureEncoder::kSpacing - kHour);
    }
    batch.commit();
  } catch (const sql::StoreError& e) {
    last_queue_ = snapshots_.build(jobs_, controller_->on_controller_clock(now));
    if (!observation_unsaved_)
      spdlog::warn("store {}: the queue's observations are not kept while it cannot be written: {}",
                   store_->path(), e.what());
    observation_unsaved_ = true;
    return controller_->tick(jobs_, dump_time, history_, last_queue_);
  }
  observation_unsaved_ = false;
  return controller_->tick(jobs_, dump_time, history_, last_queue_);
}

// Jobs whose state changed since the last dump go to the store, for trace export.
void CampaignPass::record_observed() {
  std::vector<SlurmJob> changed;
  std::unordered_map<JobId, Seen> next;
  next.reserve(jobs_.size());
  for (const auto& j : jobs_) {
    const Seen s{j.state, j.start, j.end};
    auto it = seen_.find(j.id);
    if (it == seen_.end() || !(it->second == s)) changed.push_back(j);
    next.emplace(j.id, s);
  }
  seen_ = std::move(next);
  store_->upsert_observed_jobs(changed);
}

int CampaignPass::history_size() const {
  return history_.empty() ? 0 : history_.build({}).window_filled;
}

}  // namespace mirage::daemon

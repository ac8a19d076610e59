#pragma once
// Shared helpers for the daemon's unit tests: a temporary directory and a controller wired to the
// fake Slurm client with a manual clock.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "mirage/daemon/CampaignController.h"
#include "mirage/daemon/CampaignStore.h"
#include "mirage/daemon/FakeSlurmClient.h"
#include "mirage/daemon/SnapshotBuilder.h"

namespace mirage::daemon::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "mirage-test-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline CampaignRequest simple_request(int segments = 3, Seconds limit = kHour) {
  CampaignRequest r;
  r.name = "train";
  r.script = "#!/bin/bash\nsleep 20\n";
  r.segments = segments;
  r.nodes = 1;
  r.gpus_per_node = 4;
  r.time_limit = limit;
  r.work_dir = "/tmp";
  r.owner_uid = 0;
  return r;
}

// A daemon without the daemon: store + controller + fake cluster, stepped by hand.
struct Harness {
  explicit Harness(ControllerConfig config = {}, PolicyFactory factory = {},
                   std::string store_path = {})
      : clock(1'700'000'000), slurm(clock), config_(config), factory_(std::move(factory)) {
    path = store_path.empty() ? dir.file("store.db") : store_path;
    restart();
  }

  // A new controller over the same store, as after a crash and restart.
  void restart() {
    controller.reset();
    store.reset();
    store = std::make_unique<CampaignStore>(path);
    controller = std::make_unique<CampaignController>(*store, clock, config_, factory_);
    controller->load();
  }

  // One poll-and-decide cycle. With perform=false the actions are returned unperformed (the
  // daemon died right after deciding).
  Actions tick(bool perform = true) {
    const JobDump dump = slurm.load_jobs(0);
    snapshots.observe(dump.jobs);
    const QueueSnapshot now = snapshots.build(dump.jobs, clock.now());
    history.add(now);
    Actions actions = controller->tick(dump.jobs, dump.taken, history, now);
    if (perform) perform_actions(*controller, slurm, actions);
    return actions;
  }

  const CampaignRecord& campaign(std::int64_t id) const { return *controller->find(id); }
  const SegmentRecord& seg(std::int64_t id, int k) const {
    return campaign(id).segments.at(static_cast<std::size_t>(k));
  }
  JobId job_of(std::int64_t id, int k) const { return seg(id, k).seg.slurm_job_id; }

  TempDir dir;
  std::string path;
  ManualClock clock;
  FakeSlurmClient slurm;
  ControllerConfig config_;
  PolicyFactory factory_;
  SnapshotBuilder snapshots;
  ObservationBuilder history;
  std::unique_ptr<CampaignStore> store;
  std::unique_ptr<CampaignController> controller;
};

}  // namespace mirage::daemon::testing

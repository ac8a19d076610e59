#pragma once
// Shared helpers for the daemon's unit tests: a temporary directory and a controller wired to the
// fake Slurm client with a manual clock.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "FakeSlurmClient.h"
#include "TempDir.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/daemon/campaigns/CampaignController.h"
#include "mirage/daemon/slurm/SnapshotBuilder.h"
#include "mirage/daemon/store/CampaignStore.h"

namespace mirage::daemon::testing {

using TempDir = mirage::test::TempDir;

// An executable shell script `name` in `dir` running `body`, standing in for a Slurm command.
inline std::string fake_program(const TempDir& dir, const std::string& name,
                                const std::string& body) {
  const std::string path = dir.file(name);
  std::ofstream(path) << "#!/bin/sh\n" << body;
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

// Runs `body` in a child process and returns what it returned (or why it has nothing): for what
// must not touch the test process (a user id, a resource limit).
inline std::string in_child_process(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      out = body();
    } catch (const std::exception& e) {
      out = std::string("threw: ") + e.what();
    }
    const char* p = out.data();
    for (std::size_t left = out.size(); left > 0;) {
      const ssize_t n = ::write(fds[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? out : "the child died";
}

// Runs `body` as an unprivileged user (uid and gid 65534) in a child process and returns what it
// returned. Root may write anywhere, so a test of what an unwritable path does must run as
// someone who may not; CI runs as root. The `owned` trees are given to that user first. Run by
// anyone else, `body` runs here.
inline std::string as_unprivileged_user(const std::vector<std::filesystem::path>& owned,
                                        const std::function<std::string()>& body) {
  if (::geteuid() != 0) return body();
  constexpr uid_t kNobody = 65534;
  for (const auto& root : owned) {
    if (::chown(root.c_str(), kNobody, kNobody) != 0) return "chown failed: " + root.string();
    for (const auto& e : std::filesystem::recursive_directory_iterator(root))
      if (::lchown(e.path().c_str(), kNobody, kNobody) != 0) return "chown failed";
  }
  const std::string out = in_child_process(
      [&] { return ::setgid(kNobody) == 0 && ::setuid(kNobody) == 0 ? body() : "setuid failed"; });
  return out == "the child died" ? "the unprivileged child died" : out;
}

inline CampaignRequest simple_request(int segments = 3, Seconds limit = kHour,
                                      std::string name = "train") {
  CampaignRequest r;
  r.name = std::move(name);
  r.script = "#!/bin/bash\nsleep 20\n";
  r.segments = segments;
  r.shape.nodes = 1;
  r.shape.gpus_per_node = 4;
  r.shape.time_limit = limit;
  r.work_dir = "/tmp";
  r.owner_uid = 0;
  return r;
}

// Submissions the policy makes, decided every 10 minutes, settled 5 s after an unknown outcome;
// the fallback chain and lead have their own tests.
inline ControllerConfig quick_config() {
  ControllerConfig c;
  c.fallback_chain = false;
  c.fallback_lead = 0;
  c.decision_interval = 600;
  c.reconcile_delay = 5;
  c.max_retries = 2;
  return c;
}

// The message with which `controller` refuses `request`; "(added)" when it does not.
inline std::string refusal_of(CampaignController& controller, const CampaignRequest& request) {
  try {
    controller.add(request);
  } catch (const RequestError& e) {
    return e.what();
  }
  return "(added)";
}

// A policy that says what the test tells it, and counts how often it was asked.
struct ScriptedPolicy final : Policy {
  bool* submit;
  int* asked;
  ScriptedPolicy(bool* s, int* a) : submit(s), asked(a) {}
  std::string name() const override { return "scripted"; }
  Decision decide(const Observation& obs) override {
    ++*asked;
    EXPECT_EQ(obs.encoder_version, FeatureEncoder::kVersion);
    EXPECT_EQ(obs.window.size(),
              static_cast<std::size_t>(FeatureEncoder::kWindow * FeatureEncoder::kPerSnapshot));
    EXPECT_TRUE(obs.campaign.predecessor_running);
    return *submit ? Decision::submit() : Decision::wait();
  }
};

struct Scripted {
  bool submit = false;
  int asked = 0;
  PolicyFactory factory() {
    return [this](const PolicySpec& policy) -> std::unique_ptr<Policy> {
      if (policy.name == "scripted") return std::make_unique<ScriptedPolicy>(&submit, &asked);
      return mirage::make_policy(policy);
    };
  }
};

// One poll-and-decide cycle of `controller` on `slurm`. With perform=false the actions are returned
// unperformed (the daemon died right after deciding).
inline Actions tick_controller(CampaignController& controller, FakeSlurmClient& slurm,
                               SnapshotBuilder& snapshots, ObservationBuilder& history,
                               const Clock& clock, bool perform = true) {
  const JobDump dump = slurm.load_jobs(0);
  if (dump.controller_ahead) controller.observe_controller_clock(*dump.controller_ahead);
  snapshots.observe(dump.jobs);
  const QueueSnapshot now = snapshots.build(dump.jobs, controller.on_controller_clock(clock.now()));
  history.add(now);
  Actions actions = controller.tick(dump.jobs, dump.taken, history, now);
  if (perform) perform_actions(controller, slurm, actions);
  return actions;
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
    return tick_controller(*controller, slurm, snapshots, history, clock, perform);
  }

  // A copy of the store's main file (which holds every commit), as a backup or a snapshot takes.
  std::string copy_store(const std::string& name = "store.backup") const {
    const std::string copy = dir.file(name);
    std::filesystem::copy_file(path, copy);
    return copy;
  }
  // The store restored from `copy` (its -wal file gone with what came after), and the daemon
  // started again on it.
  void restore_store(const std::string& copy) {
    controller.reset();
    store.reset();
    std::filesystem::remove(path + "-wal");
    std::filesystem::copy_file(copy, path, std::filesystem::copy_options::overwrite_existing);
    restart();
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

// A second store of the same user on the harness's cluster (another project's `--store`), with
// its own daemon, stepped by hand beside the harness's.
struct NeighbourStore {
  explicit NeighbourStore(Harness& h)
      : h(h), store(h.dir.file("neighbour.db")), controller(store, h.clock, quick_config()) {
    controller.load();
  }
  Actions tick() { return tick_controller(controller, h.slurm, snapshots, history, h.clock); }
  JobId job_of(std::int64_t id, int k) const {
    return controller.find(id)->segments.at(static_cast<std::size_t>(k)).seg.slurm_job_id;
  }

  Harness& h;
  CampaignStore store;
  CampaignController controller;
  SnapshotBuilder snapshots;
  ObservationBuilder history;
};

// How many submissions the store `store_id` made of campaign `id`'s segment `k` (stores number
// their campaigns alike: the tag's store tells theirs apart).
inline std::size_t submissions_of(const FakeSlurmClient& slurm, const std::string& store_id,
                                  std::int64_t id, int k) {
  std::size_t n = 0;
  for (const auto& s : slurm.submissions_tagged(id, k))
    if (JobTag::parse(s.request.comment)->store == store_id) ++n;
  return n;
}

// `submit`'s reply is lost (its outcome unknown); after the reconcile delay its tag is absent, so
// it is sent again under the same attempt, and that is refused for now (a submit limit).
inline void lose_reply_then_refuse_for_now(Harness& h, const SubmitAction& submit,
                                           Seconds reconcile_delay) {
  h.controller->on_submit_failed(submit,
                                 SlurmError("Socket timed out on send/recv", ETIMEDOUT, true));
  h.clock.advance(reconcile_delay);
  h.slurm.refuse_next_submit("QOSMaxSubmitJobPerUserLimit", /*for_now=*/true);
  h.tick();
}

}  // namespace mirage::daemon::testing

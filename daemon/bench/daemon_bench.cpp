// The daemon's figures, measured through the real daemon (event loop, Slurm thread, store,
// controller, control socket) against the fake Slurm client:
//   - controller RPCs per tick (counted at the SlurmClient seam),
//   - resident memory (VmRSS) with N registered campaigns,
//   - the time of one poll-and-decide cycle with a queue of J jobs.
// The cluster churns every tick (jobs start, end and arrive), so cycles do real work.
//
//   daemon_bench [--jobs 10000] [--campaigns 1000] [--seconds 12]
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>

#include "FakeSlurmClient.h"
#include "mirage/daemon/control/ControlProtocol.h"
#include "mirage/daemon/control/ControlServer.h"
#include "mirage/daemon/service/Daemon.h"
#include "mirage/daemon/service/ProcessStats.h"

using namespace mirage;
using namespace mirage::daemon;
using json = nlohmann::json;

int main(int argc, char** argv) {
  int jobs = 10000, campaigns = 1000, seconds = 12;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (a == "--jobs")
      jobs = v;
    else if (a == "--campaigns")
      campaigns = v;
    else if (a == "--seconds")
      seconds = v;
  }
  char tmpl[] = "/tmp/mirage-bench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  DaemonConfig config = parse_daemon_config(
      "[poll]\ninterval = 1\ncluster_every = \"5s\"\n[policy]\ndefault = \"average\"\n"
      "decision_interval = 1\n[guard]\nmax_campaigns_per_user = 100000\n[log]\nlevel = \"warn\"\n",
      "bench.toml");
  config.store_path = dir + "/store.db";
  config.socket_path = dir + "/m.sock";
  configure_logging(config);
  const long rss_start = current_rss_kib();

  auto clock = std::make_shared<SystemClock>();
  auto fake = std::make_unique<FakeSlurmClient>(*clock);
  fake->set_partitions({{"gpu", 1000, 4, 0, true}});
  std::mt19937 rng(1);
  const Seconds now = clock->now();
  for (int i = 0; i < jobs; ++i) {
    SlurmJob j;
    j.user_id = 5000 + static_cast<std::uint32_t>(i % 50);
    j.submit = now - 3600 - static_cast<Seconds>(rng() % 86400);
    j.time_limit = 3600 * (1 + static_cast<Seconds>(rng() % 48));
    j.nodes = 1 + static_cast<int>(rng() % 8);
    j.gpus_per_node = 4;
    if (i % 3 == 0) {
      j.state = SlurmJobState::kRunning;
      j.start = j.submit + static_cast<Seconds>(rng() % 3600);
    }
    fake->add_job(j);
  }
  // Every dump: 20 pending jobs start, 20 running ones end, 40 new ones arrive.
  fake->set_on_dump([&rng](FakeSlurmClient& f) {
    std::vector<JobId> start, finish, forget;
    for (const auto& [id, j] : f.jobs()) {
      if (j.state == SlurmJobState::kPending && start.size() < 20 && rng() % 50 == 0)
        start.push_back(id);
      if (j.state == SlurmJobState::kRunning && finish.size() < 20 && rng() % 50 == 0)
        finish.push_back(id);
      if (is_finished(j.state)) forget.push_back(id);
    }
    for (JobId id : start) f.start(id);
    for (JobId id : finish) f.finish(id);
    for (JobId id : forget) f.forget(id);
    for (int i = 0; i < 40; ++i) {
      SlurmJob j;
      j.user_id = 5001;
      j.time_limit = 7200;
      j.nodes = 1 + static_cast<int>(rng() % 4);
      j.gpus_per_node = 4;
      f.add_job(j);
    }
  });
  FakeSlurmClient* fake_ptr = fake.get();
  (void)fake_ptr;

  Daemon d(config, std::move(fake), clock);
  std::thread loop([&] { d.run(false); });
  // Wait for the socket, then register the campaigns through it.
  for (int i = 0; i < 200 && !std::filesystem::exists(config.socket_path); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < campaigns; ++i) {
    const json req = {{"op", "add"},
                      {"campaign",
                       {{"name", fmt::format("bench-{}", i)},
                        {"script", "#!/bin/bash\nsrun python train.py --resume\n"},
                        {"segments", 10},
                        {"nodes", 1 + i % 4},
                        {"gpus_per_node", 4},
                        {"time_limit", 48 * 3600},
                        {"policy", i % 2 ? "average" : "reactive"},
                        {"environment", json::array({"PATH=/usr/bin:/bin", "HOME=/home/u"})}}}};
    call_daemon(config.socket_path, req);
  }
  const double add_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Let the first submissions of every campaign and the first full upsert of the observed jobs
  // go by, then measure a steady window.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const json st0 = call_daemon(config.socket_path, {{"op", "status"}})["daemon"];
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const json st = call_daemon(config.socket_path, {{"op", "status"}})["daemon"];
  d.stop();
  loop.join();
  std::filesystem::remove_all(dir);

  const json& rpc = st["rpc"];
  const json& cyc = st["cycle_ms"];
  const double ticks = st["polls"].get<double>() - st0["polls"].get<double>();
  const double dumps = rpc["job_dumps"].get<double>() - st0["rpc"]["job_dumps"].get<double>();
  const double all = rpc["total"].get<double>() - st0["rpc"]["total"].get<double>();
  fmt::print("daemon figures (fake Slurm, {} jobs in the queue, {} campaigns, {} s)\n", jobs,
             campaigns, seconds);
  fmt::print("  ticks in the window        {:.0f}\n", ticks);
  fmt::print("  job dump RPCs per tick     {:.2f}   (target: 1)\n", dumps / ticks);
  fmt::print(
      "  all RPCs per tick          {:.2f}   (partitions+nodes+config every 5 s; since start: {} "
      "dumps, {} partition, {} node, {} config, {} submits)\n",
      all / ticks, rpc["job_dumps"].get<long>(), rpc["partition_loads"].get<long>(),
      rpc["node_loads"].get<long>(), rpc["config_loads"].get<long>(), rpc["submits"].get<long>());
  fmt::print(
      "  poll-and-decide cycle      p50 {:.1f} ms, p99 {:.1f} ms, max {:.1f} ms over the last "
      "{} cycles (target: < 50 ms)\n",
      cyc["recent_p50"].get<double>(), cyc["recent_p99"].get<double>(),
      cyc["recent_max"].get<double>(), std::min<long>(256, cyc["count"].get<long>()));
  fmt::print("  first cycles (all {} jobs and {} first submissions stored): max {:.1f} ms\n", jobs,
             campaigns, cyc["max"].get<double>());
  fmt::print("  job dump RPC (fake)        {:.1f} ms\n", st["last_rpc_ms"].get<double>());
  fmt::print(
      "  RSS                        {:.1f} MiB with {} campaigns (at start {:.1f} MiB; target: < "
      "300 MB)\n",
      st["rss_kib"].get<double>() / 1024, campaigns, rss_start / 1024.0);
  fmt::print("  registering {} campaigns   {:.2f} s through the socket\n", campaigns, add_s);
  return 0;
}

#include "mirage/daemon/service/Daemon.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <unordered_map>

#include "mirage/core/Version.h"
#include "mirage/daemon/control/ControlProtocol.h"
#include "mirage/daemon/control/ControlServer.h"
#include "mirage/daemon/service/CampaignPass.h"
#include "mirage/daemon/service/ProcessStats.h"
#include "mirage/daemon/slurm/LibSlurmClient.h"
#include "mirage/daemon/slurm/SimulatedSlurmClient.h"
#include "mirage/daemon/slurm/SlurmWorker.h"
#include "mirage/daemon/slurm/SnapshotBuilder.h"
#include "mirage/daemon/store/StoreLock.h"
#include "store/Sqlite.h"

namespace mirage::daemon {

namespace asio = boost::asio;
using json = nlohmann::json;

namespace {

// What one poll brought back from the Slurm thread.
struct PollResult {
  std::optional<JobDump> dump;
  std::optional<std::vector<PartitionInfo>> partitions;
  std::optional<SlurmError> error;
  RpcCounters counters;
  double rpc_ms = 0;
};

// How many pending jobs wait for what (each PendingState by its name), as slurmctld's reasons
// say.
json pending_by_state(const QueueSnapshot& q) {
  json out = json::object();
  for (const PendingJobView& p : q.pending) {
    json& n = out[std::string(to_string(p.state))];
    n = n.is_null() ? 1 : n.get<int>() + 1;
  }
  return out;
}

}  // namespace

struct Daemon::Impl {
  // A tick finishing, or the sbatch of a killed one, holds the store for seconds at most.
  static constexpr double kLockWait_s = 30;
  // How often the daemon makes sure its lock file is still the one at the path.
  static constexpr std::chrono::seconds kLockCheck{1};

  Impl(DaemonConfig cfg, std::unique_ptr<SlurmClient> c, std::shared_ptr<const Clock> clk)
      : config(std::move(cfg)),
        client(std::move(c)),
        clock(std::move(clk)),
        worker(*client),
        poll_timer(io),
        lock_timer(io),
        signals(io),
        rng(std::random_device{}()) {}

  // ---- setup
  // The store is the daemon's for its life: a tick or a second daemon waits, or says so.
  void open_store() {
    make_private_dir(std::filesystem::path(config.store_path).parent_path());
    std::string held_by;
    lock = StoreLock::acquire(config.store_path, "mirage daemon", kLockWait_s, &held_by);
    if (!lock)
      throw std::runtime_error("store " + config.store_path + " is in use by " + held_by +
                               " (waited " + std::to_string(static_cast<int>(kLockWait_s)) +
                               " s); is another daemon running on it?");
    pass = std::make_unique<CampaignPass>(config, *clock);
  }

  // The lock file deleted (a cleaner, a user tidying up) or replaced: the next process would lock
  // a new file at the path and act on the store too. Taken again at once if no one has; if
  // another process already holds the new file, this daemon stops rather than act beside it.
  void check_lock() {
    const auto why = lock->lost();
    if (!why) return;
    std::string held_by;
    bool again = false;
    {
      // The lost file alone: with a store that is a symlink the other is still this daemon's.
      const std::lock_guard<std::mutex> hold(lock_mutex);  // the Slurm thread reads it
      again = lock->take_again("mirage daemon", &held_by);
    }
    if (again) {
      spdlog::warn("{}: the daemon made it again and holds it", *why);
      return;
    }
    spdlog::error(
        "{}, and {} holds the new one: this daemon stops so that one process acts on the store {}",
        *why, held_by, config.store_path);
    lock_lost = true;
    shutdown();
  }

  // Asked on the Slurm thread right before each submit, signal, cancel or release: the watch
  // above runs every second, and a call decided before a replaced lock file was seen would act
  // beside the process that holds the new one. Seen lost: the main thread checks at once.
  std::optional<std::string> may_act() {
    const std::lock_guard<std::mutex> hold(lock_mutex);
    auto why = lock->lost();
    if (why)
      asio::post(io, [this] {
        if (!stopping) check_lock();
      });
    return why;
  }

  void watch_lock() {
    lock_timer.expires_after(kLockCheck);
    lock_timer.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopping) return;
      check_lock();
      if (!stopping) watch_lock();
    });
  }

  void start_server() {
    ControlServerLimits limits;
    limits.max_request_bytes = config.max_request_bytes;
    limits.max_clients = config.max_clients;
    limits.idle_timeout_s = config.client_idle_timeout;
    ControlHandler::Hooks hooks;
    hooks.perform = [this](Actions a) { perform(std::move(a)); };
    hooks.poke = [this] { decide_soon(); };
    hooks.status = [this] { return status_json(); };
    hooks.store_failed = [this](const std::string& why) { store_failed(why); };
    handler = std::make_unique<ControlHandler>(pass->controller(), pass->store(), hooks);
    server = std::make_unique<ControlServer>(
        io, config.socket_path, limits,
        [this](const std::string& line, std::uint32_t uid) { return handler->handle(line, uid); });
    server->start();
  }

  // ---- polling
  void schedule_poll(std::chrono::milliseconds delay) {
    poll_timer.expires_after(delay);
    poll_timer.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) do_poll();
    });
  }

  // A new or resumed campaign is acted on at once, on the job list already at hand: no extra
  // RPC (a burst of `campaign add` must not become a burst of job dumps).
  void decide_soon() {
    if (decide_pending || !pass->have_jobs()) return;
    decide_pending = true;
    asio::post(io, [this] {
      decide_pending = false;
      if (!stopping && pass->have_jobs()) cycle(last_dump_time, false);
    });
  }

  void do_poll() {
    if (poll_in_flight || stopping) return;
    poll_in_flight = true;
    const Seconds since = last_update;
    const bool cluster = need_cluster || clock_steady_s() >= next_cluster_load;
    worker.post([this, since, cluster](SlurmClient& c) {
      PollResult r;
      const auto t0 = std::chrono::steady_clock::now();
      try {
        r.dump = c.load_jobs(since);
        if (cluster) r.partitions = c.load_partitions();
      } catch (const SlurmError& e) {
        r.error = e;
      }
      r.rpc_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      r.counters = c.counters();
      asio::post(io, [this, r = std::move(r)]() mutable { on_poll(std::move(r)); });
    });
  }

  void on_poll(PollResult r) {
    poll_in_flight = false;
    rpc_counters = r.counters;
    last_poll_wall = clock_wall_s();
    if (r.error) {
      ++failures;
      unreachable_since = unreachable_since ? unreachable_since : clock_wall_s();
      const auto delay = backoff();
      if (failures == 1 || failures % 10 == 0)
        spdlog::warn("slurm controller unreachable ({} failed polls): {}; next try in {:.1f} s",
                     failures, r.error->what(), delay.count() / 1000.0);
      schedule_poll(delay);
      return;
    }
    if (failures > 0)
      spdlog::info("slurm controller reachable again after {} failed polls ({} s)", failures,
                   clock_wall_s() - unreachable_since);
    failures = 0;
    unreachable_since = 0;
    ++polls;
    last_ok_wall = clock_wall_s();
    last_rpc_ms = r.rpc_ms;
    if (r.partitions) {
      need_cluster = false;
      next_cluster_load = clock_steady_s() + config.cluster_every;
      pass->apply_partitions(*r.partitions);
    }
    if (r.dump->controller_ahead)
      pass->controller().observe_controller_clock(*r.dump->controller_ahead);
    if (r.dump->changed) {
      pass->set_jobs(std::move(r.dump->jobs));
      last_update = r.dump->last_update;
    }
    last_dump_time = r.dump->taken;
    if (pass->have_jobs()) cycle(r.dump->taken, r.dump->changed);
    schedule_poll(std::chrono::milliseconds(config.poll_interval * 1000));
  }

  std::chrono::milliseconds backoff() {
    const double base = static_cast<double>(config.poll_interval) *
                        std::pow(2.0, std::min<std::uint64_t>(failures - 1, 16));
    const double capped = std::min(base, static_cast<double>(config.backoff_max));
    std::uniform_real_distribution<double> jitter(0.5, 1.0);
    return std::chrono::milliseconds(static_cast<long long>(capped * jitter(rng) * 1000));
  }

  // The store cannot be written (disk full, a file made read-only, an I/O error): what failed
  // was rolled back, so the campaigns are read again from what it holds, and they go on being
  // watched. Nothing is submitted meanwhile: every submission's intent must be written first.
  void store_failed(const std::string& why) {
    const bool first = store_error.empty();
    store_error = why;
    if (first || clock_wall_s() >= next_store_warning) {
      spdlog::error(
          "store {} cannot be written: {}; campaigns are still watched, new requests are "
          "refused and nothing is submitted until it can; trying again at every poll",
          config.store_path, why);
      next_store_warning = clock_wall_s() + 10 * 60;
    }
    try {
      pass->controller().load();
    } catch (const std::exception& e) {
      spdlog::error("store {}: cannot be read back either: {}", config.store_path, e.what());
    }
  }

  void store_recovered() {
    if (store_error.empty()) return;
    spdlog::info("store {} can be written again", config.store_path);
    store_error.clear();
  }

  // One decide cycle on the latest job list.
  void cycle(Seconds dump_time, bool changed) {
    check_lock();  // nothing is decided on a store another process may now act on
    if (stopping) return;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      perform(pass->decide(dump_time, changed));
      store_recovered();
    } catch (const sql::StoreError& e) {
      store_failed(e.what());
    }
    last_cycle_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    max_cycle_ms = std::max(max_cycle_ms, last_cycle_ms);
    sum_cycle_ms += last_cycle_ms;
    recent_cycles[cycles % recent_cycles.size()] = last_cycle_ms;
    ++cycles;
  }

  void perform(Actions actions) {
    if (actions.empty()) return;
    worker.post([this, actions = std::move(actions)](SlurmClient& c) {
      // Each outcome goes back to the controller's thread.
      perform_actions(
          c, actions,
          [this](std::function<void(CampaignController&)> outcome) {
            asio::post(io, [this, outcome = std::move(outcome)] {
              try {
                outcome(pass->controller());
              } catch (const sql::StoreError& e) {  // the dump settles it later (by the job's tag)
                store_failed(e.what());
              }
            });
          },
          [this] { return may_act(); });
      const RpcCounters counters = c.counters();
      asio::post(io, [this, counters] { rpc_counters = counters; });
    });
  }

  json status_json() const {
    std::map<std::string, int> by_state;
    for (const auto* r : pass->controller().campaigns())
      ++by_state[std::string(to_string(r->state))];
    const auto& cc = pass->controller().counters();
    const QueueSnapshot& last_queue = pass->last_queue();
    const double ticks = static_cast<double>(std::max<std::uint64_t>(1, polls));
    return {
        {"pid", ::getpid()},
        {"backend", client_name},
        {"uptime_s", clock_steady_s() - started_steady},
        {"now", clock->now()},
        {"store", config.store_path},
        {"store_error", store_error},  // empty while the store can be written
        {"segments_fate_unknown", pass->controller().fates_unknown()},
        {"socket", config.socket_path},
        {"partition", pass->partition()},
        {"nodes", pass->machine_nodes()},
        {"gpus_per_node", pass->machine_gpus()},
        {"controller_reachable", failures == 0 && polls > 0},
        {"failed_polls", failures},
        {"polls", polls},
        {"last_poll_age_s", last_ok_wall ? clock_wall_s() - last_ok_wall : -1},
        {"queue",
         {{"pending", last_queue.pending.size()},
          {"pending_by_state", pending_by_state(last_queue)},
          {"running", last_queue.running.size()},
          {"recent_mean_wait_s", last_queue.recent_mean_wait_s},
          {"recent_starts", last_queue.recent_starts},
          {"jobs_known", pass->jobs().size()}}},
        {"history_snapshots", pass->history_size()},
        {"campaigns", by_state},
        {"rpc",
         {{"job_dumps", rpc_counters.job_dumps},
          {"partition_loads", rpc_counters.partition_loads},
          {"node_loads", rpc_counters.node_loads},
          {"config_loads", rpc_counters.config_loads},
          {"reservation_loads", rpc_counters.reservation_loads},
          {"limit_loads", rpc_counters.limit_loads},
          {"submits", rpc_counters.submits},
          {"signals", rpc_counters.signals},
          {"cancels", rpc_counters.cancels},
          {"will_runs", rpc_counters.will_runs},
          {"accounting_lookups", rpc_counters.accounting_lookups},
          {"accounting_searches", rpc_counters.accounting_searches},
          {"total", rpc_counters.total()},
          {"job_dumps_per_tick", static_cast<double>(rpc_counters.job_dumps) / ticks},
          {"per_tick", static_cast<double>(rpc_counters.total()) / ticks}}},
        {"cycle_ms", cycle_stats()},
        {"last_rpc_ms", last_rpc_ms},
        {"decisions", cc.decisions},
        {"submissions", cc.submissions},
        {"adopted", cc.adopted},
        {"resubmitted", cc.resubmitted},
        {"refused", cc.refused},
        {"handoff_signals", cc.handoff_signals},
        {"control_requests", handler ? handler->requests() : 0},
        {"control_errors", handler ? handler->errors() : 0},
        {"control_rejected", server ? server->rejected() : 0},
        {"rss_kib", current_rss_kib()},
        // How the wait intervals held on the user's latest jobs, and the predictor as
        // recalibrated on them; null without [policy] wait_distribution.
        {"waits", wait_record_json(pass->store(), std::nullopt, WaitCalibration::kWindow)},
        {"wait_predictor", pass->controller().wait_predictor()
                               ? json(pass->controller().wait_predictor()->describe())
                               : json(nullptr)},
    };
  }

  // Cycle times: overall, and the distribution over the last 256 cycles.
  json cycle_stats() const {
    std::vector<double> recent(
        recent_cycles.begin(),
        recent_cycles.begin() +
            static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(cycles, recent_cycles.size())));
    std::sort(recent.begin(), recent.end());
    auto pct = [&](double q) {
      return recent.empty()
                 ? 0.0
                 : recent[static_cast<std::size_t>(q * static_cast<double>(recent.size() - 1))];
    };
    return {{"last", last_cycle_ms},
            {"max", max_cycle_ms},
            {"mean", cycles ? sum_cycle_ms / static_cast<double>(cycles) : 0.0},
            {"count", cycles},
            {"recent_p50", pct(0.5)},
            {"recent_p99", pct(0.99)},
            {"recent_max", recent.empty() ? 0.0 : recent.back()}};
  }

  static std::int64_t clock_steady_s() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  static std::int64_t clock_wall_s() { return SystemClock().now(); }

  // ---- run / stop
  int run(bool handle_signals) {
    // A log written to a pipe whose reader is gone (`2>&1 | tee log &`, its terminal hung up)
    // fails with EPIPE, the line lost, instead of SIGPIPE killing the daemon silently.
    // SIG_IGN would pass to the commands it runs, but ChildProcess gives them SIGPIPE's default.
    if (handle_signals) std::signal(SIGPIPE, SIG_IGN);
    started_steady = clock_steady_s();
    client_name = client->name();
    open_store();
    try {
      start_server();
    } catch (...) {  // a daemon that did not start holds no store
      pass.reset();
      lock.reset();
      throw;
    }
    if (handle_signals) {
      signals.add(SIGTERM);
      signals.add(SIGINT);
      signals.add(SIGHUP);
      wait_for_signal();
    }
    worker.start();
    spdlog::info("mirage daemon {} serving (pid {}, backend {}, poll every {} s)", kVersion,
                 ::getpid(), client_name, config.poll_interval);
    schedule_poll(std::chrono::milliseconds(0));
    watch_lock();
    io.run();
    worker.stop();
    spdlog::info("mirage daemon stopped");
    return lock_lost ? 1 : 0;
  }

  // SIGTERM and SIGINT stop the daemon; SIGHUP is caught and ignored: a daemon started from a
  // shell (`mirage daemon &` over ssh, in tmux) outlives its terminal. Caught, not SIG_IGN, which
  // sbatch and the other commands the daemon runs would inherit.
  void wait_for_signal() {
    signals.async_wait([this](const boost::system::error_code& ec, int signo) {
      if (ec) return;
      if (signo == SIGHUP) {
        spdlog::info("signal {} (hang-up): ignored, the daemon outlives its terminal", signo);
        wait_for_signal();
        return;
      }
      spdlog::info("signal {}: stopping", signo);
      shutdown();
    });
  }

  void shutdown() {
    if (stopping) return;
    stopping = true;
    poll_timer.cancel();
    lock_timer.cancel();
    boost::system::error_code ec;
    signals.cancel(ec);
    if (server) server->stop();
    worker.stop();
    io.stop();
  }

  DaemonConfig config;
  std::unique_ptr<SlurmClient> client;
  std::shared_ptr<const Clock> clock;
  asio::io_context io;
  SlurmWorker worker;
  asio::steady_timer poll_timer;
  asio::steady_timer lock_timer;
  asio::signal_set signals;
  std::optional<StoreLock> lock;
  std::mutex lock_mutex;  // `lock` is taken again on the main thread, read on the Slurm thread
  std::unique_ptr<CampaignPass> pass;
  std::unique_ptr<ControlHandler> handler;
  std::unique_ptr<ControlServer> server;
  Seconds last_update = 0;
  std::int64_t next_cluster_load = 0;
  bool need_cluster = true;
  bool poll_in_flight = false;
  bool decide_pending = false;
  Seconds last_dump_time = 0;
  bool stopping = false;
  bool lock_lost = false;  // another process took the store's lock file: the exit status says so
  std::uint64_t failures = 0;
  std::uint64_t polls = 0;
  std::int64_t unreachable_since = 0;
  std::int64_t last_poll_wall = 0;
  std::int64_t last_ok_wall = 0;
  std::int64_t started_steady = 0;
  double last_cycle_ms = 0;
  double max_cycle_ms = 0;
  double sum_cycle_ms = 0;
  std::array<double, 256> recent_cycles{};
  std::uint64_t cycles = 0;
  double last_rpc_ms = 0;
  RpcCounters rpc_counters;
  std::string client_name;
  std::string store_error;  // why the store could not be written, until it can again
  std::int64_t next_store_warning = 0;
  std::mt19937 rng;
};

Daemon::Daemon(DaemonConfig config, std::unique_ptr<SlurmClient> client,
               std::shared_ptr<const Clock> clock)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(client), std::move(clock))) {}

Daemon::~Daemon() = default;

int Daemon::run(bool handle_signals) {
  return impl_->run(handle_signals);
}

void Daemon::stop() {
  asio::post(impl_->io, [this] { impl_->shutdown(); });
}

namespace {
SlurmClientDecorator g_decorator = nullptr;

std::unique_ptr<SlurmClient> decorated(std::unique_ptr<SlurmClient> client) {
  return g_decorator ? g_decorator(std::move(client)) : std::move(client);
}
}  // namespace

void set_slurm_client_decorator(SlurmClientDecorator decorator) {
  g_decorator = decorator;
}

SlurmBackend make_slurm_backend(const DaemonConfig& config, std::string_view default_trace_text,
                                const std::string& default_trace_name) {
  if (config.backend == Backend::kSlurm) {
    const char* path = std::getenv("PATH");
    SbatchSettings sbatch;
    sbatch.program = find_sbatch(config.sbatch, path ? path : "");
    sbatch.timeout = config.sbatch_timeout;
    return {decorated(make_libslurm_client(config.slurm_conf, sbatch)),
            std::make_shared<SystemClock>()};
  }
  Trace trace = config.sim_trace.empty() ? read_trace_text(default_trace_text, default_trace_name)
                                         : read_trace(config.sim_trace);
  SimulatedClusterConfig sc;
  sc.speed = config.sim_speed;
  sc.warmup = config.sim_warmup;
  sc.nodes = config.sim_nodes;
  sc.gpus_per_node = config.sim_gpus_per_node;
  sc.checkpoint = config.sim_checkpoint;
  sc.calibration = config.sim_calibration;
  sc.partition = config.partition.empty() ? "sim" : config.partition;
  sc.user_id = static_cast<std::uint32_t>(::getuid());
  // Beside the store, so the simulated cluster and the campaigns it runs are kept together.
  sc.state_path = simulated_cluster_path(config.store_path);
  make_private_dir(std::filesystem::path(sc.state_path).parent_path());
  auto client = std::make_unique<SimulatedSlurmClient>(trace, sc);
  auto clock = client->shared_clock();
  return {decorated(std::move(client)), std::move(clock)};
}

std::unique_ptr<Daemon> make_daemon(const DaemonConfig& config, std::string_view default_trace_text,
                                    const std::string& default_trace_name) {
  SlurmBackend backend = make_slurm_backend(config, default_trace_text, default_trace_name);
  return std::make_unique<Daemon>(config, std::move(backend.client), std::move(backend.clock));
}

std::string simulated_cluster_path(const std::string& store_path) {
  return store_path + ".simulated-cluster.json";
}

void configure_logging(const DaemonConfig& config) {
  spdlog::drop("mirage");
  std::shared_ptr<spdlog::logger> logger;
  if (config.log_file.empty()) {
    logger = spdlog::stderr_color_mt("mirage");
  } else {
    make_private_dir(std::filesystem::path(config.log_file).parent_path());
    logger = spdlog::basic_logger_mt("mirage", config.log_file);
  }
  logger->set_level(spdlog::level::from_str(config.log_level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
}

}  // namespace mirage::daemon

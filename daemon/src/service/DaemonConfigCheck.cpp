// validate_daemon_config: the checks against this machine that parsing cannot make (paths,
// the default policy), run by both `mirage daemon --check` and the daemon's start.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "mirage/agents/PolicyRegistry.h"
#include "mirage/agents/RiskFrontier.h"
#include "mirage/agents/WaitPredictor.h"
#include "mirage/agents/learned/ModelPolicyHook.h"
#include "mirage/core/Error.h"
#include "mirage/daemon/control/SocketPath.h"
#include "mirage/daemon/service/Daemon.h"
#include "mirage/daemon/service/DaemonConfig.h"
#include "mirage/daemon/slurm/SbatchSubmitter.h"
#include "mirage/daemon/store/CampaignStore.h"
#include "store/PathChecks.h"

namespace mirage::daemon {
namespace {

namespace fs = std::filesystem;

class Checker {
 public:
  explicit Checker(const DaemonConfig& c) : c_(c) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw InputError({c_.source, 0, key}, what);
  }

  void creatable_in(const std::string& key, const fs::path& dir) const {
    if (auto why = directory_problem(dir)) fail(key, *why);
  }

  void readable_file(const std::string& key, const std::string& path) const {
    std::error_code ec;
    if (!fs::exists(path, ec)) fail(key, path + " does not exist");
    if (!fs::is_regular_file(path, ec)) fail(key, path + " is not a regular file");
    if (::access(path.c_str(), R_OK) != 0)
      fail(key, path + " cannot be read (" + std::strerror(errno) + ")");
  }

  // `path`, readable and read by `read`; what `read` refuses fails `key` with its message.
  template <typename Read>
  auto read_file(const std::string& key, const std::string& path, Read read) const {
    readable_file(key, path);
    try {
      return read(path);
    } catch (const InputError& e) {
      fail(key, e.what());
    }
  }

  // A policy set under `key` that reads the wait distribution the config does not name.
  void needs_waits(const std::string& key, const std::string& what,
                   const PolicySpec& policy) const {
    if (reads_wait_distribution(policy) && c_.wait_distribution_file.empty())
      fail(key, what +
                    " reads the distribution of the successor's wait: give [policy] "
                    "wait_distribution (mirage trace waits writes it)");
  }

  void store() const {
    if (auto why = store_problem(c_.store_path)) fail("store.path", *why);
  }

  void socket() const {
    const std::string& path = c_.socket_path;
    const std::string key = "socket.path";
    if (path.size() >= sizeof(sockaddr_un::sun_path))
      fail(key, path + " is " + std::to_string(path.size()) + " bytes long; a Unix socket path " +
                    "has at most " + std::to_string(sizeof(sockaddr_un::sun_path) - 1));
    creatable_in(key, fs::path(path).parent_path());
    const SocketPathProbe probe = probe_socket_path(path);
    if (probe.state == SocketPathState::kOccupied) fail(key, occupied_reason(path, probe));
  }

  // The socket, the store (with SQLite's files beside it) and the log must not be one another,
  // or the daemon would put a socket or a log where the store is.
  void apart() const {
    const fs::path store = resolved(c_.store_path);
    const fs::path socket = resolved(c_.socket_path);
    if (within(socket, store) || within(store, socket))
      fail("socket.path", c_.socket_path + (socket == store ? " is" : " overlaps") +
                              " the store's path " + c_.store_path +
                              " (store.path); give them different paths");
    if (is_store_file(socket, store))
      fail("socket.path", c_.socket_path +
                              " is one of the store's SQLite files; choose another "
                              "socket.path");
    if (c_.log_file.empty()) return;
    const fs::path log = resolved(c_.log_file);
    if (within(log, store) || is_store_file(log, store) || log == socket)
      fail("log.file", c_.log_file + " is the store's or the socket's path; choose another file");
  }

  void policy() const {
    if (!c_.frontier_file.empty())
      for (const FrontierOperatingPoint& p :
           read_file("policy.frontier", c_.frontier_file, read_risk_frontier).points)
        needs_waits("policy.frontier", c_.frontier_file + " holds " + p.policy + ", which",
                    p.policy);
    if (!c_.wait_distribution_file.empty())
      (void)read_file("policy.wait_distribution", c_.wait_distribution_file, read_wait_predictor);
    const std::string& p = c_.default_policy;
    const std::string key = "policy.default";
    if (p == kOracleName) fail(key, "the oracle exists only in simulation (mirage eval)");
    const PolicySpec spec(p);
    needs_waits(key, p, spec);
    if (is_known_policy(spec)) return;
    if (names_model_file(p) || p.find('/') != std::string::npos) {
      readable_file(key, p);  // loaded (LibTorch) only when a campaign uses it
      return;
    }
    std::string known;
    for (const auto& n : policy_names())
      if (n != kOracleName) known += n + ", ";
    fail(key, "unknown policy '" + p + "' (expected one of: " + known + "or a model file " +
                  std::string(kModelFileExtension) + ")");
  }

  // Every segment is submitted through it: a daemon that cannot run it must not start.
  std::string sbatch_program() const {
    const char* path = std::getenv("PATH");
    try {
      return find_sbatch(c_.sbatch, path ? path : "");
    } catch (const std::runtime_error& e) {
      fail("cluster.sbatch", e.what());
    }
  }

  void inputs() const {
    if (!c_.slurm_conf.empty() && c_.backend == Backend::kSlurm)
      readable_file("cluster.slurm_conf", c_.slurm_conf);
    if (c_.backend == Backend::kSlurm) sbatch_program();
    if (!c_.sim_trace.empty() && c_.backend == Backend::kSimulator)
      readable_file("simulator.trace", c_.sim_trace);
    const std::string& cal = c_.sim_calibration;
    if (c_.backend == Backend::kSimulator && cal != "none" && cal != "infer" && cal != "auto")
      readable_file("simulator.calibration", cal);
    if (!c_.log_file.empty()) creatable_in("log.file", fs::path(c_.log_file).parent_path());
  }

 private:
  // Absolute, with ".." and the symlinks of the existing part resolved: aliases compare equal.
  static fs::path resolved(const std::string& path) {
    std::error_code ec;
    const fs::path abs = fs::absolute(path, ec);
    const fs::path canon = fs::weakly_canonical(abs, ec);
    return ec ? abs.lexically_normal() : canon;
  }

  // `inner` is `outer` or a path under it.
  static bool within(const fs::path& inner, const fs::path& outer) {
    std::string i = inner.string(), o = outer.string();
    while (i.size() > 1 && i.back() == '/') i.pop_back();
    while (o.size() > 1 && o.back() == '/') o.pop_back();
    return i == o || i.rfind(o == "/" ? o : o + "/", 0) == 0;
  }

  // SQLite's companions of the database file, and the simulated cluster kept beside it.
  static bool is_store_file(const fs::path& p, const fs::path& store) {
    for (const char* suffix : kSqliteCompanionSuffixes)
      if (p == fs::path(store.string() + suffix)) return true;
    return p == fs::path(simulated_cluster_path(store.string()));
  }

  const DaemonConfig& c_;
};

}  // namespace

void validate_daemon_config(const DaemonConfig& config) {
  const Checker check(config);
  check.apart();
  check.store();
  check.socket();
  check.policy();
  check.inputs();
}

}  // namespace mirage::daemon

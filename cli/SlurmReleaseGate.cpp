#include "SlurmReleaseGate.h"

#include <fmt/format.h>

#include "mirage/core/Error.h"
#include "mirage/core/Version.h"

namespace mirage::cli {

std::string version_line() {
  const std::string slurm = daemon::built_slurm_release();
  return fmt::format("mirage {} ({})", kVersion,
                     slurm.empty() ? "built without libslurm" : "built for Slurm " + slurm);
}

std::optional<daemon::SlurmReleaseCheck> check_cluster_release(const daemon::DaemonConfig& config,
                                                               const std::string& command) {
  if (config.backend != daemon::Backend::kSlurm) return std::nullopt;
  daemon::SlurmReleaseCheck check = daemon::check_slurm_releases(config.slurm_conf);
  if (!check.problem.empty())
    fmt::print(stderr, "mirage {}: {}\n", command, escape_control(check.problem));
  return check;
}

}  // namespace mirage::cli

#pragma once
// Before a command talks to a real cluster: this build, the libslurm it loaded and slurmctld must
// be Slurm releases that work together, or the replies would be misread.
#include <optional>
#include <string>

#include "mirage/daemon/service/DaemonConfig.h"
#include "mirage/daemon/slurm/LibSlurmClient.h"

namespace mirage::cli {

// "mirage 0.1.0 (built for Slurm 24.11.5)": what --version says.
std::string version_line();

// The releases at play for `config`'s cluster; none for the simulator. A problem is printed as
// one line on stderr ("mirage <command>: ...").
std::optional<daemon::SlurmReleaseCheck> check_cluster_release(const daemon::DaemonConfig& config,
                                                               const std::string& command);

}  // namespace mirage::cli

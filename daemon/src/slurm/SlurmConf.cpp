// Finding slurm.conf, and the stand-in when this build has no libslurm.
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "mirage/daemon/slurm/LibSlurmClient.h"

namespace mirage::daemon {

std::string resolve_slurm_conf(const std::string& configured) {
  std::string tried;
  auto readable = [&](const std::string& path, const char* source) {
    if (path.empty()) return false;
    tried += (tried.empty() ? "" : ", ") + path + " (" + source + ")";
    return access(path.c_str(), R_OK) == 0;
  };
  if (!configured.empty()) {
    if (readable(configured, "cluster.slurm_conf")) return configured;
    throw std::runtime_error("cluster.slurm_conf: cannot read " + configured);
  }
  const char* env = std::getenv("SLURM_CONF");
  if (env && readable(env, "$SLURM_CONF")) return env;
  if (readable("/etc/slurm/slurm.conf", "default")) return "/etc/slurm/slurm.conf";
  throw std::runtime_error("no readable slurm.conf (tried " + tried +
                           "); set cluster.slurm_conf in the daemon's config");
}

#ifndef MIRAGE_HAVE_LIBSLURM
bool have_libslurm() {
  return false;
}
namespace {
[[noreturn]] void no_libslurm() {
  throw std::runtime_error(
      "this mirage was built without libslurm (install libslurm-dev and rebuild); use "
      "cluster.backend = \"simulator\"");
}
}  // namespace
std::string built_slurm_release() {
  return {};
}
SlurmReleaseCheck check_slurm_releases(const std::string&) {
  no_libslurm();
}
std::unique_ptr<SlurmClient> make_libslurm_client(const std::string&, SbatchSettings) {
  no_libslurm();
}
#endif

}  // namespace mirage::daemon

// The Slurm releases at play, read through libslurm. Compiled only when libslurm is found.
#include <fmt/format.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "LibSlurmCompat.h"
#include "mirage/daemon/slurm/LibSlurmClient.h"
#include "mirage/daemon/slurm/SlurmRelease.h"

// The API of the libslurm the build linked (cmake/FindSlurm.cmake); 0 where its soname said none.
#ifndef MIRAGE_SLURM_API
#define MIRAGE_SLURM_API 0
#endif

namespace mirage::daemon {

std::string built_slurm_release() {
  return to_string(slurm_release_from_number(SLURM_VERSION_NUMBER));
}

SlurmReleaseCheck check_slurm_releases(const std::string& slurm_conf) {
  using Verdict = SlurmReleaseCheck::Verdict;
  const std::string conf = resolve_slurm_conf(slurm_conf);
  const SlurmRelease built = slurm_release_from_number(SLURM_VERSION_NUMBER);
  SlurmReleaseCheck out;
  const long loaded_api = slurm_api_version();
  out.loaded_api = std::to_string((loaded_api >> 16) & 0xff);
  out.problem = loaded_library_problem(built, MIRAGE_SLURM_API, loaded_api);
  if (!out.problem.empty()) {  // its replies would be read with another release's layout
    out.verdict = Verdict::kMismatch;
    return out;
  }
  setenv("SLURM_CONF", conf.c_str(), 1);
  // Left initialised: the client's own slurm_init is then a no-op, and libslurm's single
  // slurm_fini stays with the client that ends it.
  slurm_init(conf.c_str());
  slurm_conf_t* ctl = nullptr;
  if (slurm_load_ctl_conf(0, &ctl) != SLURM_SUCCESS) {
    const int code = last_slurm_error();
    if (code == SLURM_PROTOCOL_VERSION_ERROR) {
      out.verdict = Verdict::kMismatch;
      out.problem = fmt::format(
          "slurmctld of {} refuses the protocol of Slurm {}, the release this mirage was built "
          "against: it runs another release; build mirage against the cluster's libslurm-dev",
          conf, to_string(built));
    } else {
      out.verdict = Verdict::kNoAnswer;
      out.problem = fmt::format(
          "slurmctld of {} does not answer ({}): start it, or correct SlurmctldHost and "
          "SlurmctldPort there",
          conf, slurm_strerror(code));
    }
    return out;
  }
  out.controller_release = ctl->version ? ctl->version : "";
  slurm_free_ctl_conf(ctl);
  const auto controller = parse_slurm_release(out.controller_release);
  if (!controller)
    out.problem = fmt::format(
        "slurmctld of {} reports release '{}', expected one like 24.11.5: cannot tell whether "
        "it talks with Slurm {}",
        conf, out.controller_release, to_string(built));
  else
    out.problem = controller_problem(built, *controller);
  if (!out.problem.empty()) out.verdict = Verdict::kMismatch;
  return out;
}

}  // namespace mirage::daemon

#pragma once
// The real controller: read through libslurm, submitted to through the site's sbatch. Not
// thread-safe, like libslurm itself: the daemon makes every call from its one Slurm thread.
// libslurm is initialised lazily on that thread, from an explicit slurm.conf (libslurm exits the
// whole process when it finds no configuration, so the file is checked first and a missing one is a
// clear error instead).
#include <memory>
#include <string>

#include "mirage/daemon/slurm/SbatchSubmitter.h"
#include "mirage/daemon/slurm/SlurmClient.h"

namespace mirage::daemon {

// The slurm.conf to use: `configured` if not empty, else $SLURM_CONF, else
// /etc/slurm/slurm.conf. Throws std::runtime_error naming what was tried when none is readable.
std::string resolve_slurm_conf(const std::string& configured);

// True when this build has libslurm.
bool have_libslurm();

// Whether libslurm's error `code` leaves a call's outcome unknown (no answer from the controller:
// communication errors, timeouts, refused connections) rather than a refusal. Built with libslurm
// only.
bool slurm_error_is_transient(int code);

// The Slurm release this build was compiled against ("24.11.5"); empty without libslurm.
std::string built_slurm_release();

// Whether this build, the libslurm it loaded and the slurmctld of `slurm_conf` work together.
struct SlurmReleaseCheck {
  enum class Verdict { kFit, kMismatch, kNoAnswer };
  Verdict verdict = Verdict::kFit;
  std::string problem;             // one line: both releases (or the slurm.conf) and what to do
  std::string controller_release;  // as slurmctld reports it, when it answered
  std::string loaded_api;          // of the libslurm this process loaded: "42" (libslurm.so.42)
};
// Asks slurmctld for its release (one RPC). Throws std::runtime_error when this build has no
// libslurm or `slurm_conf` cannot be read.
SlurmReleaseCheck check_slurm_releases(const std::string& slurm_conf);

// Creates the client that reads through libslurm and submits through sbatch (its SLURM_CONF set
// to the same slurm.conf). Throws std::runtime_error when this build has no libslurm.
std::unique_ptr<SlurmClient> make_libslurm_client(const std::string& slurm_conf,
                                                  SbatchSettings sbatch);

}  // namespace mirage::daemon

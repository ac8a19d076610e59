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

// Creates the client that reads through libslurm and submits through sbatch (its SLURM_CONF set
// to the same slurm.conf). Throws std::runtime_error when this build has no libslurm.
std::unique_ptr<SlurmClient> make_libslurm_client(const std::string& slurm_conf,
                                                  SbatchSettings sbatch);

}  // namespace mirage::daemon

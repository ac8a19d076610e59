#pragma once
// What differs in libslurm's API between the releases mirage builds against (22.05 to 24.11),
// named once so that the client reads the same on each. Include after <slurm/slurm.h>.
#include <cerrno>

namespace mirage::daemon {

// Slurm 24.05 dropped the pointer typedefs List and ListIterator for the struct names.
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0)
using SlurmList = list_t*;
using SlurmListIterator = list_itr_t*;
#else
using SlurmList = List;
using SlurmListIterator = ListIterator;
#endif

// libslurm reports a failed call's code in errno; slurm_get_errno(), which only returned it, is
// gone from later releases.
inline int last_slurm_error() {
  return errno;
}

}  // namespace mirage::daemon

#pragma once
// What differs in libslurm's API between the releases mirage builds against (22.05 to 24.11),
// named once so that the client reads the same on each. Include after <slurm/slurm.h>.
#include <cerrno>
#include <cstdint>

// libslurm exports the name of a pending job's reason (what squeue prints) without declaring it in
// slurm.h, and later releases renamed it; weak, so that either links and a libslurm with neither
// gives the reason by number.
extern "C" const char* slurm_job_reason_string(enum job_state_reason inx) __attribute__((weak));
extern "C" const char* slurm_job_state_reason_string(enum job_state_reason inx)
    __attribute__((weak));

namespace mirage::daemon {

// The reason's name, or null where this libslurm exports no name for it.
inline const char* slurm_reason_name(std::uint16_t reason) {
  const auto inx = static_cast<job_state_reason>(reason);
  if (slurm_job_state_reason_string != nullptr) return slurm_job_state_reason_string(inx);
  if (slurm_job_reason_string != nullptr) return slurm_job_reason_string(inx);
  return nullptr;
}

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

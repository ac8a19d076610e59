#pragma once
// Slurm releases and whether two of them work together: the one mirage was built against, the
// libslurm the process loaded and the release slurmctld runs. Pure: the libslurm calls that read
// them live in the Slurm client.
#include <optional>
#include <string>
#include <string_view>

namespace mirage::daemon {

struct SlurmRelease {
  int major = 0;  // the year: 22, 24
  int minor = 0;  // the month: 5, 11
  int micro = 0;
  friend bool operator==(const SlurmRelease&, const SlurmRelease&) = default;
};

// "22.05.8", "24.11.0-0rc1" (what slurm_load_ctl_conf's version says); none for anything else.
std::optional<SlurmRelease> parse_slurm_release(std::string_view text);
// SLURM_VERSION_NUMBER: (major << 16) | (minor << 8) | micro.
SlurmRelease slurm_release_from_number(long number);
std::string to_string(const SlurmRelease& r);  // "24.11.5"
std::string series(const SlurmRelease& r);     // "24.11"

// The Slurm series whose libslurm has API `api` (SLURM_API_CURRENT in Slurm's META, its soname's
// number): "24.11" for 42, from 20.11 (36) to 25.11 (44); none for a number outside them.
std::optional<std::string> series_of_libslurm_api(long api);

// Why the libslurm loaded cannot serve a build made against Slurm `built`, whose libslurm had the
// API `built_api` (slurm_api_version()'s first number, the soname's: 38 for 22.05): each API has
// its own structures' layout. Empty when the APIs are one, or the build's is unknown (0).
std::string loaded_library_problem(const SlurmRelease& built, int built_api, long loaded_api);

// Why a slurmctld of release `controller` does not talk with a client of release `client`: it
// accepts clients of its own release and the two before it (three from 24.11 on), none newer.
// Empty when it does; a release it cannot place in Slurm's sequence counts by series alone.
std::string controller_problem(const SlurmRelease& client, const SlurmRelease& controller);

}  // namespace mirage::daemon

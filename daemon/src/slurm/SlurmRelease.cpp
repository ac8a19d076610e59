#include "mirage/daemon/slurm/SlurmRelease.h"

#include <fmt/format.h>

#include <array>
#include <charconv>

namespace mirage::daemon {
namespace {

bool take_number(std::string_view& text, int& out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  if (ec != std::errc() || ptr == text.data() || out < 0) return false;
  text.remove_prefix(static_cast<std::size_t>(ptr - text.data()));
  return true;
}

bool take_dot(std::string_view& text) {
  if (text.empty() || text.front() != '.') return false;
  text.remove_prefix(1);
  return true;
}

// Slurm's major releases in order (year * 100 + month), up to the one from which they come each
// May and November.
constexpr std::array<int, 12> kReleases{1702, 1711, 1808, 1905, 2002, 2011,
                                        2108, 2205, 2302, 2311, 2405, 2411};

// The release's place in that order; none for a series Slurm never had.
std::optional<int> ordinal(const SlurmRelease& r) {
  for (std::size_t i = 0; i < kReleases.size(); ++i)
    if (kReleases[i] == r.major * 100 + r.minor) return static_cast<int>(i);
  if (r.major > 24 && (r.minor == 5 || r.minor == 11))
    return static_cast<int>(kReleases.size()) - 1 + (r.major - 24) * 2 - (r.minor == 5 ? 1 : 0);
  return std::nullopt;
}

// libslurm's API number (SLURM_API_CURRENT in each release's META) from 20.11's on: one a release.
constexpr int kFirstKnownApi = 36;
constexpr std::array<const char*, 9> kSeriesOfApi{"20.11", "21.08", "22.05", "23.02", "23.11",
                                                  "24.05", "24.11", "25.05", "25.11"};

}  // namespace

std::optional<std::string> series_of_libslurm_api(long api) {
  if (api < kFirstKnownApi || api >= kFirstKnownApi + static_cast<long>(kSeriesOfApi.size()))
    return std::nullopt;
  return kSeriesOfApi[static_cast<std::size_t>(api - kFirstKnownApi)];
}

std::optional<SlurmRelease> parse_slurm_release(std::string_view text) {
  SlurmRelease r;
  if (!take_number(text, r.major) || !take_dot(text) || !take_number(text, r.minor) ||
      !take_dot(text) || !take_number(text, r.micro))
    return std::nullopt;
  // A pre-release or packaging suffix ("-0rc1") names the same release.
  if (!text.empty() && text.front() != '-') return std::nullopt;
  if (r.major == 0 || r.minor < 1 || r.minor > 12) return std::nullopt;
  return r;
}

SlurmRelease slurm_release_from_number(long number) {
  return {static_cast<int>((number >> 16) & 0xff), static_cast<int>((number >> 8) & 0xff),
          static_cast<int>(number & 0xff)};
}

std::string to_string(const SlurmRelease& r) {
  return fmt::format("{}.{:02}.{}", r.major, r.minor, r.micro);
}

std::string series(const SlurmRelease& r) {
  return fmt::format("{}.{:02}", r.major, r.minor);
}

std::string loaded_library_problem(const SlurmRelease& built, int built_api, long loaded_api) {
  const long loaded = (loaded_api >> 16) & 0xff;
  if (built_api == 0 || loaded == built_api) return {};
  const auto loaded_series = series_of_libslurm_api(loaded);
  return fmt::format(
      "the libslurm loaded is {} (API {}, libslurm.so.{}) but this mirage was built against "
      "Slurm {}, whose libslurm has API {}: rebuild mirage against the installed libslurm-dev "
      "(scripts/build.sh), or take the tarball made for {}",
      loaded_series ? "Slurm " + *loaded_series + "'s" : "of a release mirage does not know",
      loaded, loaded, to_string(built), built_api,
      loaded_series ? "Slurm " + *loaded_series : "that release");
}

std::string controller_problem(const SlurmRelease& client, const SlurmRelease& controller) {
  if (series(client) == series(controller)) return {};
  const auto a = ordinal(client);
  const auto b = ordinal(controller);
  if (a && b) {
    const int behind = *b - *a;  // how many releases the client trails the controller
    const int accepted =
        controller.major > 24 || (controller.major == 24 && controller.minor >= 11) ? 3 : 2;
    if (behind > 0 && behind <= accepted) return {};
    if (behind < 0)
      return fmt::format(
          "slurmctld runs Slurm {}, older than the Slurm {} this mirage was built against (a "
          "controller does not understand newer clients): build mirage against the cluster's "
          "libslurm-dev {}",
          to_string(controller), to_string(client), series(controller));
    return fmt::format(
        "slurmctld runs Slurm {}, {} releases after the Slurm {} this mirage was built against "
        "(it accepts clients up to {} releases older): build mirage against the cluster's "
        "libslurm-dev {}",
        to_string(controller), behind, to_string(client), accepted, series(controller));
  }
  return fmt::format(
      "slurmctld runs Slurm {}, another release than the Slurm {} this mirage was built against: "
      "build mirage against the cluster's libslurm-dev {}",
      to_string(controller), to_string(client), series(controller));
}

}  // namespace mirage::daemon

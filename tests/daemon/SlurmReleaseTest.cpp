// Which Slurm releases mirage accepts: of the libslurm it loaded, and of the controller.
#include <gtest/gtest.h>

#include <utility>

#include "mirage/daemon/slurm/SlurmRelease.h"

namespace mirage::daemon {
namespace {

SlurmRelease release(const char* text) {
  const auto r = parse_slurm_release(text);
  EXPECT_TRUE(r.has_value()) << text;
  return r.value_or(SlurmRelease{});
}

TEST(SlurmRelease, ParsesWhatTheControllerReports) {
  EXPECT_EQ(release("22.05.8"), (SlurmRelease{22, 5, 8}));
  EXPECT_EQ(release("24.11.0-0rc1"), (SlurmRelease{24, 11, 0}));
  EXPECT_FALSE(parse_slurm_release("").has_value());
  EXPECT_FALSE(parse_slurm_release("24.11").has_value());
  EXPECT_FALSE(parse_slurm_release("slurm 24.11.5").has_value());
  EXPECT_FALSE(parse_slurm_release("24.13.1").has_value());
  EXPECT_FALSE(parse_slurm_release("24.11.5x").has_value());
}

TEST(SlurmRelease, DecodesSlurmsVersionNumber) {
  EXPECT_EQ(slurm_release_from_number((22 << 16) | (5 << 8) | 8), (SlurmRelease{22, 5, 8}));
  EXPECT_EQ(to_string(slurm_release_from_number((24 << 16) | (11 << 8) | 5)), "24.11.5");
  EXPECT_EQ(series(SlurmRelease{22, 5, 8}), "22.05");
}

constexpr long api(long current) {
  return current << 16;
}

TEST(SlurmRelease, LoadedLibraryOfTheBuiltApiFits) {
  EXPECT_EQ(loaded_library_problem(release("22.05.8"), 38, api(38)), "");
  EXPECT_EQ(loaded_library_problem(release("22.05.8"), 0, api(42)), "");  // the build's unknown
}

TEST(SlurmRelease, LibslurmApiNamesItsRelease) {
  // SLURM_API_CURRENT in each release's META (SchedMD/slurm, tags slurm-20-11-0-1 to 25-11-0-1).
  const std::pair<long, const char*> releases[] = {{36, "20.11"}, {37, "21.08"}, {38, "22.05"},
                                                   {39, "23.02"}, {40, "23.11"}, {41, "24.05"},
                                                   {42, "24.11"}, {43, "25.05"}, {44, "25.11"}};
  for (const auto& [api, expected] : releases)
    EXPECT_EQ(series_of_libslurm_api(api), expected) << api;
  EXPECT_FALSE(series_of_libslurm_api(35).has_value());
  EXPECT_FALSE(series_of_libslurm_api(45).has_value());
  EXPECT_FALSE(series_of_libslurm_api(0).has_value());
}

TEST(SlurmRelease, LoadedLibraryOfAnotherApiIsRefusedNamingBothReleases) {
  const std::string p = loaded_library_problem(release("22.05.8"), 38, api(42));
  EXPECT_NE(p.find("the libslurm loaded is Slurm 24.11's (API 42, libslurm.so.42)"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("built against Slurm 22.05.8, whose libslurm has API 38"), std::string::npos)
      << p;
  EXPECT_NE(p.find("rebuild mirage"), std::string::npos) << p;
  EXPECT_NE(p.find("the tarball made for Slurm 24.11"), std::string::npos) << p;
}

TEST(SlurmRelease, LoadedLibraryOfAnUnknownApiIsNamedByItsNumber) {
  const std::string p = loaded_library_problem(release("24.11.5"), 42, api(47));
  EXPECT_NE(p.find("the libslurm loaded is of a release mirage does not know (API 47, "
                   "libslurm.so.47)"),
            std::string::npos)
      << p;
  EXPECT_EQ(p.find("Slurm 26"), std::string::npos) << p;
}

TEST(SlurmRelease, ControllerOfTheSameSeriesFits) {
  EXPECT_EQ(controller_problem(release("24.11.5"), release("24.11.1")), "");
}

TEST(SlurmRelease, ControllerUpToTwoReleasesAheadFitsBefore24_11) {
  EXPECT_EQ(controller_problem(release("22.05.8"), release("23.02.1")), "");
  EXPECT_EQ(controller_problem(release("22.05.8"), release("23.11.4")), "");
  const std::string p = controller_problem(release("22.05.8"), release("24.05.2"));
  EXPECT_NE(p.find("slurmctld runs Slurm 24.05.2, 3 releases after the Slurm 22.05.8"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("libslurm-dev 24.05"), std::string::npos) << p;
}

TEST(SlurmRelease, ControllerFrom24_11AcceptsThreeReleasesBehind) {
  EXPECT_EQ(controller_problem(release("23.02.7"), release("24.11.5")), "");
  EXPECT_NE(controller_problem(release("22.05.8"), release("24.11.5")), "");
  EXPECT_EQ(controller_problem(release("24.11.5"), release("25.11.0")), "");
  EXPECT_NE(controller_problem(release("24.05.1"), release("26.05.0")), "");
}

TEST(SlurmRelease, ControllerOlderThanTheBuildIsRefused) {
  const std::string p = controller_problem(release("24.11.5"), release("22.05.8"));
  EXPECT_NE(p.find("slurmctld runs Slurm 22.05.8, older than the Slurm 24.11.5"), std::string::npos)
      << p;
  EXPECT_NE(p.find("libslurm-dev 22.05"), std::string::npos) << p;
}

TEST(SlurmRelease, ControllerOfAnUnknownSeriesMustMatchTheBuildsSeries) {
  EXPECT_NE(controller_problem(release("22.05.8"), release("22.06.1")), "");
  EXPECT_EQ(controller_problem(release("22.06.1"), release("22.06.3")), "");
}

}  // namespace
}  // namespace mirage::daemon

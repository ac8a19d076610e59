// The risk frontier saved for the daemon: written, read back, and chosen from.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "mirage/agents/RiskFrontier.h"
#include "mirage/core/Error.h"
#include "support/TempDir.h"

namespace mirage {
namespace {

std::string temp_file(const std::string& name) {
  return test::temp_file(name);
}

// What reading `path` throws ("" when it reads).
std::string error_of(const std::string& path) {
  try {
    read_risk_frontier(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

RiskFrontier ls6() {
  return {"ls6.log",
          8,
          48 * kHour,
          "handoff",
          {{"reactive", 0.66, 0.01}, {"average@-2h", 0.57, 0.13}, {"forecast@-2h", 0.10, 1.56}}};
}

TEST(RiskFrontier, ReadsBackWhatItWrote) {
  const std::string path = temp_file("frontier.toml");
  write_risk_frontier(path, ls6());
  const RiskFrontier f = read_risk_frontier(path);
  EXPECT_EQ(f.trace, "ls6.log");
  EXPECT_EQ(f.chain_nodes, 8);
  EXPECT_EQ(f.time_limit, 48 * kHour);
  EXPECT_EQ(f.overlap, "handoff");
  ASSERT_EQ(f.points.size(), 3u);
  EXPECT_EQ(f.points[2].policy, "forecast@-2h");
  EXPECT_DOUBLE_EQ(f.points[2].mean_overlap_h, 1.56);
  std::remove(path.c_str());
}

TEST(RiskFrontier, TheLeastInterruptionWithinTheBudgetIsChosen) {
  const RiskFrontier f = ls6();
  EXPECT_EQ(point_within(f, 30 * kMinute)->policy, "average@-2h");
  EXPECT_EQ(point_within(f, 2 * kHour)->policy, "forecast@-2h");
  EXPECT_EQ(point_within(f, kMinute)->policy, "reactive");
  EXPECT_FALSE(point_within(f, 0));
  EXPECT_EQ(least_overlap_point(f).policy, "reactive");
}

TEST(RiskFrontier, AWrongKeyOrAPointWithoutItsFiguresIsNamedByFileLineAndKey) {
  const std::string path = temp_file("bad-frontier.toml");
  std::ofstream(path) << "trace = \"x\"\n\n[[point]]\npolicy = \"average\"\nmean_overlap_h = -1\n";
  EXPECT_NE(error_of(path).find(path + ":5: field 'point.mean_overlap_h'"), std::string::npos)
      << error_of(path);
  std::ofstream(path) << "trace = \"x\"\n[[point]]\npolicy = \"average\"\n";
  EXPECT_NE(error_of(path).find("a point needs policy, mean_interruption_h and mean_overlap_h"),
            std::string::npos)
      << error_of(path);
  std::ofstream(path) << "trace = \"x\"\nchains = 3\n";
  EXPECT_NE(error_of(path).find(":2: field 'chains': unknown key"), std::string::npos)
      << error_of(path);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace mirage

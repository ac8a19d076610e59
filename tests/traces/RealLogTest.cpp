// The readers on the real logs of the folder MIRAGE_TRACES names (the shared traces: read from
// there, never copied into the repository). Label real-logs: scripts/test.sh runs them when
// MIRAGE_TRACES is set, and CI always does.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include "mirage/core/Time.h"
#include "mirage/traces/Trace.h"
#include "mirage/traces/TraceStats.h"

namespace mirage {
namespace {

namespace fs = std::filesystem;

const std::string kTraces = MIRAGE_TRACES;

std::size_t count(const std::map<std::string, std::size_t>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

// A real log of the folder; its absence is a failure, not a skip.
std::string shared_file(const std::string& relative) {
  const std::string path = kTraces + "/" + relative;
  EXPECT_TRUE(fs::exists(path)) << "a real log is missing: " << path
                                << " (MIRAGE_TRACES names the folder of the shared traces)";
  return path;
}

TEST(RealLogs, ReadsLs6FixedLayout) {
  const std::string path = shared_file("gpu/tacc-ls6/ls6-a100-until-2023-02.log.gz");
  const Trace t = read_trace(path);
  EXPECT_EQ(t.format, TraceFormat::kSacctFixed);
  EXPECT_EQ(t.jobs.size(), 17975u);
  EXPECT_EQ(t.report.rows, t.report.jobs + t.report.skipped_total());
  const TraceStats s = compute_trace_stats(t);
  EXPECT_EQ(s.first_submit, *parse_iso_time("2022-10-05T11:52:48"));
  EXPECT_EQ(s.largest_job_nodes, 64);
  EXPECT_TRUE(std::is_sorted(t.jobs.begin(), t.jobs.end(),
                             [](const Job& a, const Job& b) { return a.submit < b.submit; }));
  const auto two_days = std::count_if(t.jobs.begin(), t.jobs.end(),
                                      [](const Job& j) { return j.time_limit == 2 * kDay; });
  EXPECT_EQ(two_days, 4714);  // the most common limit is 2880 minutes
}

TEST(RealLogs, ReadsHpc2nSwf) {
  // How fast: `mirage trace info` prints it (docs/results/trace-reading.md).
  const Trace t = read_trace(shared_file("swf-classic/HPC2N-2002-2.2-cln.swf.gz"));
  EXPECT_EQ(t.format, TraceFormat::kSwf);
  EXPECT_EQ(t.report.rows, 202871u);  // MaxRecords in the header
  EXPECT_EQ(t.report.jobs + t.report.skipped_total(), t.report.rows);
  EXPECT_EQ(t.jobs.size(), t.report.jobs);
  EXPECT_EQ(t.jobs.size(), 202871u);
  EXPECT_EQ(t.machine_nodes, 240);
  EXPECT_EQ(t.unix_start_time, 1027839845);
  EXPECT_GE(t.jobs.front().submit, t.unix_start_time);
  std::size_t without_start = 0;
  for (const Job& j : t.jobs) {
    ASSERT_GE(j.runtime(), 0) << "job " << j.id;
    if (j.started())
      ASSERT_GE(j.wait(), 0) << "job " << j.id;
    else
      ++without_start;
    ASSERT_GE(j.nodes, 1) << "job " << j.id;
    ASSERT_GT(j.time_limit, 0) << "job " << j.id;
  }
  EXPECT_EQ(without_start,
            count(t.report.adjusted, "missing wait time: replayed, not compared with a real wait"));
}

TEST(RealLogs, ReadsTheOtherClassicSwfLogs) {
  struct Case {
    const char* file;
    std::size_t rows, jobs;
    int nodes;
  };
  for (const Case& c : {Case{"swf-classic/CTC-SP2-1996-3.1-cln.swf.gz", 77222, 77222, 338},
                        Case{"swf-classic/KTH-SP2-1996-2.1-cln.swf.gz", 28476, 28475, 100},
                        Case{"swf-classic/SDSC-SP2-1998-4.2-cln.swf.gz", 59715, 54044, 128}}) {
    const Trace t = read_trace(shared_file(c.file));
    EXPECT_EQ(t.report.rows, c.rows) << c.file;
    EXPECT_EQ(t.report.jobs + t.report.skipped_total(), t.report.rows) << c.file;
    EXPECT_EQ(t.jobs.size(), c.jobs) << c.file;
    EXPECT_EQ(t.machine_nodes, c.nodes) << c.file;
  }
}

}  // namespace
}  // namespace mirage

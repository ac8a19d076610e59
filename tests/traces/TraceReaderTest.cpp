// Trace readers (SWF, sacct --parsable2, sacct fixed/tab), gzip input, quirk handling, strict
// and lenient modes, statistics; on small in-memory texts and the shipped samples.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mirage/core/Error.h"
#include "mirage/core/Time.h"
#include "mirage/traces/Trace.h"
#include "mirage/traces/TraceStats.h"
#include "support/GzipBytes.h"

namespace mirage {
namespace {

namespace fs = std::filesystem;
using test_support::gzip_bytes;

const std::string kSource = MIRAGE_SOURCE_DIR;

Trace read(std::string_view text, TraceFormat format = TraceFormat::kAuto, bool lenient = false,
           const std::string& name = "x.swf") {
  TraceReadOptions options;
  options.format = format;
  options.lenient = lenient;
  return read_trace_text(text, name, options);
}

Trace read_lenient(std::string_view text, const std::string& name = "x.swf") {
  return read(text, TraceFormat::kAuto, true, name);
}

// The error a strict read throws (fails the test when none is thrown).
InputError read_error(std::string_view text, const std::string& name = "x.swf",
                      TraceFormat format = TraceFormat::kAuto) {
  try {
    read(text, format, false, name);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError";
  return InputError(SourceLocation{}, "none thrown");
}

std::size_t count(const std::map<std::string, std::size_t>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

// One SWF row from the fields that matter; the rest are -1.
std::string swf_row(long id, long submit, long wait, long runtime, long alloc, long requested,
                    long limit, long user = 1, long partition = 1) {
  return std::to_string(id) + " " + std::to_string(submit) + " " + std::to_string(wait) + " " +
         std::to_string(runtime) + " " + std::to_string(alloc) + " -1 -1 " +
         std::to_string(requested) + " " + std::to_string(limit) + " -1 1 " + std::to_string(user) +
         " 1 -1 -1 " + std::to_string(partition) + " -1 -1\n";
}

const std::string kSwfHeader =
    "; Version: 2.2\n"
    "; UnixStartTime: 1000000\n"
    "; MaxNodes: 4 (a note the reader ignores)\n"
    "; MaxProcs: 16\n"
    ";\n";

// ---------------------------------------------------------------------------------------------
// SWF

TEST(TraceReaderTest, ReadsSwfHeaderAndNormalisesTimes) {
  const Trace t = read(kSwfHeader + swf_row(7, 100, 50, 300, 8, 8, 600, 42, 2));
  EXPECT_EQ(t.format, TraceFormat::kSwf);
  EXPECT_EQ(t.unix_start_time, 1000000);
  EXPECT_EQ(t.machine_nodes, 4);  // MaxProcs 16 > MaxNodes 4: 4 processors per node
  ASSERT_EQ(t.jobs.size(), 1u);
  const Job& j = t.jobs[0];
  EXPECT_EQ(j.id, 7);
  EXPECT_EQ(j.submit, 1000100);  // UnixStartTime + submit field
  EXPECT_EQ(j.start, 1000150);   // + wait
  EXPECT_EQ(j.end, 1000450);     // + run time
  EXPECT_EQ(j.time_limit, 600);
  EXPECT_EQ(j.nodes, 2);  // 8 processors / 4 per node
  EXPECT_EQ(j.user, "42");
  EXPECT_EQ(j.partition, "2");
  EXPECT_EQ(j.gpus_per_node, 0);
  EXPECT_EQ(t.report.rows, 1u);
  EXPECT_EQ(t.report.jobs, 1u);
  EXPECT_TRUE(t.report.skipped.empty());
  EXPECT_TRUE(t.report.adjusted.empty());
}

TEST(TraceReaderTest, SwfProcessorsRoundUpToWholeNodesAndFallBackToRequested) {
  const Trace t = read(kSwfHeader + swf_row(1, 0, 0, 10, 5, 5, 60) +  // 5 procs -> 2 nodes
                       swf_row(2, 1, 0, 10, -1, 9, 60) +              // requested 9 -> 3 nodes
                       swf_row(3, 2, 0, 10, 0, 1, 60));               // allocated 0: requested
  ASSERT_EQ(t.jobs.size(), 3u);
  EXPECT_EQ(t.jobs[0].nodes, 2);
  EXPECT_EQ(t.jobs[1].nodes, 3);
  EXPECT_EQ(t.jobs[2].nodes, 1);
  EXPECT_EQ(count(t.report.adjusted, "size from requested processors"), 2u);
}

TEST(TraceReaderTest, SwfWithEqualOrMissingMaxNodesCountsProcessorsAsNodes) {
  const Trace equal = read("; MaxNodes: 240\n; MaxProcs: 240\n" + swf_row(1, 0, 0, 10, 7, 7, 60));
  EXPECT_EQ(equal.machine_nodes, 240);
  EXPECT_EQ(equal.jobs.at(0).nodes, 7);
  const Trace procs_only = read("; MaxProcs: 128\n" + swf_row(1, 0, 0, 10, 7, 7, 60));
  EXPECT_EQ(procs_only.machine_nodes, 128);
  EXPECT_EQ(procs_only.jobs.at(0).nodes, 7);
  const Trace none = read(swf_row(1, 0, 0, 10, 7, 7, 60));
  EXPECT_EQ(none.machine_nodes, 0);
  EXPECT_EQ(none.unix_start_time, 0);
  EXPECT_EQ(none.jobs.at(0).submit, 0);
}

TEST(TraceReaderTest, SwfMissingTimeLimitUsesRuntimeAndCountsIt) {
  const Trace t = read(kSwfHeader + swf_row(1, 0, 0, 500, 4, 4, -1) +
                       swf_row(2, 0, 0, 0, 4, 4, -1));  // zero runtime: a one-minute limit
  ASSERT_EQ(t.jobs.size(), 2u);
  EXPECT_EQ(t.jobs[0].time_limit, 500);
  EXPECT_EQ(t.jobs[1].time_limit, kMinute);
  EXPECT_EQ(count(t.report.adjusted, "missing time limit: used runtime"), 2u);
}

TEST(TraceReaderTest, SkipsRowsWithMissingFieldsAndCountsThem) {
  const Trace t = read(kSwfHeader + swf_row(1, 0, 0, -1, 4, 4, 60) +  // missing runtime
                       swf_row(2, -1, 0, 10, 4, 4, 60) +              // missing submit
                       swf_row(4, 0, 0, 10, -1, -1, 60) +             // missing size
                       swf_row(5, 0, 0, -20, 4, 4, 60) +              // negative runtime
                       swf_row(6, 0, -5, 10, 4, 4, 60) +              // negative wait
                       swf_row(7, 0, 0, 10, 4, 4, 60));               // fine
  EXPECT_EQ(t.report.rows, 6u);
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].id, 7);
  EXPECT_EQ(count(t.report.skipped, "missing runtime"), 1u);
  EXPECT_EQ(count(t.report.skipped, "missing submit time"), 1u);
  EXPECT_EQ(count(t.report.skipped, "missing size"), 1u);
  EXPECT_EQ(count(t.report.skipped, "negative runtime"), 1u);
  EXPECT_EQ(count(t.report.skipped, "started before submit"), 1u);
  EXPECT_EQ(t.report.skipped_total(), 5u);
  EXPECT_FALSE(t.report.examples.empty());
  EXPECT_NE(t.report.examples[0].find("x.swf:6:"), std::string::npos) << t.report.examples[0];
}

// A log that does not say when its jobs started (wait -1) still replays: the run time is kept,
// the start stays unknown, and the report says the jobs cannot be compared.
TEST(TraceReaderTest, KeepsJobsWithoutAWaitTimeForReplay) {
  const Trace t =
      read(kSwfHeader + swf_row(1, 0, -1, 10, 4, 4, 60) + swf_row(2, 5, 3, 20, 4, 4, 60));
  ASSERT_EQ(t.jobs.size(), 2u);
  EXPECT_FALSE(t.jobs[0].started());
  EXPECT_EQ(t.jobs[0].runtime(), 10);
  EXPECT_EQ(t.jobs[0].wait(), kUnknownTime);
  EXPECT_TRUE(t.jobs[1].started());
  EXPECT_EQ(t.jobs[1].runtime(), 20);
  EXPECT_EQ(count(t.report.adjusted, "missing wait time: replayed, not compared with a real wait"),
            1u);
  EXPECT_EQ(t.report.skipped_total(), 0u);
}

TEST(TraceReaderTest, KeepsAndCountsZeroRuntimeOverrunsAndJobsLargerThanTheMachine) {
  const Trace t = read(kSwfHeader + swf_row(1, 0, 0, 0, 4, 4, 60) +  // zero runtime
                       swf_row(2, 0, 0, 90, 4, 4, 60) +              // ran past its limit
                       swf_row(3, 0, 0, 10, 20, 20, 60));            // 5 nodes on a 4-node machine
  ASSERT_EQ(t.jobs.size(), 3u);
  EXPECT_EQ(count(t.report.adjusted, "zero runtime"), 1u);
  EXPECT_EQ(count(t.report.adjusted, "ran past its time limit"), 1u);
  EXPECT_EQ(count(t.report.adjusted, "larger than the machine"), 1u);
  EXPECT_EQ(t.jobs[2].nodes, 5);
  EXPECT_TRUE(t.report.skipped.empty());
}

TEST(TraceReaderTest, SortsOutOfOrderRowsAndCountsThem) {
  const Trace t = read(kSwfHeader + swf_row(1, 10, 0, 5, 1, 1, 60) +
                       swf_row(2, 5, 0, 5, 1, 1, 60) +  // earlier than job 1
                       swf_row(3, 20, 0, 5, 1, 1, 60) +
                       swf_row(4, 10, 0, 5, 1, 1, 60) +  // earlier than job 3, ties job 1
                       swf_row(5, 30, 0, 5, 1, 1, 60));
  EXPECT_EQ(count(t.report.adjusted, "out of submit order"), 2u);
  std::vector<JobId> ids;
  for (const Job& j : t.jobs) ids.push_back(j.id);
  EXPECT_EQ(ids, (std::vector<JobId>{2, 1, 4, 3, 5}));  // stable: 1 stays before 4
}

TEST(TraceReaderTest, AcceptsFractionalNumbersAndCrlfLineEndings) {
  const Trace t = read(
      "; MaxNodes: 8\r\n; MaxProcs: 8\r\n"
      "1 0 0 99.6 2 1.5 -1 2 120 -1 1 1 1 -1 -1 1 -1 -1\r\n"
      "\r\n"
      "2 5 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 1 -1 -1");  // no final newline
  ASSERT_EQ(t.jobs.size(), 2u);
  EXPECT_EQ(t.jobs[0].end - t.jobs[0].start, 100);
  EXPECT_EQ(t.machine_nodes, 8);
  EXPECT_EQ(t.report.rows, 2u);
}

// ---------------------------------------------------------------------------------------------
// Strict and lenient modes

TEST(TraceReaderTest, StrictModeNamesFileLineAndField) {
  const std::string text = kSwfHeader + swf_row(1, 0, 0, 10, 1, 1, 60) +
                           "2 5 0 abc 1 -1 -1 1 60 -1 1 1 1 -1 -1 1 -1 -1\n";
  const InputError e = read_error(text, "x.swf");
  EXPECT_STREQ(e.what(), "x.swf:7: field 'run time': expected an integer, got 'abc'");
  EXPECT_EQ(e.where().file, "x.swf");
  EXPECT_EQ(e.where().line, 7);
  EXPECT_EQ(e.where().field, "run time");
}

TEST(TraceReaderTest, NegativeSizeOtherThanMissingIsAnError) {
  const std::string text = kSwfHeader + "1 0 0 10 -3 -1 -1 -3 60 -1 1 1 1 -1 -1 1 -1 -1\n";
  const InputError e = read_error(text, "neg.swf");
  EXPECT_EQ(e.where().line, 6);
  EXPECT_NE(std::string(e.what()).find("processor count"), std::string::npos) << e.what();
  TraceReadOptions lenient;
  lenient.lenient = true;
  const Trace t = read_trace_text(text, "neg.swf", lenient);
  EXPECT_TRUE(t.jobs.empty());
  EXPECT_EQ(t.report.skipped_total(), 1u);
}

TEST(TraceReaderTest, StrictModeRejectsWrongFieldCount) {
  const InputError e = read_error(kSwfHeader + "1 2 3 4 5\n");
  EXPECT_EQ(e.where().line, 6);
  EXPECT_NE(std::string(e.what()).find("expected 18"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("got 5"), std::string::npos) << e.what();
}

TEST(TraceReaderTest, StrictModeRejectsUnusableHeaderValues) {
  const InputError e = read_error("; MaxNodes: lots\n" + swf_row(1, 0, 0, 10, 1, 1, 60));
  EXPECT_EQ(e.where().line, 1);
  EXPECT_EQ(e.where().field, "MaxNodes");
  // Lenient mode ignores the value and says so.
  const Trace t = read_lenient("; MaxNodes: lots\n" + swf_row(1, 0, 0, 10, 1, 1, 60));
  EXPECT_EQ(t.machine_nodes, 0);
  EXPECT_EQ(t.jobs.size(), 1u);
  ASSERT_FALSE(t.report.examples.empty());
  EXPECT_NE(t.report.examples[0].find("x.swf:1: field 'MaxNodes'"), std::string::npos);
}

TEST(TraceReaderTest, LenientModeSkipsAndCountsBadRows) {
  const std::string text = kSwfHeader + swf_row(1, 0, 0, 10, 1, 1, 60) +
                           "2 5 0 abc 1 -1 -1 1 60 -1 1 1 1 -1 -1 1 -1 -1\n" +  // line 7
                           "3 5 0 10 1\n" +                                     // line 8
                           swf_row(4, 9, 0, 10, 1, 1, 60) +
                           "5 x 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 1 -1 -1\n";  // line 10
  const Trace t = read_lenient(text);
  EXPECT_EQ(t.report.rows, 5u);
  EXPECT_EQ(t.jobs.size(), 2u);
  EXPECT_EQ(count(t.report.skipped, "malformed run time"), 1u);
  EXPECT_EQ(count(t.report.skipped, "malformed submit time"), 1u);
  EXPECT_EQ(count(t.report.skipped, "malformed row (wrong field count)"), 1u);
  EXPECT_EQ(t.report.rows, t.report.jobs + t.report.skipped_total());
  ASSERT_EQ(t.report.examples.size(), 3u);
  EXPECT_EQ(t.report.examples[0], "x.swf:7: field 'run time': expected an integer, got 'abc'");
  EXPECT_NE(t.report.examples[1].find("x.swf:8:"), std::string::npos);
  EXPECT_NE(t.report.examples[2].find("x.swf:10: field 'submit time'"), std::string::npos);
}

TEST(TraceReaderTest, LenientModeKeepsOnlyAFewExamples) {
  std::string text = kSwfHeader;
  for (int i = 0; i < 50; ++i) text += "1 2 3\n";
  const Trace t = read_lenient(text);
  EXPECT_EQ(count(t.report.skipped, "malformed row (wrong field count)"), 50u);
  EXPECT_LE(t.report.examples.size(), 5u);
  EXPECT_GE(t.report.examples.size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Format detection and input

const std::string kParsable =
    "JobID|JobName|User|Partition|Submit|Start|End|Timelimit|NNodes|AllocTRES|State\n"
    "100|train|alice|gpu|2023-01-01T00:00:00|2023-01-01T00:10:00|2023-01-01T02:10:00|2-00:00:00|2|"
    "billing=8,cpu=8,gres/gpu=8,mem=100G,node=2|COMPLETED\n";

const std::string kFixed =
    "24779\n"
    "       JobID    JobName    UID               Start              Submit                 End "
    "  Priority TimelimitR ExitCode   NNodes\n"
    "------------ ---------- ------ ------------------- ------------------- ------------------- "
    "---------- ---------- -------- --------\n"
    "478729\tdimer.10\t00000\t2022-11-01T15:34:14\t2022-10-05T11:52:48\t2022-11-03T15:34:15\t"
    "1234\t2880\t0:0\t2\n"
    "      478730   dimer.11  00000 2022-11-05T04:12:18 2022-10-05T11:52:49 2022-11-07T03:12:22 "
    "      1234       2880      0:0        1\n";

TEST(TraceReaderTest, DetectsFormatFromContent) {
  EXPECT_EQ(read(kSwfHeader + swf_row(1, 0, 0, 10, 1, 1, 60)).format, TraceFormat::kSwf);
  EXPECT_EQ(read("\n" + swf_row(1, 0, 0, 10, 1, 1, 60)).format, TraceFormat::kSwf);  // no header
  EXPECT_EQ(read(kParsable).format, TraceFormat::kSacctParsable);
  EXPECT_EQ(read(kFixed).format, TraceFormat::kSacctFixed);
  EXPECT_EQ(read(kFixed.substr(kFixed.find('\n') + 1)).format, TraceFormat::kSacctFixed);

  const InputError e = read_error("id,submit,runtime\n1,2,3\n", "jobs.csv");
  EXPECT_EQ(e.where().file, "jobs.csv");
  EXPECT_EQ(e.where().line, 1);
  const std::string what = e.what();
  EXPECT_NE(what.find("cannot detect trace format"), std::string::npos) << what;
  EXPECT_NE(what.find("expected SWF, sacct --parsable2 or sacct fixed-column"), std::string::npos);
  EXPECT_NE(what.find("use --format"), std::string::npos);
  EXPECT_THROW(read(""), InputError);
}

TEST(TraceReaderTest, ExplicitFormatOverridesDetection) {
  // A sacct file forced to SWF fails on its first row, naming the row.
  const InputError e = read_error(kParsable, "jobs.txt", TraceFormat::kSwf);
  EXPECT_EQ(e.where().line, 1);
  // An empty file with an explicit format is simply an empty trace.
  const Trace t = read("", TraceFormat::kSwf);
  EXPECT_TRUE(t.jobs.empty());
  EXPECT_EQ(t.format, TraceFormat::kSwf);
}

TEST(TraceReaderTest, ParsesFormatNames) {
  for (TraceFormat f : {TraceFormat::kAuto, TraceFormat::kSwf, TraceFormat::kSacctParsable,
                        TraceFormat::kSacctFixed})
    EXPECT_EQ(parse_trace_format(to_string(f)), f);
  EXPECT_EQ(parse_trace_format("sacct"), TraceFormat::kSacctParsable);
  EXPECT_EQ(parse_trace_format("sacct-fixed"), TraceFormat::kSacctFixed);
  EXPECT_THROW(parse_trace_format("csv"), InputError);
}

// A valid SWF trace of `rows` jobs.
std::string swf_text(int rows) {
  std::string text = kSwfHeader;
  for (int i = 0; i < rows; ++i) text += swf_row(i + 1, i * 10, i % 7, 100 + i, 1 + i % 4, 1, 600);
  return text;
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("mirage-trace-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write_plain(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  fs::path dir_;
};

using TraceFileTest = TempDir;

TEST_F(TraceFileTest, ReadsGzipDirectly) {
  const std::string text = swf_text(1000);
  // By magic bytes, whatever the name says.
  const Trace gz = read_trace(write_plain("trace.swf", gzip_bytes(text)));
  const Trace plain = read_trace(write_plain("trace.swf.gz", text));
  ASSERT_EQ(gz.jobs.size(), 1000u);
  ASSERT_EQ(plain.jobs.size(), 1000u);
  EXPECT_EQ(gz.machine_nodes, 4);
  for (std::size_t i = 0; i < gz.jobs.size(); ++i) {
    EXPECT_EQ(gz.jobs[i].submit, plain.jobs[i].submit);
    EXPECT_EQ(gz.jobs[i].end, plain.jobs[i].end);
  }
  EXPECT_EQ(gz.source, (dir_ / "trace.swf").string());
}

TEST_F(TraceFileTest, ErrorsNameTheFile) {
  const std::string missing = (dir_ / "nope.swf").string();
  try {
    read_trace(missing);
    FAIL() << "no error for a missing file";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, missing);
  }
  // gzip magic followed by garbage.
  const std::string corrupt = write_plain("bad.gz", std::string("\x1f\x8b\x08\x00garbage", 11));
  EXPECT_THROW(read_trace(corrupt), InputError);
  // A strict error inside a file carries its path and line.
  const std::string bad = write_plain("bad.swf", kSwfHeader + "1 2 3\n");
  try {
    read_trace(bad);
    FAIL() << "no error for a malformed row";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, bad);
    EXPECT_EQ(e.where().line, 6);
  }
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A copy cut short anywhere (header, deflate data, trailer) loses jobs, in lenient mode too:
// lenient skips bad rows, it does not accept missing data.
TEST_F(TraceFileTest, TruncatedGzipIsAnError) {
  const std::string gz = gzip_bytes(swf_text(3000));
  std::vector<std::pair<std::string, std::size_t>> cuts;  // (bytes, where the file stops)
  for (std::size_t cut : {std::size_t{2}, std::size_t{10}, std::size_t{11}, gz.size() / 3,
                          gz.size() / 2, gz.size() - 8, gz.size() - 4, gz.size() - 1})
    cuts.emplace_back(gz.substr(0, cut), cut);
  const std::string sample =
      gzip_bytes(read_file_bytes(kSource + "/traces/samples/sample-sacct.txt"));
  cuts.emplace_back(sample.substr(0, sample.size() / 2), sample.size() / 2);
  for (const auto& [bytes, cut] : cuts) {
    const std::string path = write_plain("cut-" + std::to_string(cut) + ".gz", bytes);
    for (const bool lenient : {false, true}) {
      try {
        read_trace(path, {TraceFormat::kAuto, lenient});
        ADD_FAILURE() << "no error for a copy cut at byte " << cut << (lenient ? " (lenient)" : "");
      } catch (const InputError& e) {
        EXPECT_EQ(e.where().file, path);
        EXPECT_NE(e.message().find("ends early"), std::string::npos) << e.what();
        EXPECT_NE(e.message().find("compressed byte " + std::to_string(cut) + ","),
                  std::string::npos)
            << e.what();
      }
    }
  }
}

TEST_F(TraceFileTest, ReadsConcatenatedGzipMembersAndZeroPadding) {
  const std::string text = swf_text(2000);
  const std::size_t half = text.find('\n', text.size() / 2) + 1;
  const std::string joined = gzip_bytes(text.substr(0, half)) + gzip_bytes(text.substr(half));
  const Trace t = read_trace(write_plain("joined.gz", joined));
  EXPECT_EQ(t.jobs.size(), 2000u);
  const Trace padded = read_trace(write_plain("padded.gz", joined + std::string(512, '\0')));
  EXPECT_EQ(padded.jobs.size(), 2000u);
}

TEST_F(TraceFileTest, DataAfterTheLastGzipMemberIsAnError) {
  const std::string gz = gzip_bytes(swf_text(100));
  const std::string path = write_plain("tail.gz", gz + "more rows\n");
  try {
    read_trace(path, {TraceFormat::kAuto, true});
    FAIL() << "no error for data after the gzip stream";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, path);
    EXPECT_NE(e.message().find("compressed byte " + std::to_string(gz.size())), std::string::npos)
        << e.what();
  }
}

TEST_F(TraceFileTest, CorruptGzipNamesTheByteOffset) {
  std::string gz = gzip_bytes(swf_text(100));
  gz[gz.size() - 6] ^= 0x10;  // in the CRC: only the checksum can tell
  const std::string path = write_plain("crc.gz", gz);
  try {
    read_trace(path);
    FAIL() << "no error for a bad checksum";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, path);
    EXPECT_NE(e.message().find("corrupt at compressed byte"), std::string::npos) << e.what();
  }
}

// The size of a pipe is not known in advance; it must still be read to its end.
TEST_F(TraceFileTest, ReadsATraceFromAPipe) {
  const std::string path = (dir_ / "fifo").string();
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  const std::string text = swf_text(3000);
  std::thread writer([&] { std::ofstream(path, std::ios::binary) << text; });
  const Trace t = read_trace(path);
  writer.join();
  EXPECT_EQ(t.jobs.size(), 3000u);
}

// Row text quoted in errors and examples must not carry control bytes to a terminal.
TEST(TraceReaderTest, MessagesEscapeControlBytesFromTheTrace) {
  const std::string row = "1 0 0 10 1 -1 -1 1 60 -1 1 1\x1b[2J 1 -1 -1 1 -1 -1\n";
  const InputError e = read_error(kSwfHeader + row);
  EXPECT_EQ(std::string(e.what()).find('\x1b'), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("'1\\x1b[2J'"), std::string::npos) << e.what();

  const Trace t = read_lenient(kParsable +
                                   "5.ba\x07tch|x|u|p|2023-01-01T00:00:00|2023-01-01T00:00:00|"
                                   "2023-01-01T00:01:00|10|1|node=1|COMPLETED\n",
                               "s.txt");
  ASSERT_FALSE(t.report.examples.empty());
  for (const std::string& example : t.report.examples) {
    EXPECT_EQ(example.find('\x07'), std::string::npos) << example;
    EXPECT_NE(example.find("5.ba\\x07tch"), std::string::npos) << example;
  }
}

// ---------------------------------------------------------------------------------------------
// sacct

TEST(TraceReaderTest, ReadsSacctParsableWithGpuTres) {
  const std::string text =
      kParsable +
      "101|eval|bob|gpu|2023-01-01T01:00:00|2023-01-01T01:00:30|2023-01-01T01:30:30|UNLIMITED|1|"
      "cpu=4,gres/gpu:a100=3,node=1|COMPLETED\n"
      "102|cpu|carol|cpu|2023-01-01T02:00:00|2023-01-01T02:00:00|2023-01-01T02:00:00|30|1|"
      "cpu=4,node=1|FAILED\n"
      "103|odd|dave|gpu|2023-01-01T03:00:00|2023-01-01T03:00:00|2023-01-01T03:05:00|"
      "Partition_Limit|2|gres/gpu=3,node=2|COMPLETED\n";
  const Trace t = read(text, TraceFormat::kAuto, false, "jobs.txt");
  EXPECT_EQ(t.format, TraceFormat::kSacctParsable);
  EXPECT_EQ(t.machine_nodes, 0);
  ASSERT_EQ(t.jobs.size(), 4u);
  const Job& a = t.jobs[0];
  EXPECT_EQ(a.id, 100);
  EXPECT_EQ(a.user, "alice");
  EXPECT_EQ(a.partition, "gpu");
  EXPECT_EQ(a.submit, *parse_iso_time("2023-01-01T00:00:00"));
  EXPECT_EQ(a.wait(), 600);
  EXPECT_EQ(a.runtime(), 2 * kHour);
  EXPECT_EQ(a.time_limit, 2 * kDay);
  EXPECT_EQ(a.nodes, 2);
  EXPECT_EQ(a.gpus_per_node, 4);                  // gres/gpu=8 over 2 nodes
  EXPECT_EQ(t.jobs[1].gpus_per_node, 3);          // typed count when no untyped total
  EXPECT_EQ(t.jobs[1].time_limit, 30 * kMinute);  // UNLIMITED: runtime stands in
  EXPECT_EQ(t.jobs[2].gpus_per_node, 0);
  EXPECT_EQ(t.jobs[2].time_limit, 30 * kMinute);  // bare number: minutes
  EXPECT_EQ(t.jobs[3].gpus_per_node, 2);          // 3 GPUs on 2 nodes: rounded up
  EXPECT_EQ(
      count(t.report.adjusted, "no numeric time limit (UNLIMITED/Partition_Limit): used runtime"),
      2u);
  EXPECT_EQ(count(t.report.adjusted, "GPUs not divisible by nodes: rounded up per node"), 1u);
  EXPECT_EQ(count(t.report.adjusted, "zero runtime"), 1u);
}

TEST(TraceReaderTest, ReadsSacctTimelimitRawUidAndReqTres) {
  const std::string text =
      "JobIDRaw|UID|Submit|Start|End|TimelimitRaw|NNodes|ReqTRES|AllocTRES\n"
      "5|1001|2023-01-01T00:00:00|2023-01-01T00:00:00|2023-01-01T01:00:00|90|1|gres/gpu=2|\n";
  const Trace t = read(text);
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].id, 5);
  EXPECT_EQ(t.jobs[0].user, "1001");
  EXPECT_EQ(t.jobs[0].time_limit, 90 * kMinute);
  EXPECT_EQ(t.jobs[0].gpus_per_node, 2);  // AllocTRES empty: ReqTRES
}

// Values past what a Job can hold are errors or capped, never wrapped into negative counts.
TEST(TraceReaderTest, CountsAndLimitsTooLargeToHoldAreRejectedOrCapped) {
  EXPECT_EQ(read_error("; MaxNodes: 4294967296\n" + swf_row(1, 0, 0, 10, 1, 1, 60)).where().field,
            "MaxNodes");
  const std::string header = "JobIDRaw|Submit|Start|End|TimelimitRaw|NNodes|AllocTRES\n";
  const std::string times = "2023-01-01T00:00:00|2023-01-01T00:00:00|2023-01-01T01:00:00|";
  EXPECT_EQ(read_error(header + "5|" + times + "99999999999999999|1|\n").where().field,
            "TimelimitRaw");
  const Trace t = read(header + "5|" + times + "90|1|gres/gpu=999999999999999999\n");
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].gpus_per_node, 1 << 30);
}

TEST(TraceReaderTest, ReadsSacctParsableWithTrailingSeparator) {
  // sacct --parsable (not --parsable2) ends every line with '|'.
  const std::string text =
      "JobID|Submit|Start|End|Timelimit|NNodes|\n"
      "7|2023-01-01T00:00:00|2023-01-01T00:00:05|2023-01-01T00:01:05|00:10:00|3|\n";
  const Trace t = read(text);
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].nodes, 3);
  EXPECT_EQ(t.jobs[0].time_limit, 10 * kMinute);
}

TEST(TraceReaderTest, SkipsJobStepsAndNeverStartedJobs) {
  const std::string h = "JobID|Submit|Start|End|Timelimit|NNodes|State\n";
  const std::string text =
      h +
      "10|2023-01-01T00:00:00|2023-01-01T00:01:00|2023-01-01T00:02:00|01:00:00|1|COMPLETED\n"
      "10.batch|2023-01-01T00:00:00|2023-01-01T00:01:00|2023-01-01T00:02:00||1|COMPLETED\n"
      "10.extern|2023-01-01T00:00:00|2023-01-01T00:01:00|2023-01-01T00:02:00||1|COMPLETED\n"
      "10.0|2023-01-01T00:00:00|2023-01-01T00:01:00|2023-01-01T00:02:00||1|COMPLETED\n"
      "11|2023-01-01T00:05:00|Unknown|2023-01-01T00:07:00|01:00:00|1|CANCELLED by 5\n"
      "12|2023-01-01T00:05:00|None|2023-01-01T00:07:00|01:00:00|1|CANCELLED by 5\n"
      "13|2023-01-01T00:06:00|2023-01-01T00:06:30|Unknown|01:00:00|2|RUNNING\n"
      "14_4|2023-01-01T00:07:00|2023-01-01T00:08:00|2023-01-01T00:09:00|01:00:00|1|COMPLETED\n"
      "14_[5-9]|2023-01-01T00:07:00|Unknown|Unknown|01:00:00|1|PENDING\n"
      "15+1|2023-01-01T00:07:00|2023-01-01T00:08:00|2023-01-01T00:09:00|01:00:00|1|COMPLETED\n"
      "16|2023-01-01T00:08:00|2023-01-01T00:09:00|2023-01-01T00:08:30|01:00:00|1|COMPLETED\n"
      "17|Unknown|Unknown|Unknown|01:00:00|1|PENDING\n"
      "18|2023-01-01T00:09:00|2023-01-01T00:09:00|2023-01-01T00:10:00|01:00:00|0|COMPLETED\n";
  const Trace t = read(text);
  EXPECT_EQ(t.report.rows, 13u);
  std::vector<JobId> ids;
  for (const Job& j : t.jobs) ids.push_back(j.id);
  EXPECT_EQ(ids, (std::vector<JobId>{10, 14, 15}));  // array task 14_4 kept as job 14
  EXPECT_EQ(count(t.report.skipped, "job step"), 3u);
  EXPECT_EQ(count(t.report.skipped, "never started"), 3u);
  EXPECT_EQ(count(t.report.skipped, "not finished"), 1u);
  EXPECT_EQ(count(t.report.skipped, "negative runtime"), 1u);
  EXPECT_EQ(count(t.report.skipped, "missing submit time"), 1u);
  EXPECT_EQ(count(t.report.skipped, "missing size"), 1u);
  EXPECT_EQ(count(t.report.adjusted, "heterogeneous job component"), 1u);
  EXPECT_EQ(t.report.rows, t.report.jobs + t.report.skipped_total());
}

TEST(TraceReaderTest, SacctStrictErrorsNameTheColumn) {
  const std::string h = "JobID|Submit|Start|End|Timelimit|NNodes\n";
  const InputError bad_time =
      read_error(h + "1|2023-01-01T00:00:00|yesterday|2023-01-01T00:02:00|01:00:00|1\n", "s.txt");
  EXPECT_STREQ(bad_time.what(),
               "s.txt:2: field 'Start': expected a time YYYY-MM-DDTHH:MM:SS, got 'yesterday'");
  const InputError bad_limit = read_error(
      h + "1|2023-01-01T00:00:00|2023-01-01T00:01:00|2023-01-01T00:02:00|soon|1\n", "s.txt");
  EXPECT_EQ(bad_limit.where().field, "Timelimit");
  const InputError bad_count =
      read_error(h + "1|2023-01-01T00:00:00|2023-01-01T00:01:00\n", "s.txt");
  EXPECT_NE(std::string(bad_count.what()).find("expected 6 '|'-separated fields"),
            std::string::npos);
  const InputError bad_id = read_error(
      h + "x1|2023-01-01T00:00:00|2023-01-01T00:01:00|2023-01-01T00:02:00|01:00:00|1\n", "s.txt");
  EXPECT_EQ(bad_id.where().field, "JobID");
  const InputError bad_priority = read_error(
      "JobID|Submit|Start|End|Timelimit|NNodes|Priority\n"
      "1|2023-01-01T00:00:00|2023-01-01T00:01:00|2023-01-01T00:02:00|01:00:00|1|high\n",
      "s.txt");
  EXPECT_STREQ(bad_priority.what(),
               "s.txt:2: field 'Priority': expected a non-negative priority, got 'high'");
  const InputError missing = read_error("JobID|Submit|Start|End|Timelimit\n", "s.txt");
  EXPECT_EQ(missing.where().line, 1);
  EXPECT_NE(std::string(missing.what()).find("NNodes"), std::string::npos) << missing.what();
}

TEST(TraceReaderTest, ReadsSacctFixedLayoutWithTabsOrColumns) {
  const Trace t = read(kFixed, TraceFormat::kAuto, false, "ls6.log");
  EXPECT_EQ(t.format, TraceFormat::kSacctFixed);
  EXPECT_EQ(t.report.rows, 2u);
  ASSERT_EQ(t.jobs.size(), 2u);
  const Job& a = t.jobs[0];  // tab-separated row
  EXPECT_EQ(a.id, 478729);
  EXPECT_EQ(a.user, "00000");
  EXPECT_EQ(a.submit, *parse_iso_time("2022-10-05T11:52:48"));
  EXPECT_EQ(a.start, *parse_iso_time("2022-11-01T15:34:14"));
  EXPECT_EQ(a.end, *parse_iso_time("2022-11-03T15:34:15"));
  EXPECT_EQ(a.time_limit, 2880 * kMinute);  // TimelimitR(aw): minutes
  EXPECT_EQ(a.nodes, 2);
  EXPECT_EQ(a.priority, 1234);  // kept: the priority weights are fitted to it
  const Job& b = t.jobs[1];     // space-aligned row, cut at the dash columns
  EXPECT_EQ(b.id, 478730);
  EXPECT_EQ(b.submit, *parse_iso_time("2022-10-05T11:52:49"));
  EXPECT_EQ(b.nodes, 1);
  EXPECT_EQ(b.time_limit, 2880 * kMinute);

  // A tab row with a field missing is malformed, named by line.
  const std::string broken = kFixed.substr(0, kFixed.find("478729")) +
                             "478731\tx\t0\t2022-11-01T15:34:14\t2022-10-05T11:52:48\n";
  const InputError e = read_error(broken, "ls6.log");
  EXPECT_EQ(e.where().line, 4);
  EXPECT_NE(std::string(e.what()).find("tab-separated"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Statistics

TEST(TraceReaderTest, ComputesStatsFromRecordedTimes) {
  // Machine of 4 nodes; waits 0, 10, 20, 30, 100; runtimes 100 each on 2 nodes.
  std::string text = kSwfHeader;
  const long waits[] = {0, 10, 20, 30, 100};
  for (int i = 0; i < 5; ++i) text += swf_row(i + 1, i * 100, waits[i], 100, 8, 8, 200);
  const Trace t = read(text);
  const TraceStats s = compute_trace_stats(t);
  EXPECT_EQ(s.jobs, 5u);
  EXPECT_EQ(s.first_submit, 1000000);
  EXPECT_EQ(s.last_end, 1000000 + 400 + 100 + 100);
  EXPECT_EQ(s.span, 600);
  EXPECT_EQ(s.machine_nodes, 4);
  EXPECT_EQ(s.largest_job_nodes, 2);
  EXPECT_DOUBLE_EQ(s.load, 5.0 * 2 * 100 / (4.0 * 600));
  EXPECT_DOUBLE_EQ(s.mean_wait_s, 32);
  EXPECT_DOUBLE_EQ(s.median_wait_s, 20);
  EXPECT_DOUBLE_EQ(s.p90_wait_s, 30 + 0.6 * 70);  // linear interpolation between ranks
  EXPECT_DOUBLE_EQ(s.max_wait_s, 100);
  EXPECT_DOUBLE_EQ(s.mean_runtime_s, 100);
  EXPECT_DOUBLE_EQ(s.mean_time_limit_s, 200);

  const TraceStats wider = compute_trace_stats(t, 8);
  EXPECT_EQ(wider.machine_nodes, 8);
  EXPECT_DOUBLE_EQ(wider.load, s.load / 2);
}

TEST(TraceReaderTest, StatsFallBackToLargestJobAndHandleEmptyTraces) {
  const Trace t = read(kParsable);
  const TraceStats s = compute_trace_stats(t);
  EXPECT_EQ(s.machine_nodes, 2);  // no header: the largest job
  EXPECT_GT(s.load, 0);
  const TraceStats empty = compute_trace_stats(Trace{});
  EXPECT_EQ(empty.jobs, 0u);
  EXPECT_EQ(empty.span, 0);
  EXPECT_EQ(empty.load, 0);
}

// ---------------------------------------------------------------------------------------------
// The shipped samples (the real logs: RealLogTest.cpp)

TEST(TraceReaderTest, ShippedSamplesParseStrictlyWithNothingSkipped) {
  const std::string dir = kSource + "/traces/samples/";
  const Trace swf = read_trace(dir + "sample-gpu-cluster.swf");
  EXPECT_EQ(swf.format, TraceFormat::kSwf);
  EXPECT_EQ(swf.report.skipped_total(), 0u);
  EXPECT_EQ(swf.machine_nodes, 32);
  EXPECT_EQ(swf.jobs.size(), 3135u);
  const TraceStats s = compute_trace_stats(swf);
  EXPECT_NEAR(s.load, 0.820, 5e-4);  // as `mirage trace info` prints it
  EXPECT_EQ(s.span, 1880182);
  EXPECT_EQ(s.largest_job_nodes, 16);

  const Trace sacct = read_trace(dir + "sample-sacct.txt");
  EXPECT_EQ(sacct.format, TraceFormat::kSacctParsable);
  EXPECT_EQ(sacct.report.skipped_total(), 0u);
  EXPECT_EQ(sacct.jobs.size(), 290u);
  EXPECT_TRUE(std::any_of(sacct.jobs.begin(), sacct.jobs.end(),
                          [](const Job& j) { return j.gpus_per_node > 0; }));
  for (const std::string name : {"sample-gpu-cluster.swf", "sample-sacct.txt"})
    EXPECT_LT(fs::file_size(dir + name), 400u * 1024) << name;
}

}  // namespace
}  // namespace mirage

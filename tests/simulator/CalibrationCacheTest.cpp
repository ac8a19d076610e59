// The cache of inferred calibrations: an entry reads back as the very calibration inferred, is
// keyed by what the inference reads, and one that is not whole or not of its key is inferred again.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "mirage/simulator/CalibrationCache.h"
#include "mirage/traces/Trace.h"

namespace mirage {
namespace {

namespace fs = std::filesystem;

// Each test its own cache directory, and the user's own left alone.
class CalibrationCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mirage-calcache-test-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    if (const char* old = std::getenv("XDG_CACHE_HOME")) old_ = old;
    setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
    unsetenv("MIRAGE_CALIBRATION_CACHE");
    // The shipped sample: congested every day, so every part of a calibration is inferred.
    trace_ = read_trace(MIRAGE_SOURCE_DIR "/traces/samples/sample-gpu-cluster.swf");
    spec_.nodes = trace_.machine_nodes;
  }
  void TearDown() override {
    if (old_.empty())
      unsetenv("XDG_CACHE_HOME");
    else
      setenv("XDG_CACHE_HOME", old_.c_str(), 1);
    fs::remove_all(dir_);
  }
  std::string key(const ClusterSpec& spec) const {
    return calibration_cache_key(trace_.jobs, spec, {}, std::nullopt);
  }
  // The calibration of the trace on `spec`, through the cache; counts the inferences.
  CachedCalibration run(const ClusterSpec& spec) {
    return cached_or_inferred("busy.swf", key(spec), [&] {
      ++inferred_;
      return infer_calibration(trace_.jobs, spec);
    });
  }
  static std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }

  fs::path dir_;
  std::string old_;
  Trace trace_;
  ClusterSpec spec_;
  int inferred_ = 0;
};

TEST_F(CalibrationCacheTest, AnEntryReadsBackAsTheCalibrationInferredBitForBit) {
  // The sample, made on 32 nodes, read as a log of 40: the 8 its jobs never used are hidden room
  // (on the 32 it was made on the calibration reads none).
  ClusterSpec larger = spec_;
  larger.nodes = spec_.nodes + 8;
  const Calibration c = infer_calibration(trace_.jobs, larger);
  ASSERT_TRUE(c.priority && c.priority->replay_waits) << "the test needs a replay chosen";
  ASSERT_FALSE(c.unavailable.empty()) << c.describe_room_evidence();
  const std::string bytes = encode_calibration_entry(key(larger), c);
  const auto back = decode_calibration_entry(bytes, key(larger));
  ASSERT_TRUE(back);
  EXPECT_EQ(encode_calibration_entry(key(larger), *back), bytes);
  EXPECT_EQ(back->user_limits, c.user_limits);
  ASSERT_EQ(back->unavailable.size(), c.unavailable.size());
  for (std::size_t i = 0; i < c.unavailable.size(); ++i) {
    EXPECT_EQ(back->unavailable[i].from, c.unavailable[i].from);
    EXPECT_EQ(back->unavailable[i].unavailable_nodes, c.unavailable[i].unavailable_nodes);
  }
  EXPECT_EQ(back->boundaries, c.boundaries);
  EXPECT_EQ(back->down, c.down);
  EXPECT_EQ(back->priority->weights, c.priority->weights);
  EXPECT_EQ(back->priority->r2, c.priority->r2);  // exactly: the bits, not a printed figure
  EXPECT_EQ(back->priority->replay.rank_correlation, c.priority->replay.rank_correlation);
  EXPECT_EQ(*back->priority->replay_waits, *c.priority->replay_waits);
  EXPECT_EQ(back->mean_unavailable, c.mean_unavailable);
  EXPECT_EQ(back->capacity_share, c.capacity_share);
  EXPECT_EQ(back->dependencies, c.dependencies);
  EXPECT_EQ(back->followers.size(), c.followers.size());
  EXPECT_EQ(back->feedback_choice, c.feedback_choice);
  EXPECT_EQ(back->describe_room(), c.describe_room());
  EXPECT_EQ(back->describe_room_evidence(), c.describe_room_evidence());
  EXPECT_EQ(back->describe_links(), c.describe_links());
  EXPECT_EQ(back->priority->like_fcfs, c.priority->like_fcfs);
  EXPECT_EQ(back->followers_seen, c.followers_seen);
  EXPECT_EQ(back->followers_by_chance, c.followers_by_chance);
}

TEST_F(CalibrationCacheTest, TheSecondRunReadsWhatTheFirstInferred) {
  const CachedCalibration first = run(spec_);
  EXPECT_FALSE(first.read);
  EXPECT_EQ(inferred_, 1);
  ASSERT_TRUE(fs::exists(first.path));
  EXPECT_TRUE(first.path.starts_with(dir_.string() + "/mirage/calibrations/busy.swf."));
  EXPECT_NE(describe_cached(first, "busy.swf").find("inferred from busy.swf"), std::string::npos);
  const CachedCalibration second = run(spec_);
  EXPECT_TRUE(second.read);
  EXPECT_EQ(inferred_, 1);
  EXPECT_EQ(second.path, first.path);
  EXPECT_EQ(encode_calibration_entry("k", second.calibration),
            encode_calibration_entry("k", first.calibration));
  EXPECT_NE(describe_cached(second, "busy.swf").find("read from " + first.path), std::string::npos);
}

TEST_F(CalibrationCacheTest, ATamperedOrTruncatedEntryIsInferredAgainAndRewritten) {
  const CachedCalibration first = run(spec_);
  const std::string good = read(first.path);
  std::string tampered = good;
  tampered[tampered.size() / 2] ^= 0x20;
  for (const std::string& bad : {tampered, good.substr(0, good.size() - 9), std::string()}) {
    write(first.path, bad);
    const int before = inferred_;
    const CachedCalibration again = run(spec_);
    EXPECT_FALSE(again.read);
    EXPECT_EQ(inferred_, before + 1);
    EXPECT_EQ(read(first.path), good);  // rewritten whole
  }
}

TEST_F(CalibrationCacheTest, AnEntryOfAnotherKeyIsNotTrusted) {
  const CachedCalibration first = run(spec_);
  // Another key's entry under this key's name, as a collision of the name's digest would leave.
  ClusterSpec bigger = spec_;
  bigger.nodes = spec_.nodes * 2;
  const Calibration other = infer_calibration(trace_.jobs, bigger);
  write(first.path, encode_calibration_entry(key(bigger), other));
  const CachedCalibration again = run(spec_);
  EXPECT_FALSE(again.read);
  EXPECT_EQ(inferred_, 2);
}

TEST_F(CalibrationCacheTest, AnotherMachineSizeIsAnotherEntry) {
  const CachedCalibration small = run(spec_);
  ClusterSpec bigger = spec_;
  bigger.nodes = spec_.nodes * 2;
  const CachedCalibration big = run(bigger);
  EXPECT_FALSE(big.read);
  EXPECT_NE(big.path, small.path);
  EXPECT_TRUE(run(spec_).read);
  EXPECT_TRUE(run(bigger).read);
  EXPECT_EQ(inferred_, 2);
}

TEST_F(CalibrationCacheTest, TheKeyChangesWithEverythingTheInferenceReads) {
  const std::string base = key(spec_);
  ClusterSpec gpus = spec_;
  gpus.gpus_per_node = 4;
  ClusterSpec conf = spec_;
  conf.scheduler.bf_window = 2 * kDay;  // a slurm.conf's SchedulerParameters
  ClusterSpec weights = spec_;
  weights.priority.weight_fairshare = 100;
  ClusterSpec calc_period = spec_;
  calc_period.scheduler.priority_calc_period = 5 * kMinute;
  CalibrationSettings feedback;
  feedback.feedback = true;
  std::vector<Job> edited = trace_.jobs;
  edited[edited.size() / 2].end += 1;
  for (const std::string& other :
       {key(gpus), key(conf), key(weights), key(calc_period),
        calibration_cache_key(trace_.jobs, spec_, feedback, std::nullopt),
        calibration_cache_key(trace_.jobs, spec_, {}, trace_.jobs.front().submit + kWeek),
        calibration_cache_key(edited, spec_, {}, std::nullopt)})
    EXPECT_NE(other, base);
  EXPECT_NE(base.find("version=" + std::to_string(kCalibrationCodeVersion)), std::string::npos);
  // A forward fit's entry names what it does past its cut; one in sample does not.
  const std::string carry = "carry=" + std::to_string(kForwardCarryVersion);
  EXPECT_NE(
      calibration_cache_key(trace_.jobs, spec_, {}, trace_.jobs.front().submit + kWeek).find(carry),
      std::string::npos);
  EXPECT_EQ(base.find(carry), std::string::npos);
}

TEST_F(CalibrationCacheTest, OffInfersEveryTimeAndWritesNothing) {
  setenv("MIRAGE_CALIBRATION_CACHE", "off", 1);
  EXPECT_FALSE(run(spec_).read);
  EXPECT_FALSE(run(spec_).read);
  unsetenv("MIRAGE_CALIBRATION_CACHE");
  EXPECT_EQ(inferred_, 2);
  EXPECT_FALSE(fs::exists(dir_ / "mirage" / "calibrations"));
}

}  // namespace
}  // namespace mirage

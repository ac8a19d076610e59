// The trainer's parts that need no LibTorch: checkpoint framing and retention, the data order,
// the Slurm environment, the directory lock.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "AtomicFile.h"
#include "ByteCorpus.h"
#include "CheckpointFile.h"
#include "GptConfig.h"
#include "Handoff.h"
#include "Rendezvous.h"

namespace mirage::training {
namespace {

namespace fs = std::filesystem;

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "mirage-train-parts-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST(CheckpointFormat, RoundTripsAndRejectsEveryDamage) {
  const std::string payload = "weights and moments";
  const std::string file = checkpoint_header(payload) + payload;
  EXPECT_EQ(decode_checkpoint_file(file), payload);

  EXPECT_THROW(decode_checkpoint_file(file.substr(0, 20)), CheckpointError);  // no full header
  EXPECT_THROW(decode_checkpoint_file(file.substr(0, file.size() - 1)), CheckpointError);
  EXPECT_THROW(decode_checkpoint_file(file + "x"), CheckpointError);
  for (std::size_t i : {std::size_t{0}, std::size_t{17}, file.size() - 3}) {
    std::string damaged = file;
    damaged[i] = static_cast<char>(damaged[i] ^ 1);
    EXPECT_THROW(decode_checkpoint_file(damaged), CheckpointError) << "byte " << i;
  }
  EXPECT_EQ(decode_checkpoint_file(checkpoint_header("")), "");
}

// A file of another format version may be sound (a newer trainer wrote it): unreadable, not
// corrupt, so the trainer neither moves it aside nor resumes from an older one.
TEST_F(TempDirTest, ACheckpointOfAnotherFormatVersionIsUnreadableNotCorrupt) {
  CheckpointDir dir(dir_);
  const fs::path file = dir.write(3, "payload");
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes[8] = static_cast<char>(bytes[8] + 1);  // the version, little-endian
  const uLong crc = crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), 28);
  for (int i = 0; i < 4; ++i) bytes[28 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_THROW(CheckpointDir::open_payload(file), CheckpointUnreadable);

  bytes[bytes.size() - 1] = static_cast<char>(bytes.back() ^ 1);
  std::ofstream(dir_ / checkpoint_file_name(5), std::ios::binary) << bytes.substr(0, 20);
  try {
    CheckpointDir::open_payload(dir_ / checkpoint_file_name(5));
    ADD_FAILURE() << "a truncated file opened";
  } catch (const CheckpointUnreadable&) {
    ADD_FAILURE() << "a truncated file taken as unreadable, not corrupt";
  } catch (const CheckpointError&) {
  }
}

TEST_F(TempDirTest, CheckpointDirKeepsTheNewestAndListsNewestFirst) {
  CheckpointDir dir(dir_, 2);
  for (int step : {10, 20, 30}) dir.write(step, "payload " + std::to_string(step));
  auto entries = dir.list();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].step, 30);
  EXPECT_EQ(entries[1].step, 20);
  EXPECT_EQ(CheckpointDir::read_payload(entries[0].path), "payload 30");
  EXPECT_EQ(entries[0].path.filename(), checkpoint_file_name(30));
  // No temporary file survives a write.
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  }
}

TEST_F(TempDirTest, QuarantinedAndForeignFilesAreNotCheckpoints) {
  CheckpointDir dir(dir_);
  dir.write(5, "x");
  dir.write(7, "y");
  CheckpointDir::quarantine(dir_ / checkpoint_file_name(7));
  std::ofstream(dir_ / "ckpt-notanumber.mgc") << "z";
  std::ofstream(dir_ / ".ckpt-000000000009.mgc.tmp.123") << "half";
  dir.remove_stale_temporaries();
  auto entries = dir.list();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].step, 5);
  EXPECT_TRUE(fs::exists(dir_ / (checkpoint_file_name(7) + ".corrupt")));
  EXPECT_EQ(dir.quarantined(),
            std::vector<fs::path>{dir_ / (checkpoint_file_name(7) + ".corrupt")});
  EXPECT_FALSE(fs::exists(dir_ / ".ckpt-000000000009.mgc.tmp.123"));
}

// A directory that cannot be listed is not an empty one: taken as empty, training would start
// again at step 0 beside the checkpoints it could not see. Only a missing directory is empty.
TEST_F(TempDirTest, ACheckpointDirThatCannotBeListedThrowsAndAMissingOneIsEmpty) {
  EXPECT_TRUE(CheckpointDir(dir_ / "missing").list().empty());
  EXPECT_TRUE(CheckpointDir(dir_ / "missing").quarantined().empty());
  // A path that exists but is no directory fails to list however privileged the caller (the
  // tests run as root in CI, where a chmod would not stop the listing).
  std::ofstream(dir_ / "a-file") << "not a directory";
  EXPECT_THROW(CheckpointDir(dir_ / "a-file").list(), CheckpointUnreadable);
  EXPECT_THROW(CheckpointDir(dir_ / "a-file").quarantined(), CheckpointUnreadable);
  if (::geteuid() != 0) {
    fs::create_directories(dir_ / "locked");
    CheckpointDir(dir_ / "locked").write(2, "payload");
    fs::permissions(dir_ / "locked", fs::perms::none);
    EXPECT_THROW(CheckpointDir(dir_ / "locked").list(), CheckpointUnreadable);
    fs::permissions(dir_ / "locked", fs::perms::owner_all);
  }
}

TEST_F(TempDirTest, AtomicWriteReplacesWholeFile) {
  write_file_atomically(dir_ / "f", {"old content that is long"});
  write_file_atomically(dir_ / "f", {"new", " ", "parts"});
  EXPECT_EQ(read_file(dir_ / "f"), "new parts");
}

TEST(ByteCorpus, SplittingAGlobalBatchReadsTheSameSequences) {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += static_cast<char>('a' + (i * 7) % 26);
  ByteCorpus corpus(text, "test");
  std::vector<std::int64_t> whole_in, whole_tg, a_in, a_tg, b_in, b_tg;
  corpus.fill(100, 8, 16, 42, whole_in, whole_tg);
  corpus.fill(100, 4, 16, 42, a_in, a_tg);
  corpus.fill(104, 4, 16, 42, b_in, b_tg);
  a_in.insert(a_in.end(), b_in.begin(), b_in.end());
  a_tg.insert(a_tg.end(), b_tg.begin(), b_tg.end());
  EXPECT_EQ(whole_in, a_in);
  EXPECT_EQ(whole_tg, a_tg);
  // Targets are the next byte.
  EXPECT_EQ(std::vector<std::int64_t>(whole_in.begin() + 1, whole_in.begin() + 16),
            std::vector<std::int64_t>(whole_tg.begin(), whole_tg.begin() + 15));
}

TEST(ByteCorpus, EachEpochVisitsEveryWindowOnceInASeededOrder) {
  std::string text(16 * 50 + 1, 'x');
  for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>(i / 16);
  ByteCorpus corpus(text, "test");
  ASSERT_EQ(corpus.windows(16), 50);
  std::vector<std::int64_t> in, tg, first_bytes, epoch2;
  corpus.fill(0, 50, 16, 7, in, tg);
  for (int r = 0; r < 50; ++r) first_bytes.push_back(in[r * 16]);
  std::vector<std::int64_t> sorted = first_bytes;
  std::sort(sorted.begin(), sorted.end());
  for (int w = 0; w < 50; ++w) EXPECT_EQ(sorted[w], w);
  corpus.fill(50, 50, 16, 7, in, tg);
  for (int r = 0; r < 50; ++r) epoch2.push_back(in[r * 16]);
  EXPECT_NE(first_bytes, epoch2);  // reshuffled per epoch
}

TEST(ByteCorpus, TheEmbeddedCorpusIsThere) {
  ByteCorpus corpus = ByteCorpus::embedded();
  EXPECT_GT(corpus.size(), 100000u);
  EXPECT_LT(corpus.size(), 500000u);
}

TEST(Rendezvous, ReadsSlurmAndPrefersMirageOverrides) {
  std::map<std::string, std::string> vars = {
      {"SLURM_PROCID", "3"},    {"SLURM_NTASKS", "8"},  {"SLURM_LOCALID", "1"},
      {"SLURM_JOB_ID", "4242"}, {"SLURM_STEP_ID", "0"}, {"SLURM_LAUNCH_NODE_IPADDR", "10.0.0.5"}};
  auto getenv = [&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  DistributedEnv env = distributed_env_from(getenv);
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.job_id, "4242");
  EXPECT_EQ(env.run_id, "4242.0");
  EXPECT_EQ(env.master_addr, "10.0.0.5");
  EXPECT_EQ(env.master_port, 29500 + 4242);

  vars["MIRAGE_RANK"] = "0";
  vars["MIRAGE_WORLD_SIZE"] = "2";
  vars["MASTER_PORT"] = "12345";
  env = distributed_env_from(getenv);
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.world_size, 2);
  EXPECT_EQ(env.master_port, 12345);

  vars["MIRAGE_RANK"] = "2";
  EXPECT_THROW(distributed_env_from(getenv), RendezvousError);
  vars["MIRAGE_RANK"] = "zero";
  EXPECT_THROW(distributed_env_from(getenv), RendezvousError);
}

TEST_F(TempDirTest, OnlyOneTrainerHoldsTheDirectory) {
  auto first = TrainerLock::try_acquire(dir_, "pid 1 host a job 7");
  ASSERT_TRUE(first);
  EXPECT_FALSE(TrainerLock::try_acquire(dir_, "pid 2 host b job 8"));
  EXPECT_EQ(TrainerLock::holder(dir_), "pid 1 host a job 7");
  first.reset();
  EXPECT_TRUE(TrainerLock::try_acquire(dir_, "pid 2 host b job 8"));
}

TEST_F(TempDirTest, HandoffMarkerRoundTrips) {
  EXPECT_FALSE(read_handoff_marker(dir_));
  write_handoff_marker(dir_, {42, checkpoint_file_name(42), "1234", 1.5e9, "SIGUSR1"});
  auto m = read_handoff_marker(dir_);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->step, 42);
  EXPECT_EQ(m->checkpoint, checkpoint_file_name(42));
  EXPECT_EQ(m->job_id, "1234");
  EXPECT_EQ(m->reason, "SIGUSR1");
}

TEST(GptConfig, SizesFollowTheGpt2Table) {
  auto small = gpt_config_by_name("124M");
  ASSERT_TRUE(small);
  EXPECT_EQ(small->n_layer, 12);
  EXPECT_EQ(small->n_head, 12);
  EXPECT_EQ(small->n_embd, 768);
  auto xl = gpt_config_by_name("1.5B");
  ASSERT_TRUE(xl);
  EXPECT_EQ(xl->n_layer, 48);
  EXPECT_EQ(xl->n_head, 25);
  EXPECT_EQ(xl->n_embd, 1600);
  // GPT-2's 124M with its 50257-token vocabulary; bytes here (256) remove 38.4M of it.
  GptConfig gpt2 = *small;
  gpt2.vocab_size = 50257;
  EXPECT_NEAR(double(gpt2.parameter_count()) / 1e6, 124.4, 0.1);
  EXPECT_FALSE(gpt_config_by_name("7B"));
}

}  // namespace
}  // namespace mirage::training

// A segment's shape: the `campaign add` flags over the script's #SBATCH lines.
#include <gtest/gtest.h>

#include "mirage/daemon/slurm/SegmentShape.h"

namespace mirage::daemon {
namespace {

const char* kScript =
    "#!/bin/bash\n"
    "#SBATCH --nodes=2\n"
    "#SBATCH --gres=gpu:4\n"
    "#SBATCH --time=48:00:00\n"
    "#SBATCH -p gpu\n";

SegmentShape resolve(const ShapeFlags& flags, const std::string& script = kScript) {
  return resolve_segment_shape(flags, read_batch_directives(script, "train.sbatch"),
                               "train.sbatch");
}

TEST(SegmentShape, WithoutFlagsTheScriptGivesTheShapeAndSbatchGetsNoOptions) {
  const SegmentShape s = resolve({});
  EXPECT_EQ(s.nodes, 2);
  EXPECT_EQ(s.gpus_per_node, 4);
  EXPECT_EQ(s.time_limit, 48 * kHour);
  EXPECT_EQ(s.partition, "gpu");
  EXPECT_TRUE(s.sbatch_options.empty());
  EXPECT_TRUE(s.notes.empty());
}

TEST(SegmentShape, AFlagThatContradictsADirectiveWinsAndSaysSo) {
  ShapeFlags f;
  f.nodes = 4;
  f.time_limit = 2 * kHour;
  f.partition = "gpu";  // the same as the script: nothing to say
  const SegmentShape s = resolve(f);
  EXPECT_EQ(s.nodes, 4);
  EXPECT_EQ(s.time_limit, 2 * kHour);
  EXPECT_EQ(s.sbatch_options,
            (std::vector<std::string>{"--nodes=4", "--time=02:00:00", "--partition=gpu"}));
  ASSERT_EQ(s.notes.size(), 2u);
  EXPECT_EQ(s.notes[0], "--nodes 4 overrides '#SBATCH --nodes=2' (train.sbatch:2): the flag wins");
  EXPECT_EQ(s.notes[1],
            "--time 02:00:00 overrides '#SBATCH --time=48:00:00' (train.sbatch:4): the "
            "flag wins");
}

TEST(SegmentShape, AGpuFlagTakesTheFormOfTheScriptsGpuDirective) {
  ShapeFlags f;
  f.gpus_per_node = 8;
  EXPECT_EQ(resolve(f).sbatch_options, std::vector<std::string>{"--gres=gpu:8"});
  EXPECT_EQ(resolve(f, "#!/bin/bash\n#SBATCH -N 2 --gpus=4\n").sbatch_options,
            std::vector<std::string>{"--gpus=16"});
  EXPECT_EQ(resolve(f, "#!/bin/bash\n").sbatch_options,
            std::vector<std::string>{"--gpus-per-node=8"});
}

// sbatch's command-line --gres (or --gpus) replaces the script's whole value: only the count
// changes, or the segments would land on any GPU type and lose the other generic resources.
TEST(SegmentShape, AGpuFlagKeepsTheScriptsGpuTypeAndItsOtherGres) {
  ShapeFlags f;
  f.gpus_per_node = 8;
  auto options = [&](const std::string& directives) {
    return resolve(f, "#!/bin/bash\n" + directives).sbatch_options;
  };
  EXPECT_EQ(options("#SBATCH --gres=gpu:a100:4\n"), std::vector<std::string>{"--gres=gpu:a100:8"});
  EXPECT_EQ(options("#SBATCH --gres=gpu:4,nvme:1\n"),
            std::vector<std::string>{"--gres=gpu:8,nvme:1"});
  EXPECT_EQ(options("#SBATCH --gres=nvme:1,gpu:a100\n"),
            std::vector<std::string>{"--gres=nvme:1,gpu:a100:8"});
  EXPECT_EQ(options("#SBATCH -N 2 --gpus=a100:8\n"), std::vector<std::string>{"--gpus=a100:16"});
  EXPECT_EQ(options("#SBATCH --gpus-per-node=a100:8\n"),
            std::vector<std::string>{"--gpus-per-node=a100:8"});
  f.gpus_per_node = 2;
  EXPECT_EQ(options("#SBATCH --gpus-per-node=a100:8\n"),
            std::vector<std::string>{"--gpus-per-node=a100:2"});
}

// A socket suffix stays after the count (it had the count appended after it, which sbatch
// refuses), and a comma inside it separates no entries.
TEST(SegmentShape, AGpuFlagKeepsTheScriptsSocketSuffix) {
  ShapeFlags f;
  f.gpus_per_node = 2;
  auto shape = [&](const std::string& gres) {
    return resolve(f, "#!/bin/bash\n#SBATCH --gres=" + gres + "\n");
  };
  EXPECT_EQ(shape("gpu:a100:4(S:0-1)").sbatch_options,
            std::vector<std::string>{"--gres=gpu:a100:2(S:0-1)"});
  EXPECT_EQ(shape("gpu:4(S:0,1),nvme:1").sbatch_options,
            std::vector<std::string>{"--gres=gpu:2(S:0,1),nvme:1"});
  EXPECT_EQ(shape("gpu(S:0)").sbatch_options, std::vector<std::string>{"--gres=gpu:2(S:0)"});
  EXPECT_EQ(resolve({}, "#!/bin/bash\n#SBATCH --gres=gpu:a100:4(S:0-1)\n").gpus_per_node, 4);
  EXPECT_EQ(resolve({}, "#!/bin/bash\n#SBATCH --gres=gpu:4(S:0,1),nvme:1\n").gpus_per_node, 4);
}

TEST(SegmentShape, NothingStatedLeavesTheSitesDefaults) {
  const SegmentShape s = resolve({}, "#!/bin/bash\nsrun train\n");
  EXPECT_EQ(s.nodes, 1);
  EXPECT_EQ(s.gpus_per_node, 0);
  EXPECT_EQ(s.time_limit, 0);
  EXPECT_EQ(s.partition, "");
}

TEST(SegmentShape, EarlierCampaignsKeepTheShapeTheyWereSubmittedWith) {
  EXPECT_EQ(options_of_earlier_campaign(2, 4, 48 * kHour, "gpu", ""),
            (std::vector<std::string>{"--nodes=2", "--time=2-00:00:00", "--gres=gpu:4",
                                      "--partition=gpu"}));
  EXPECT_TRUE(sets_option({"--nodes=2", "--partition=gpu"}, "partition"));
  EXPECT_FALSE(sets_option({"--nodes=2"}, "partition"));
}

}  // namespace
}  // namespace mirage::daemon

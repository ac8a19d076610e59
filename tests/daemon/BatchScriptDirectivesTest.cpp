// The #SBATCH lines of a batch script, read as sbatch reads them.
#include <gtest/gtest.h>

#include "mirage/daemon/BatchScriptDirectives.h"

namespace mirage::daemon {
namespace {

BatchScriptDirectives read(const std::string& script) {
  return read_batch_directives(script, "train.sbatch");
}

std::string error_of(const std::string& script) {
  const auto d = read(script);
  return d.error ? d.error->what() : "(no error)";
}

TEST(BatchScriptDirectives, ReadsLongFormsWithEqualsOrASpace) {
  const auto d = read(
      "#!/bin/bash\n"
      "#SBATCH --nodes=2\n"
      "#SBATCH --time 2-00:00:00\n"
      "#SBATCH --partition=gpu --account proj\n"
      "#SBATCH --qos=high\n"
      "#SBATCH --gres=gpu:a100:4\n");
  ASSERT_FALSE(d.error) << d.error->what();
  EXPECT_EQ(d.nodes->value, 2);
  EXPECT_EQ(d.nodes->line, 2);
  EXPECT_EQ(d.time_limit->value, 2 * kDay);
  EXPECT_EQ(d.time_limit->text, "--time 2-00:00:00");
  EXPECT_EQ(d.partition->value, "gpu");
  EXPECT_EQ(d.account->value, "proj");
  EXPECT_EQ(d.account->line, 4);
  EXPECT_EQ(d.qos->value, "high");
  EXPECT_EQ(d.gpus_per_node(2), 4);
  EXPECT_TRUE(d.gpus_by_gres);
}

TEST(BatchScriptDirectives, ReadsShortFormsAttachedOrApart) {
  const auto d = read("#!/bin/sh\n#SBATCH -N3 -t 90\n#SBATCH -p debug -Aproj -q low\n");
  ASSERT_FALSE(d.error) << d.error->what();
  EXPECT_EQ(d.nodes->value, 3);
  EXPECT_EQ(d.time_limit->value, 90 * kMinute);
  EXPECT_EQ(d.partition->value, "debug");
  EXPECT_EQ(d.account->value, "proj");
  EXPECT_EQ(d.qos->value, "low");
}

TEST(BatchScriptDirectives, SlurmTimeFormats) {
  const std::pair<const char*, Seconds> cases[] = {
      {"90", 90 * kMinute},         {"48:00:00", 48 * kHour},
      {"2-00:00:00", 2 * kDay},     {"1-12", kDay + 12 * kHour},
      {"10:30", 10 * kMinute + 30}, {"UNLIMITED", 0},  // the partition's limit
  };
  for (const auto& [text, seconds] : cases) {
    const auto d = read(std::string("#!/bin/bash\n#SBATCH --time=") + text + "\n");
    ASSERT_FALSE(d.error) << text;
    EXPECT_EQ(d.time_limit->value, seconds) << text;
  }
}

TEST(BatchScriptDirectives, GpusPerNodeAndPerJob) {
  auto d = read("#!/bin/bash\n#SBATCH --gpus-per-node=a100:8\n");
  EXPECT_EQ(d.gpus_per_node(4), 8);
  EXPECT_FALSE(d.gpus_by_gres);
  d = read("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus=6\n");
  EXPECT_EQ(d.gpu_count, GpuCount::kPerJob);
  EXPECT_EQ(d.gpus_per_node(2), 3);
  d = read("#!/bin/bash\n#SBATCH -G 5\n");
  EXPECT_EQ(d.gpus_per_node(2), 3);  // rounded up: no node gets fewer than it needs
  d = read("#!/bin/bash\n#SBATCH --gres=shard:2\n");
  EXPECT_FALSE(d.gpus);  // a generic resource that is no GPU
}

TEST(BatchScriptDirectives, ALaterDirectiveReplacesAnEarlierOne) {
  const auto d = read("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --nodes=4\n");
  EXPECT_EQ(d.nodes->value, 4);
  EXPECT_EQ(d.nodes->line, 3);
}

// Only what sbatch reads counts: directives before the first command, outside comments.
TEST(BatchScriptDirectives, ReadsOnlyTheLinesSbatchReads) {
  const std::pair<const char*, int> cases[] = {
      {"#!/bin/bash\n# a comment\n\n#SBATCH --nodes=2\necho start\n#SBATCH --nodes=8\n", 2},
      {"#!/bin/bash\n#SBATCH --output logs/seg-%j.txt --ntasks-per-node=2 # --nodes=9\n", 0},
      {"#!/bin/bash\n##SBATCH --nodes=7\n#SBATCHX --nodes=6\n", 0},
      {"#!/bin/bash\n#SBATCH --job-name \"two words\" -N 3\n", 3},
  };
  for (const auto& [script, nodes] : cases) {
    const auto d = read(script);
    ASSERT_FALSE(d.error) << script;
    EXPECT_EQ(d.nodes ? d.nodes->value : 0, nodes) << script;
  }
}

TEST(BatchScriptDirectives, AScriptWithoutAShebangIsRefusedAsSbatchWould) {
  EXPECT_EQ(error_of("echo hi\n#SBATCH --nodes=2\n"),
            "train.sbatch:1: not a batch script: the first line must be #! and an interpreter's "
            "path, such as #!/bin/bash (sbatch refuses it too); got 'echo hi'");
  EXPECT_NE(error_of("").find("the script is empty"), std::string::npos);
}

TEST(BatchScriptDirectives, AMalformedValueNamesTheLineTheOptionAndWhatWasExpected) {
  EXPECT_EQ(error_of("#!/bin/bash\n#SBATCH --partition=gpu\n#SBATCH --nodes=two\n"),
            "train.sbatch:3: field '#SBATCH --nodes': expected a node count such as 2 or 2-4, got "
            "'two'");
  EXPECT_EQ(error_of("#!/bin/bash\n#SBATCH -t soon\n"),
            "train.sbatch:2: field '#SBATCH --time': expected a time limit such as 2-00:00:00, "
            "48:00:00 or 90 (minutes), got 'soon'");
  EXPECT_EQ(error_of("#!/bin/bash\n#SBATCH --gpus-per-node=many\n"),
            "train.sbatch:2: field '#SBATCH --gpus-per-node': expected a GPU count such as 4 or "
            "a100:4, got 'many'");
  EXPECT_EQ(error_of("#!/bin/bash\n#SBATCH --nodes\n"),
            "train.sbatch:2: field '#SBATCH --nodes': expected a value after --nodes");
  EXPECT_NE(error_of("#!/bin/bash\n#SBATCH --nodes=4-2\n").find("got '4-2'"), std::string::npos);
}

TEST(BatchScriptDirectives, WhatPrecedesAMalformedLineIsKept) {
  const auto d = read("#!/bin/bash\n#SBATCH --partition=gpu\n#SBATCH --nodes=x\n");
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.partition->value, "gpu");
}

}  // namespace
}  // namespace mirage::daemon
